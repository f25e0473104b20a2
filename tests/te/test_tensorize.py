"""te.tensorize: a loop nest replaced by a target's tensor intrinsic (the CPU's byte dot
product, vpdpbusd with VNNI, shifts and multiplies without). The tensorized kernels must give
numpy's int32 sums exactly, tails in rows included; a nest that is not the intrinsic's
pattern (another formula, another layout, other extents) is a located diagnostic."""

from __future__ import annotations

import numpy as np
import pytest
from harness import CTX, attach_schedule, parse, run_lowered

from nnvm.dialects.nnvm.nn import pack_dot_weight
from nnvm.dialects.te.intrinsics import NoMatch, index_value, stride_mismatch
from nnvm.lowering.te_to_loops.lower_te_to_loops import LowerTEToLoops
from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass
from nnvm.passes.hoist_loop_invariant_accesses import HoistLoopInvariantAccessesPass
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.target import parse_target
from nnvm.targets.cpu.target import host_features
from nnvm.targets.llvm import compile_jit

AVX2 = "llvm -mcpu=x86-64-v3"
VNNI = "llvm -mcpu=x86-64-v4 -mattr=+avx512vnni"  # lowering only: any x86 host can lower it
HOST_LANES = parse_target(None).vector_bits // 32


def dense_module(m: int, n: int, k: int, lanes: int) -> str:
    return f"""
func.func @k(%x: tensor<{m}x{k}xui8>, %w: tensor<{n // lanes}x{k // 4}x{lanes}x4xi8>) -> tensor<{m}x{n}xi32> {{
  %y = nnvm.dense %x, %w {{weight_lanes = {lanes}}} : (tensor<{m}x{k}xui8>, tensor<{n // lanes}x{k // 4}x{lanes}x4xi8>) -> tensor<{m}x{n}xi32>
  func.return %y : tensor<{m}x{n}xi32>
}}"""


def inputs(m: int, n: int, k: int, lanes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    x[0, :] = 255  # the extremes: 255 * -128 and 255 * 127 per product
    w[0, :] = -128
    want = x.astype(np.int64) @ w.astype(np.int64).T
    return [x, pack_dot_weight(w, lanes)], want.astype(np.int32)


def lowered(text: str, target: str | None = None, schedule: str | None = None):
    module = parse(text)
    LowerToTE().apply(CTX, module)
    if schedule is None:
        ApplyDefaultSchedulePass(target=target).apply(CTX, module)
    else:
        attach_schedule(module, schedule)
    LowerTEToLoops(target=target).apply(CTX, module)
    HoistLoopInvariantAccessesPass().apply(CTX, module)
    module.verify()
    return module


@pytest.mark.parametrize(
    "m,n,k", [(1, 16, 4), (7, 32, 12), (13, 64, 20), (6, 48, 256), (30, 128, 64)]
)
def test_tensorized_dense_is_exact(m, n, k):
    lanes = HOST_LANES  # the default schedule tensorizes when the packing has the host's lanes
    args, want = inputs(m, n, k, lanes)
    module = lowered(dense_module(m, n, k, lanes))
    text = str(module)
    assert "dot_u8i8" not in text  # the intrinsic's code, not a call of it
    assert ("llvm.x86" in text) == bool(host_features().get("avx512vnni"))
    (got,) = run_lowered(module, args)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("m,n,k", [(5, 16, 8), (9, 32, 36)])
def test_fallback_without_vnni_is_exact(m, n, k):
    """x86-64-v3 has no VNNI: 8-lane tiles of shifts and multiplies (same sums)."""
    lanes = 8
    args, want = inputs(m, n, k, lanes, seed=1)
    module = lowered(dense_module(m, n, k, lanes), target=AVX2)
    m2 = module.clone()
    ConvertToLLVM().apply(CTX, m2)
    jit = compile_jit(m2, AVX2)
    got = np.zeros(want.shape, np.int32)
    jit["k"](*args, got)
    np.testing.assert_array_equal(got, want)
    assert "vpdpbusd" not in jit.assembly()


@pytest.mark.skipif(not host_features().get("avx512vnni"), reason="host CPU has no AVX512-VNNI")
def test_vnni_host_uses_vpdpbusd():
    module = lowered(dense_module(6, 64, 32, 16))
    m2 = module.clone()
    ConvertToLLVM().apply(CTX, m2)
    assert "vpdpbusd" in compile_jit(m2).assembly()


SCHEDULE = """
te.split "dense" n by 16 -> (n.o, n.i)
te.split "dense" k by 4 -> (k.o, k.i)
te.reorder "dense" (i0, k.o, n.o, {inner})
te.tensorize "dense" {axis} with "{name}"
"""


def _error(text: str, schedule: str) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as info:
        lowered(text, target=VNNI, schedule=schedule)
    return info.value


def test_unknown_intrinsic_is_named():
    err = _error(
        dense_module(4, 16, 8, 16),
        SCHEDULE.format(inner="n.i, k.i", axis="n.i", name="mma_sync"),
    )
    assert "no intrinsic 'mma_sync'" in err.message and "dot_u8i8" in err.message
    assert err.op is not None and err.op.name == "te.tensorize"


def test_wrong_loop_order_is_a_mismatch():
    err = _error(
        dense_module(4, 16, 8, 16),
        SCHEDULE.format(inner="k.i, n.i", axis="k.i", name="dot_u8i8"),
    )
    assert "do not match 'dot_u8i8'" in err.message
    assert "4 (reduction) x 16" in err.message
    assert err.op is not None and err.op.name == "te.tensorize"


def test_unpacked_weight_is_a_layout_mismatch():
    """The same formula over w [N, K]: w's 16 lanes are K bytes apart, not 4."""
    text = """
func.func @k(%x: tensor<4x8xui8>, %w: tensor<16x8xi8>) -> tensor<4x16xi32> {
  %y = nnvm.dense %x, %w : (tensor<4x8xui8>, tensor<16x8xi8>) -> tensor<4x16xi32>
  func.return %y : tensor<4x16xi32>
}"""
    err = _error(text, SCHEDULE.format(inner="n.i, k.i", axis="n.i", name="dot_u8i8"))
    assert "operand 1" in err.message and "layout" in err.message


def test_other_formula_is_a_mismatch():
    """A float dense is not a byte dot product."""
    text = """
func.func @k(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %y = nnvm.dense %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}"""
    err = _error(text, SCHEDULE.format(inner="n.i, k.i", axis="n.i", name="dot_u8i8"))
    assert "do not match" in err.message and "f32" in err.message


def test_stride_mismatch_reports_the_position():
    def offset(outer, inner):
        j, q = inner
        return j * 4 + q if (j, q) != (3, 2) else 0

    why = stride_mismatch(offset, [4, 1], (16, 4), [(0,)])
    assert why is not None and "[3, 2]" in why
    assert stride_mismatch(lambda o, i: i[0] * 4 + i[1], [4, 1], (16, 4), [(0,)]) is None


def test_index_value_refuses_what_it_cannot_evaluate():
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType
    from xdsl.ir import Block

    b = Block(arg_types=[IndexType(), IndexType()])
    x, y = b.args
    s = arith.AddiOp(arith.MuliOp(x, arith.ConstantOp.from_int_and_width(4, IndexType())), y)
    b.add_ops([s.lhs.owner.rhs.owner, s.lhs.owner, s])
    assert index_value(s.result, {x: 3, y: 2}) == 14
    with pytest.raises(NoMatch):
        index_value(arith.MaxSIOp(x, y).result, {x: 1, y: 2})
