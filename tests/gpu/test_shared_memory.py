"""Memory scopes on the GPU path: `te.cache_read ... scope "shared" | "local"` lowered by
lower-te-to-gpu (workgroup buffers filled by the block's threads between barriers, private
buffers), the default matmul / dense template with shared-memory tiles checked against the
reference executor under `cuda -emulate` (threads of a block as host threads) for odd and
batched shapes, its PTX accepted by ptxas (skipped without one), and the located errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from opencl_harness import random_inputs
from xdsl.dialects import func
from xdsl.dialects.builtin import f32

from nnvm.dialects.nnvm import nn
from nnvm.dialects.nnvm.base import tensor
from nnvm.dialects.te.schedule import CacheReadOp, ScheduleOp
from nnvm.lowering.gpu_to_llvm.convert_gpu_to_llvm import ConvertGpuToLLVM
from nnvm.lowering.te_to_gpu.lower_te_to_gpu import LowerTEToGpu
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.support.diagnostics import DiagnosticError, parse_module
from nnvm.support.errors import UserError
from nnvm.support.ir_text import ir_text
from nnvm.support.target import parse_target
from nnvm.targets.gpu.cuda.host_emulator import load_emulated, run_plan
from nnvm.targets.gpu.cuda.ptx import emit_ptx
from nnvm.targets.gpu.cuda.ptxas import find_ptxas, run_ptxas
from nnvm.targets.gpu.cuda.target import CudaTarget
from nnvm.targets.gpu.schedules import default_schedule
from nnvm.testing.op_modules import op_module

CTX = make_context()
EMULATED = CudaTarget(emulate=True)
needs_ptxas = pytest.mark.skipif(
    find_ptxas() is None, reason="no ptxas (PATH or pip install nvidia-cuda-nvcc)"
)

SHARED_CASES: list[tuple[type, list[tuple[int, ...]]]] = [
    (nn.MatmulOp, [(37, 45), (45, 97)]),  # M < 64 (one partial block row), K = 2 * 16 + 13
    (nn.MatmulOp, [(131, 24), (24, 45)]),  # 3 block rows, the last of 3 rows
    (nn.MatmulOp, [(70, 33), (33, 130)]),  # 2 x 3 blocks, tails on both axes
    (nn.DenseOp, [(33, 70), (40, 70)]),  # B read transposed: its tile is 64 x 16 of W
    (nn.BatchMatmulOp, [(3, 37, 19), (3, 19, 41)]),  # batch on blockIdx.z, K < 16
    (nn.BatchMatmulOp, [(2, 35, 33), (1, 33, 40)]),  # the right operand broadcast
    (nn.MatmulOp, [(2, 3, 35, 33), (2, 3, 33, 40)]),  # two batch axes fused on blockIdx.z
]


def _ids(case: Any) -> str:
    cls, shapes = case
    return f"{cls.name.removeprefix('nnvm.')}-{'.'.join('x'.join(map(str, s)) for s in shapes)}"


def lowered(module, target=EMULATED):
    m = module.clone()
    for p in target.kernel_passes():
        p.apply(CTX, m)
    return m


def run_emulated(module, inputs: list[np.ndarray]) -> np.ndarray:
    m = lowered(module)
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    out_t = fn.function_type.outputs.data[0]
    kernel = load_emulated(EMULATED.emit_kernel(m, "k"), "k")
    out = np.full(tuple(out_t.get_shape()), np.nan, np.float32)  # type: ignore[attr-defined]
    run_plan(kernel, [np.ascontiguousarray(x).ctypes.data for x in inputs] + [out.ctypes.data])
    return out


def schedule_of(module) -> ScheduleOp:
    m = module.clone()
    LowerToTE(target=EMULATED).apply(CTX, m)
    fn = next(o for o in m.ops if isinstance(o, func.FuncOp))
    return default_schedule(fn, EMULATED)


@pytest.mark.parametrize("case", SHARED_CASES, ids=_ids)
def test_shared_tile_matmuls_match_the_reference(case) -> None:
    cls, shapes = case
    module = op_module(cls, [tensor(s, f32) for s in shapes])
    scopes = [p.scope_name for p in schedule_of(module).primitives if isinstance(p, CacheReadOp)]
    assert scopes == ["shared", "shared"]  # both operands staged in shared memory
    # double-buffered: one barrier per step after both copies (the tiles alternate, so the
    # copy needs no barrier before it), and one at the first step only
    text = ir_text(lowered(module))
    assert text.count("llvm.nvvm.barrier0") == 2 and "llvm.urem" in text
    inputs = random_inputs(module, seed=5)
    want = np.asarray(run_reference(module, None, inputs, function="k")[0])
    np.testing.assert_allclose(run_emulated(module, inputs), want, rtol=1e-5, atol=1e-5)


def test_small_matmuls_keep_the_register_template_and_shared_can_be_turned_off() -> None:
    """M or N under 32 takes the register template; so does any matmul with the knob
    shared=False or the target option -tiles=registers (part of the target's description, so
    kernel caches tell them apart); a bad -tiles value is a UserError."""
    small = op_module(nn.MatmulOp, [tensor((37, 45), f32), tensor((45, 29), f32)])
    assert not any(isinstance(p, CacheReadOp) for p in schedule_of(small).primitives)
    big = op_module(nn.MatmulOp, [tensor((64, 64), f32), tensor((64, 64), f32)])
    m = big.clone()
    LowerToTE(target=EMULATED).apply(CTX, m)
    fn = next(o for o in m.ops if isinstance(o, func.FuncOp))
    assert any(isinstance(p, CacheReadOp) for p in default_schedule(fn, EMULATED).primitives)
    off = default_schedule(fn, EMULATED, shared=False)
    assert not any(isinstance(p, CacheReadOp) for p in off.primitives)
    for spec in ("cuda -arch=sm_90 -tiles=registers -emulate", "opencl -tiles=registers"):
        target = parse_target(spec)
        assert target.description == spec
        sched = target.default_schedule(fn)
        assert not any(isinstance(p, CacheReadOp) for p in sched.primitives)
    with pytest.raises(UserError, match="unknown -tiles=texture"):
        parse_target("opencl -tiles=texture")
    inputs = random_inputs(small, seed=1)
    np.testing.assert_allclose(
        run_emulated(small, inputs), inputs[0] @ inputs[1], rtol=1e-5, atol=1e-5
    )


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("case", SHARED_CASES[:1] + SHARED_CASES[3:5], ids=_ids)
def test_shared_tile_kernels_pass_ptxas(case, arch: str) -> None:
    cls, shapes = case
    module = op_module(cls, [tensor(s, f32) for s in shapes])
    ptx = emit_ptx(lowered(module, CudaTarget(arch=arch)), arch)
    assert ".shared .align" in ptx and "bar.sync" in ptx
    assert "ld.shared" in ptx and "st.shared" in ptx
    (res,) = run_ptxas(ptx, arch)
    assert 0 < res.shared_bytes <= 2 * 2 * 64 * 16 * 4 and res.spill_bytes == 0, res


MM = """
func.func @mm(%A: tensor<{m}x{k}xf32>, %B: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %C = te.compute "C" [i, j] sum [k : {k}] = %A[i, k] * %B[k, j] : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  te.schedule {{
    te.cache_write "C" -> "C.acc"
    te.split "C" i by {rows} -> (ib, ir)
    te.split "C" ir by 2 -> (it, iw)
    te.split "C" j by 16 -> (jb, jt)
    te.reorder "C" (ib, jb, it, jt, iw)
    te.bind "C" ib to "blockIdx.y"
    te.bind "C" jb to "blockIdx.x"
    te.bind "C" it to "threadIdx.y"
    te.compute_at "C.acc" at "C" it
    te.split "C.acc" k by {kstep} -> (ko, ki)
{order}
    te.cache_read "arg0" for ["C.acc"] -> "A.sh" scope "{scope}"
    te.compute_at "A.sh" at "C.acc" {at}
  }}
  func.return %C : tensor<{m}x{n}xf32>
}}
"""
GOOD = {"m": 37, "k": 45, "n": 29, "rows": 8, "kstep": 8, "scope": "shared", "at": "ko"}
GOOD["order"] = '    te.reorder "C.acc" (ko, ki, i, j)'
MASKED = [
    ('    te.split "C" ir by 2 -> (it, iw)\n', ""),
    ("(ib, jb, it, jt, iw)", "(ib, jb, ir, jt)"),
    ('"C" it to', '"C" ir to'),
    ('at "C" it', 'at "C" ir'),
]


def _lower(text: str, target: Any = None):
    module = parse_module(CTX, text, "mm.mlir")
    LowerTEToGpu(outline_all=True, target=target).apply(CTX, module)
    return module


def _check_mm(module, seed: int) -> None:
    """The lowered 37x45 . 45x29 product of MM, run emulated, against numpy."""
    run = load_emulated(EMULATED.emit_kernel(module, "mm"), "mm")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((37, 45)).astype(np.float32)
    b = rng.standard_normal((45, 29)).astype(np.float32)
    out = np.full((37, 29), np.nan, np.float32)
    run_plan(run, [a.ctypes.data, b.ctypes.data, out.ctypes.data])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_a_hand_scheduled_shared_tile_runs_and_prints_its_barriers() -> None:
    module = _lower(MM.format(**GOOD))
    text = ir_text(module)
    assert "memref<8x8xf32, 3 : i64>" in text  # the block's 8 rows x 8 k of A
    kernel = text.split("func.func @mm")[0]
    assert kernel.count('"gpu.barrier"') == 2
    ConvertGpuToLLVM().apply(CTX, module)
    assert "addr_space = 3" in ir_text(module)
    _check_mm(module, seed=2)


def test_a_double_buffered_shared_tile_alternates_its_two_halves() -> None:
    text = MM.format(**GOOD).replace(
        '    te.compute_at "A.sh" at "C.acc" ko\n',
        '    te.compute_at "A.sh" at "C.acc" ko\n    te.double_buffer "A.sh"\n',
    )
    module = _lower(text)
    lowered = ir_text(module)
    assert "memref<16x8xf32, 3 : i64>" in lowered  # two 8 x 8 tiles
    kernel = lowered.split("func.func @mm")[0]
    assert kernel.count('"gpu.barrier"') == 2  # after the copy, and before it at ko == 0 only
    assert "arith.remui %ko, %c2" in kernel
    ConvertGpuToLLVM().apply(CTX, module)
    _check_mm(module, seed=4)


def test_a_double_buffered_local_stage_is_a_located_error() -> None:
    text = MM.format(**{**GOOD, "scope": "local"}).replace(
        '    te.compute_at "A.sh" at "C.acc" ko\n',
        '    te.compute_at "A.sh" at "C.acc" ko\n    te.double_buffer "A.sh"\n',
    )
    with pytest.raises(DiagnosticError, match="the local stage 'A.sh' is a thread's private"):
        _lower(text)


def test_a_local_stage_is_a_private_buffer() -> None:
    module = _lower(MM.format(**{**GOOD, "scope": "local", "at": "ko"}))
    text = ir_text(module)
    assert "3 : i64" not in text and '"gpu.barrier"' not in text
    assert "%A.sh = memref.alloca() {alignment = 64 : i64} : memref<2x8xf32>" in text
    ConvertGpuToLLVM().apply(CTX, module)
    _check_mm(module, seed=3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # 512 rows x 64 k of f32: 128 KiB
        ({"m": 1024, "k": 64, "rows": 512, "kstep": 64}, "over the 49152 the target allows"),
        # C.acc's own row loop (its trip count differs per thread) around the copy
        ({"order": ""}, "barrier of the shared stage 'A.sh' is under a loop bound"),
        # threadIdx.y bound to the inner half of a split with a tail (37 = 4 * 8 + 5): masked
        ({"edit": MASKED}, "under the masked thread axis 'ir'"),
        ({"scope": "texture"}, "unknown memory scope 'texture'"),
    ],
)
def test_bad_shared_stages_are_located_errors(change: dict[str, Any], message: str) -> None:
    text = MM.format(**{**GOOD, **{k: v for k, v in change.items() if k != "edit"}})
    for old, new in change.get("edit", []):
        text = text.replace(old, new)
    with pytest.raises(DiagnosticError, match=message) as err:
        _lower(text)
    assert isinstance(err.value.op, CacheReadOp)
    assert str(err.value.op.location).startswith('loc("mm.mlir":')


OUTSIDE = """
func.func @f(%x: tensor<64x32xf32>) -> tensor<64xf32> {
  %y = te.compute "y" [i] sum [k : 32] = %x[i, k] : (tensor<64x32xf32>) -> tensor<64xf32>
  te.schedule {
    te.split "y" i by 16 -> (o, t)
    te.cache_read "arg0" for ["y"] -> "x.s" scope "SCOPE"
    te.compute_at "x.s" at "y" AT
    te.bind "y" t to "threadIdx.x"
  }
  func.return %y : tensor<64xf32>
}
"""


@pytest.mark.parametrize(
    ("scope", "at", "message"),
    [
        ("shared", "o", "no blockIdx-bound axis encloses"),
        ("local", "o", "no threadIdx-bound axis encloses"),
    ],
)
def test_scopes_outside_their_block_or_thread_are_located_errors(scope, at, message) -> None:
    text = OUTSIDE.replace("SCOPE", scope).replace("AT", at)
    with pytest.raises(DiagnosticError, match=message) as err:
        _lower(text)
    assert isinstance(err.value.op, CacheReadOp)


def test_a_shared_stage_at_the_root_and_an_undeclared_scope_are_located_errors() -> None:
    root = OUTSIDE.replace("SCOPE", "shared").replace('    te.compute_at "x.s" at "y" AT\n', "")
    with pytest.raises(DiagnosticError, match="must be computed at a loop under a blockIdx"):
        _lower(root)
    other = OUTSIDE.replace("SCOPE", "texture").replace("AT", "o")
    with pytest.raises(DiagnosticError, match="target 'cuda' has no memory scope 'texture'"):
        _lower(other, target="cuda -emulate")


def test_opencl_unrolls_the_step_loop_where_k_divides() -> None:
    """PoCL adds a barrier to each counted loop of a kernel with barriers: the opencl target
    unrolls a step's 16 k (where K divides into steps: a partial step would be 16 guarded
    copies); CUDA leaves the loop to its compiler."""
    from nnvm.targets.gpu.opencl.target import OpenCLTarget

    def unrolled(target: Any, k: int) -> bool:
        module = op_module(nn.MatmulOp, [tensor((64, k), f32), tensor((k, 64), f32)])
        m = module.clone()
        LowerToTE(target=target).apply(CTX, m)
        fn = next(o for o in m.ops if isinstance(o, func.FuncOp))
        return "k.i" in ir_text(target.default_schedule(fn)).split("te.unroll")[1]

    assert unrolled(OpenCLTarget(), 64)
    assert not unrolled(OpenCLTarget(), 40)
    assert not unrolled(EMULATED, 64)
