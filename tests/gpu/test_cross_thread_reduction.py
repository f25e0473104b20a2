"""Cross-thread reductions: a reduction axis bound to threadIdx lowers to one kernel whose threads
accumulate strided shares privately and combine them as a tree in shared memory. Hand-written
schedules (every reduction kind, rows of threads on threadIdx.y, reductions shorter than the
block, serial reduction loops outside the bound one) and the default schedule's rows (softmax,
layer norm, long reductions) run under `cuda -emulate` against numpy, and pass ptxas."""

from __future__ import annotations

import numpy as np
import pytest
from test_shared_memory import CTX, EMULATED, needs_ptxas, run_emulated
from xdsl.dialects.builtin import f32

from nnvm.dialects.nnvm import nn, reduce
from nnvm.dialects.nnvm.base import tensor
from nnvm.lowering.gpu_to_llvm.convert_gpu_to_llvm import ConvertGpuToLLVM
from nnvm.lowering.te_to_gpu.lower_te_to_gpu import LowerTEToGpu
from nnvm.reference import run_reference
from nnvm.support.diagnostics import parse_module
from nnvm.support.ir_text import ir_text
from nnvm.targets.gpu.cuda.host_emulator import load_emulated, run_plan
from nnvm.targets.gpu.cuda.ptx import emit_ptx
from nnvm.targets.gpu.cuda.ptxas import run_ptxas
from nnvm.testing.op_modules import op_module

ROWS = """
func.func @r(%x: tensor<{n}x{m}xf32>) -> tensor<{n}xf32> {{
  %y = te.compute "y" [i] {kind} [k : {m}] = %x[i, k] : (tensor<{n}x{m}xf32>) -> tensor<{n}xf32>
  te.schedule {{
{schedule}
  }}
  func.return %y : tensor<{n}xf32>
}}
"""
NUMPY = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod}
ROW_PER_BLOCK = """    te.split "y" k by {t} -> (ko, ki)
    te.reorder "y" (i, ki, ko)
    te.bind "y" i to "blockIdx.x"
    te.bind "y" ki to "threadIdx.x\""""
ROWS_OF_THREADS = """    te.split "y" i by 4 -> (ib, it)
    te.split "y" k by {t} -> (ko, ki)
    te.reorder "y" (ib, it, ki, ko)
    te.bind "y" ib to "blockIdx.x"
    te.bind "y" it to "threadIdx.y"
    te.bind "y" ki to "threadIdx.x\""""
SERIAL_OUTSIDE = """    te.split "y" k by {t} -> (ko, ki)
    te.bind "y" i to "blockIdx.x"
    te.bind "y" ki to "threadIdx.x\""""


def _run(n: int, m: int, kind: str, schedule: str, t: int) -> tuple[np.ndarray, np.ndarray, str]:
    text = ROWS.format(n=n, m=m, kind=kind, schedule=schedule.format(t=t))
    module = parse_module(CTX, text, "r.mlir")
    LowerTEToGpu(outline_all=True).apply(CTX, module)
    lowered = ir_text(module)
    ConvertGpuToLLVM().apply(CTX, module)
    run = load_emulated(EMULATED.emit_kernel(module, "r"), "r")
    rng = np.random.default_rng(n * m)
    x = rng.uniform(0.5, 1.5, (n, m)).astype(np.float32)
    out = np.full((n,), np.nan, np.float32)
    run_plan(run, [x.ctypes.data, out.ctypes.data])
    return out, NUMPY[kind](x.astype(np.float64), axis=1), lowered


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize(
    ("n", "m", "t", "schedule"),
    [
        (3, 1000, 64, ROW_PER_BLOCK),  # 1000 = 15 * 64 + 40: the last step masked
        (2, 37, 64, ROW_PER_BLOCK),  # shorter than the block: most threads idle
        (5, 100, 24, ROW_PER_BLOCK),  # 24 threads: the tree's upper half incomplete
        (8, 130, 16, ROWS_OF_THREADS),  # 4 rows of 16 threads per block, a slot row each
        (3, 200, 32, SERIAL_OUTSIDE),  # a tree per step of the serial loop around it
    ],
    ids=["masked-tail", "short-row", "odd-threads", "rows-of-threads", "serial-outside"],
)
def test_hand_scheduled_cross_thread_reductions(n, m, t, schedule, kind) -> None:
    if kind == "prod":
        m = min(m, 40)  # keep the product finite
    out, want, lowered = _run(n, m, kind, schedule, t)
    kernel = lowered.split("func.func @r")[0]
    assert "3 : i64>" in kernel and '"gpu.barrier"' in kernel
    np.testing.assert_allclose(out, want, rtol=2e-5)


def test_the_tree_kernel_passes_ptxas_and_prints_for_opencl() -> None:
    from nnvm.targets.gpu.opencl.print_opencl_c import print_opencl_c

    text = ROWS.format(n=3, m=1000, kind="max", schedule=ROW_PER_BLOCK.format(t=128))
    module = parse_module(CTX, text, "r.mlir")
    LowerTEToGpu(outline_all=True).apply(CTX, module)
    gpu_module = next(o for o in module.ops if o.name == "gpu.module")
    code = print_opencl_c(gpu_module)
    assert "__local float" in code and code.count("barrier(") == 1 + 1 + 7


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_cross_thread_reductions_pass_ptxas(arch: str) -> None:
    text = ROWS.format(n=8, m=130, kind="sum", schedule=ROWS_OF_THREADS.format(t=16))
    module = parse_module(CTX, text, "r.mlir")
    LowerTEToGpu(outline_all=True).apply(CTX, module)
    ConvertGpuToLLVM().apply(CTX, module)
    ptx = emit_ptx(module, arch)
    assert ".shared" in ptx and "bar.sync" in ptx
    run_ptxas(ptx, arch)


@pytest.mark.parametrize(
    ("cls", "shapes", "props"),
    [
        (nn.SoftmaxOp, [(7, 1000)], {}),
        (nn.LayerNormOp, [(5, 768), (768,), (768,)], {}),
        (reduce.ReduceSumOp, [(2, 5001)], {"axes": (1,)}),
        (reduce.ReduceMaxOp, [(3, 7, 600)], {"axes": (1, 2)}),
        (reduce.ReduceMeanOp, [(600,)], {"axes": (0,)}),
    ],
    ids=["softmax", "layer_norm", "sum", "max-two-axes", "mean-to-scalar"],
)
def test_default_rows_reduce_in_one_kernel_per_reduction(cls, shapes, props) -> None:
    module = op_module(cls, [tensor(s, f32) for s in shapes], **props)
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = run_emulated(module, inputs)
    want = np.asarray(run_reference(module, None, inputs, function="k")[0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_cross_thread_slots_over_the_shared_limit_are_a_located_error() -> None:
    """The tree's slots count against the target's shared memory per block."""
    from nnvm.support.diagnostics import DiagnosticError
    from nnvm.targets.gpu.cuda.target import CudaTarget

    text = ROWS.format(n=3, m=1000, kind="sum", schedule=ROW_PER_BLOCK.format(t=64))
    module = parse_module(CTX, text, "r.mlir")
    small = CudaTarget(emulate=True, max_shared_bytes=128)
    with pytest.raises(DiagnosticError, match=r"reduction over 'ki' \(1x64 f32, 256 bytes\)"):
        LowerTEToGpu(outline_all=True, target=small).apply(CTX, module)
