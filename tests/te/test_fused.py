"""Fused groups (outlined functions as the fuse pass makes them) become one kernel each:
injective producers are inlined, the anchor is computed at its epilogue's register tile, and
the kernel computes what the reference executor computes."""

from __future__ import annotations

import numpy as np
import pytest
from harness import CTX, check, lower, parse, random_inputs, run_lowered
from xdsl.dialects import func

from nnvm.dialects.te.schedule import ComputeAtOp, ComputeInlineOp, ScheduleOp
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass
from nnvm.reference import run_reference

CONV_ADD_RELU = """
func.func private @fused_conv2d_add_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = nnvm.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}
"""

CONV_NCHWC_BIAS_RELU = """
func.func private @fused_conv2d_bias_add_relu(%x: tensor<1x2x6x6x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %b: tensor<2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x6x6x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x2x6x6x8xf32>, tensor<2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32>
  %r = nnvm.relu %a : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x6x6x8xf32>
  func.return %r : tensor<1x2x6x6x8xf32>
}
"""

DENSE_BIAS_RELU = """
func.func private @fused_dense_bias_add_relu(%x: tensor<3x40xf32>, %w: tensor<10x40xf32>, %b: tensor<10xf32>) -> tensor<3x10xf32> {
  %d = nnvm.dense %x, %w : (tensor<3x40xf32>, tensor<10x40xf32>) -> tensor<3x10xf32>
  %a = nnvm.bias_add %d, %b {axis = 1} : (tensor<3x10xf32>, tensor<10xf32>) -> tensor<3x10xf32>
  %r = nnvm.relu %a : (tensor<3x10xf32>) -> tensor<3x10xf32>
  func.return %r : tensor<3x10xf32>
}
"""

MATMUL_ADD = """
func.func private @fused_matmul_add(%x: tensor<6x12xf32>, %y: tensor<12x20xf32>, %b: tensor<20xf32>) -> tensor<6x20xf32> {
  %m = nnvm.matmul %x, %y : (tensor<6x12xf32>, tensor<12x20xf32>) -> tensor<6x20xf32>
  %a = nnvm.add %m, %b : (tensor<6x20xf32>, tensor<20xf32>) -> tensor<6x20xf32>
  func.return %a : tensor<6x20xf32>
}
"""

CHAIN = """
func.func private @fused_add_mul_tanh_sub(%x: tensor<4x16xf32>, %y: tensor<16xf32>, %z: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %a = nnvm.add %x, %y : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %m = nnvm.mul %a, %z : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %t = nnvm.tanh %m : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = nnvm.sub %t, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %s : tensor<4x16xf32>
}
"""

EXP_SUM = """
func.func private @fused_exp_sum(%x: tensor<3x5x20xf32>) -> tensor<3x20xf32> {
  %e = nnvm.exp %x : (tensor<3x5x20xf32>) -> tensor<3x5x20xf32>
  %s = nnvm.sum %e {axes = [1]} : (tensor<3x5x20xf32>) -> tensor<3x20xf32>
  func.return %s : tensor<3x20xf32>
}
"""

NEG_MAX_ROWS = """
func.func private @fused_neg_max(%x: tensor<4x37xf32>) -> tensor<4xf32> {
  %n = nnvm.neg %x : (tensor<4x37xf32>) -> tensor<4x37xf32>
  %m = nnvm.max %n {axes = [1]} : (tensor<4x37xf32>) -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}
"""

ZERO_INSERTION = """
func.func private @fused_reshape_pad_reshape_pad(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x9x5xf32> {
  %r = nnvm.reshape %x {shape = [1, 1, 3, 1, 3, 1]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x1x3x1xf32>
  %p = nnvm.pad %r {pads = [0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1]} : (tensor<1x1x3x1x3x1xf32>) -> tensor<1x1x3x3x3x2xf32>
  %s = nnvm.reshape %p {shape = [1, 1, 9, 6]} : (tensor<1x1x3x3x3x2xf32>) -> tensor<1x1x9x6xf32>
  %q = nnvm.pad %s {pads = [0, 0, 1, 0, 0, 0, -1, -1]} : (tensor<1x1x9x6xf32>) -> tensor<1x1x9x5xf32>
  func.return %q : tensor<1x1x9x5xf32>
}
"""
"""ConvTranspose's zero insertion (ONNX test_convtranspose_pads): the vectorizer gives up inside
a lazy select and must erase the branches it had begun, not leave their ops using values."""

CONV_NCHWC_SHORT_ROWS = """
func.func private @fused_conv2d_relu(%x: tensor<1x4x5x5x8xf32>, %w: tensor<4x4x3x3x8x8xf32>) -> tensor<1x4x5x5x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x5x5x8xf32>, tensor<4x4x3x3x8x8xf32>) -> tensor<1x4x5x5x8xf32>
  %r = nnvm.relu %c : (tensor<1x4x5x5x8xf32>) -> tensor<1x4x5x5x8xf32>
  func.return %r : tensor<1x4x5x5x8xf32>
}
"""
"""Rows short enough for the whole-image schedule (input-channel blocks outermost)."""

MATMUL_GELU = """
func.func private @fused_matmul_add_gelu(%a: tensor<16x24xf32>, %w: tensor<24x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
  %c1 = nnvm.constant dense<1.0> : tensor<f32>
  %half = nnvm.constant dense<0.5> : tensor<f32>
  %sqrt2 = nnvm.constant dense<1.41421354> : tensor<f32>
  %m = nnvm.matmul %a, %w : (tensor<16x24xf32>, tensor<24x64xf32>) -> tensor<16x64xf32>
  %x = nnvm.add %m, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %d = nnvm.div %x, %sqrt2 : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32>
  %e = nnvm.erf %d : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %p = nnvm.add %e, %c1 : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32>
  %q = nnvm.mul %x, %p : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %g = nnvm.mul %q, %half : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32>
  func.return %g : tensor<16x64xf32>
}
"""
"""A diamond epilogue: the biased product is read twice and inlined into both readers."""

CONV_NCHWC_MIXED_BLOCKS = """
func.func private @fused_conv2d_relu(%x: tensor<1x2x6x6x8xf32>, %w: tensor<3x2x3x3x8x4xf32>) -> tensor<1x3x6x6x4xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i4o", out_layout = "NCHW4c"} : (tensor<1x2x6x6x8xf32>, tensor<3x2x3x3x8x4xf32>) -> tensor<1x3x6x6x4xf32>
  %r = nnvm.relu %c : (tensor<1x3x6x6x4xf32>) -> tensor<1x3x6x6x4xf32>
  func.return %r : tensor<1x3x6x6x4xf32>
}
"""
"""Input and output channels blocked differently (16 channels by 8 in, 12 by 4 out)."""

DENSE_GEMV = """
func.func private @fused_dense_bias_add(%x: tensor<1x100xf32>, %w: tensor<24x100xf32>, %b: tensor<24xf32>) -> tensor<1x24xf32> {
  %d = nnvm.dense %x, %w : (tensor<1x100xf32>, tensor<24x100xf32>) -> tensor<1x24xf32>
  %a = nnvm.bias_add %d, %b {axis = 1} : (tensor<1x24xf32>, tensor<24xf32>) -> tensor<1x24xf32>
  func.return %a : tensor<1x24xf32>
}
"""
"""A GEMV: eight outputs' partial sums interleaved, k not a multiple of the vector width."""

MATMUL_PANELS = """
func.func private @fused_matmul_add(%x: tensor<2x40x48xf32>, %w: tensor<2x48x32xf32>, %b: tensor<64xf32>) -> tensor<2x40x64xf32> {
  %m = nnvm.matmul %x, %w {rhs_panel = 32} : (tensor<2x40x48xf32>, tensor<2x48x32xf32>) -> tensor<2x40x64xf32>
  %a = nnvm.add %m, %b : (tensor<2x40x64xf32>, tensor<64xf32>) -> tensor<2x40x64xf32>
  func.return %a : tensor<2x40x64xf32>
}
"""
"""A batched matmul by a weight pre-packed into column panels, with its bias."""

CASES = {
    "conv2d_add_relu": CONV_ADD_RELU,
    "matmul_panels": MATMUL_PANELS,
    "dense_gemv": DENSE_GEMV,
    "conv2d_nchwc_mixed_blocks": CONV_NCHWC_MIXED_BLOCKS,
    "matmul_gelu": MATMUL_GELU,
    "conv2d_nchw8c_short_rows": CONV_NCHWC_SHORT_ROWS,
    "zero_insertion": ZERO_INSERTION,
    "conv2d_nchw8c_bias_relu": CONV_NCHWC_BIAS_RELU,
    "dense_bias_relu": DENSE_BIAS_RELU,
    "matmul_add": MATMUL_ADD,
    "elementwise_chain": CHAIN,
    "exp_sum": EXP_SUM,
    "neg_max_rows": NEG_MAX_ROWS,
}


def _name(module: object) -> str:
    return next(o.sym_name.data for o in module.ops if isinstance(o, func.FuncOp))  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", list(CASES))
def test_fused_group(case: str) -> None:
    module = parse(CASES[case])
    check(module, name=_name(module), atol=1e-4)


def test_fused_group_is_one_kernel_with_inlined_epilogue() -> None:
    module = parse(CONV_ADD_RELU)
    LowerToTE().apply(CTX, module)
    ApplyDefaultSchedulePass().apply(CTX, module)
    sched = next(o for o in module.walk() if isinstance(o, ScheduleOp))
    inlined = {p.stage_name for p in sched.primitives if isinstance(p, ComputeInlineOp)}
    attached = {
        (p.stage_name, p.target.data) for p in sched.primitives if isinstance(p, ComputeAtOp)
    }
    assert inlined == {"add"}
    assert ("conv2d", "relu") in attached


def test_graph_calls_become_destination_passing() -> None:
    """main's call to a lowered kernel passes output buffers; the whole module still runs."""
    text = (
        CHAIN
        + """
func.func @main(%x: tensor<4x16xf32>, %y: tensor<16xf32>, %z: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %r = func.call @fused_add_mul_tanh_sub(%x, %y, %z) : (tensor<4x16xf32>, tensor<16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  func.return %r : tensor<4x16xf32>
}
"""
    )
    module = parse(text)
    inputs = random_inputs(module, "main")
    want = run_reference(module, {}, inputs)
    lowered = lower(module)
    from kernel_runner import make_interpreter

    got = make_interpreter(lowered).call_op("main", tuple(inputs))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    kernel = next(
        o for o in lowered.ops if isinstance(o, func.FuncOp) and o.sym_name.data.startswith("fused")
    )
    assert len(kernel.function_type.inputs.data) == 4 and not kernel.function_type.outputs.data
    assert run_lowered(lowered, inputs, kernel.sym_name.data)[0].shape == (4, 16)


GRAPH = """
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %b = nnvm.param "b" : tensor<4xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = nnvm.bias_add %c, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %r = nnvm.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = nnvm.max_pool2d %r {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %f = nnvm.flatten %p : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %wd = nnvm.param "wd" : tensor<10x64xf32>
  %d = nnvm.dense %f, %wd : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  %s = nnvm.softmax %d : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %s : tensor<1x10xf32>
}
"""


def test_fuse_pass_output_end_to_end() -> None:
    """The fuse pass's groups, lowered kernel by kernel, compute the whole graph (main runs
    in the interpreter, with the params as the values of nnvm.param)."""
    fuse = pytest.importorskip("nnvm.passes.fuse")
    from kernel_runner import make_interpreter
    from xdsl.interpreter import InterpreterFunctions, impl, register_impls

    from nnvm.dialects.nnvm.sources import ParamOp

    module = parse(GRAPH)
    rng = np.random.default_rng(0)
    params = {
        "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
        "wd": rng.standard_normal((10, 64)).astype(np.float32),
    }
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = run_reference(module, params, [x])
    fuse.FuseOpsPass().apply(CTX, module)
    lowered = lower(module)

    @register_impls
    class Params(InterpreterFunctions):
        @impl(ParamOp)
        def run_param(self, interp: object, op: ParamOp, args: tuple) -> tuple:
            return (params[op.key],)

    interp = make_interpreter(lowered)
    interp.register_implementations(Params())
    got = interp.call_op("main", (x,))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-6)
    kernels = [o for o in lowered.ops if isinstance(o, func.FuncOp) and o is not None]
    assert sum(1 for k in kernels if k.sym_name.data.startswith("fused_")) == 5
