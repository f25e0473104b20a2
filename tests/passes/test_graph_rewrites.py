"""simplify-inference, fold-scale-axis and alter-layout keep the program's meaning.

Each test builds a small graph in textual IR with random params, runs the reference executor,
applies a pass, checks the IR still verifies, and runs the executor again: the outputs must agree
(rtol 1e-4). A hypothesis test does the same on random DAGs of conv2d, relu, add, per-channel
mul, bias_add and batch_norm (branches and shared uses included).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.passes.alter_layout import AlterLayoutPass
from nnvm.passes.fold_scale_axis import FoldScaleAxisPass
from nnvm.passes.simplify_inference import SimplifyInferencePass
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.support.ir import find_function

PASSES: dict[str, Callable[[], ModulePass]] = {
    "simplify-inference": SimplifyInferencePass,
    "fold-scale-axis": FoldScaleAxisPass,
    "alter-layout": AlterLayoutPass,
    "alter-layout-4": lambda: AlterLayoutPass(block=4),
}

CTX = make_context()


# ----------------------------------------------------------------------------------------------
# Harness
# ----------------------------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    module = Parser(CTX, text).parse_module()
    module.verify()
    return module


def random_params(scope: Operation, seed: int) -> dict[str, np.ndarray]:
    """Normal weights for the params in `scope` (a module or a function); params named var*
    get positive values (variances)."""
    rng = np.random.default_rng(seed)
    params: dict[str, np.ndarray] = {}
    for op in scope.walk():
        if isinstance(op, ParamOp) and op.key not in params:
            t = op.result.type
            assert isinstance(t, TensorType)
            shape = tuple(t.get_shape())
            if op.key.startswith("var"):
                value = rng.uniform(0.5, 1.5, shape)
            else:
                value = rng.normal(0.0, 0.5, shape)
            params[op.key] = value.astype(numpy_dtype_of(t.element_type))
    return params


def random_inputs(module: ModuleOp, seed: int, function: str = "main") -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 1)
    fn = find_function(module, function)
    out = []
    for t in fn.function_type.inputs.data:
        assert isinstance(t, TensorType)
        out.append(rng.normal(0.0, 1.0, tuple(t.get_shape())).astype(np.float32))
    return out


def check_pass(
    text: str, pass_name: str, seed: int = 0, functions: Sequence[str] = ("main",)
) -> ModuleOp:
    """Run `pass_name` on `text`; the outputs of `functions` before and after agree. Returns
    the new module."""
    before = parse(text)
    after = parse(text)
    PASSES[pass_name]().apply(CTX, after)
    after.verify()
    for function in functions:  # (lit files reuse param names across functions)
        params = random_params(find_function(before, function), seed)
        snapshot = {k: v.copy() for k, v in params.items()}
        inputs = random_inputs(before, seed, function)
        want = run_reference(before, params, inputs, function)
        got = run_reference(after, params, inputs, function)
        assert_same(got, want)
        assert params.keys() == snapshot.keys()  # the passes leave the params store alone
        assert all(np.array_equal(params[k], snapshot[k]) for k in params)
    return after


def assert_same(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        # rtol 1e-4 for f32; a few ulps for narrower floats (f16 rounds each graph op)
        rtol = max(1e-4, 4 * float(np.finfo(w.dtype).eps)) if w.dtype.kind == "f" else 0.0
        atol = rtol * max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nnvm.")]


def t(shape: Sequence[int]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


# ----------------------------------------------------------------------------------------------
# simplify-inference
# ----------------------------------------------------------------------------------------------

BN = """
func.func @main(%x: tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32> {
  %g = nnvm.param "g" : tensor<8xf32>
  %b = nnvm.param "b" : tensor<8xf32>
  %m = nnvm.param "m" : tensor<8xf32>
  %v = nnvm.param "var" : tensor<8xf32>
  %d = nnvm.dropout %x : (tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32>
  %y = nnvm.batch_norm %d, %g, %b, %m, %v {epsilon = 1.0e-03} : (tensor<2x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x5x5xf32>
  %i = nnvm.identity %y : (tensor<2x8x5x5xf32>) -> tensor<2x8x5x5xf32>
  func.return %i : tensor<2x8x5x5xf32>
}
"""

BN_LAST_AXIS = """
func.func @main(%x: tensor<3x6xf32>) -> tensor<3x6xf32> {
  %g = nnvm.param "g" : tensor<6xf32>
  %b = nnvm.param "b" : tensor<6xf32>
  %m = nnvm.param "m" : tensor<6xf32>
  %v = nnvm.param "var" : tensor<6xf32>
  %y = nnvm.batch_norm %x, %g, %b, %m, %v {axis = -1} : (tensor<3x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  func.return %y : tensor<3x6xf32>
}
"""

BN_AXIS_0 = BN_LAST_AXIS.replace("{axis = -1}", "{axis = 0}").replace("<6xf32>", "<3xf32>")

LAYER_NORM = """
func.func @main(%x: tensor<2x4x6xf32>) -> tensor<2x4x6xf32> {
  %g = nnvm.param "g" : tensor<6xf32>
  %b = nnvm.param "b" : tensor<6xf32>
  %y = nnvm.layer_norm %x, %g, %b : (tensor<2x4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  func.return %y : tensor<2x4x6xf32>
}
"""


@pytest.mark.parametrize("text", [BN, BN_LAST_AXIS, BN_AXIS_0], ids=["nchw", "last", "axis0"])
def test_simplify_inference_batch_norm(text: str) -> None:
    after = check_pass(text, "simplify-inference")
    names = op_names(after)
    assert "nnvm.batch_norm" not in names
    assert "nnvm.dropout" not in names and "nnvm.identity" not in names
    assert "nnvm.rsqrt" in names


def test_simplify_inference_leaves_layer_norm() -> None:
    after = check_pass(LAYER_NORM, "simplify-inference")
    assert "nnvm.layer_norm" in op_names(after)


def _pow(exponent: str, c_type: str = "tensor<f32>") -> str:
    return f"""
func.func @main(%x: tensor<3x7xf32>) -> tensor<3x7xf32> {{
  %c = nnvm.constant dense<{exponent}> : {c_type}
  %p = nnvm.pow %x, %c : (tensor<3x7xf32>, {c_type}) -> tensor<3x7xf32>
  func.return %p : tensor<3x7xf32>
}}"""


@pytest.mark.parametrize(
    "exponent,ops",
    [
        ("1.0", set()),
        ("2.0", {"nnvm.mul"}),
        ("3.0", {"nnvm.mul"}),
        ("4.0", {"nnvm.mul"}),
        ("0.5", {"nnvm.sqrt"}),
    ],
)
def test_simplify_inference_pow_by_small_constant(exponent: str, ops: set[str]) -> None:
    after = check_pass(_pow(exponent), "simplify-inference")
    names = set(op_names(after)) - {"nnvm.constant", "func.return"}
    assert names == ops
    ops_in_module = set(after.walk())
    for op in ops_in_module:  # no use left on an op built and dropped (it splits fusion)
        for result in op.results:
            assert all(use.operation in ops_in_module for use in result.uses)


@pytest.mark.parametrize(
    "text",
    [_pow("2.5"), _pow("[2.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0]", "tensor<7xf32>")],
    ids=["fractional", "mixed"],
)
def test_simplify_inference_leaves_other_powers(text: str) -> None:
    assert "nnvm.pow" in op_names(check_pass(text, "simplify-inference"))


# ----------------------------------------------------------------------------------------------
# fold-scale-axis
# ----------------------------------------------------------------------------------------------


def conv_scale(scale_shape: Sequence[int], *, bias: str = "", groups: int = 1) -> str:
    """conv2d [+ bias] then mul by a param of `scale_shape` (all 8 output channels)."""
    i = 8 // groups
    lines = [
        "func.func @main(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {",
        f'  %w = nnvm.param "w" : tensor<8x{i}x3x3xf32>',
        f'  %s = nnvm.param "s" : {t(scale_shape)}',
        f"  %c = nnvm.conv2d %x, %w {{padding = [1, 1, 1, 1], groups = {groups}}} : "
        f"(tensor<1x8x6x6xf32>, tensor<8x{i}x3x3xf32>) -> tensor<1x8x6x6xf32>",
    ]
    v = "%c"
    if bias == "bias_add":
        lines += [
            '  %b = nnvm.param "b" : tensor<8xf32>',
            "  %a = nnvm.bias_add %c, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> "
            "tensor<1x8x6x6xf32>",
        ]
        v = "%a"
    elif bias == "add":
        lines += [
            '  %b = nnvm.param "b" : tensor<8x1x1xf32>',
            "  %a = nnvm.add %b, %c : (tensor<8x1x1xf32>, tensor<1x8x6x6xf32>) -> "
            "tensor<1x8x6x6xf32>",
        ]
        v = "%a"
    lines += [
        f"  %y = nnvm.mul %s, {v} : ({t(scale_shape)}, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>",
        "  func.return %y : tensor<1x8x6x6xf32>",
        "}",
    ]
    return "\n".join(lines)


@pytest.mark.parametrize(
    "scale, bias, groups",
    [
        ([8, 1, 1], "", 1),
        ([1, 8, 1, 1], "", 2),
        ([1], "", 1),
        ([8, 1, 1], "bias_add", 1),
        ([1, 8, 1, 1], "add", 8),
    ],
)
def test_fold_scale_backward(scale: list[int], bias: str, groups: int) -> None:
    after = check_pass(conv_scale(scale, bias=bias, groups=groups), "fold-scale-axis")
    conv = next(op for op in after.walk() if op.name == "nnvm.conv2d")
    assert conv.operands[0].name_hint == "x"
    # the data path no longer multiplies: the only muls are on weights and bias
    for op in after.walk():
        if op.name == "nnvm.mul":
            assert conv.results[0] not in op.operands


@pytest.mark.parametrize("scale", [[1, 1, 6], [1, 8, 6, 6]])
def test_fold_scale_leaves_non_channel_scales(scale: list[int]) -> None:
    after = check_pass(conv_scale(scale), "fold-scale-axis")
    assert op_names(after).count("nnvm.mul") == 1


def test_fold_scale_leaves_runtime_scale_and_shared_values() -> None:
    runtime = (
        conv_scale([8, 1, 1])
        .replace(
            "func.func @main(%x: tensor<1x8x6x6xf32>)",
            "func.func @main(%x: tensor<1x8x6x6xf32>, %s: tensor<8x1x1xf32>)",
        )
        .replace('  %s = nnvm.param "s" : tensor<8x1x1xf32>\n', "")
    )
    assert op_names(check_pass(runtime, "fold-scale-axis")).count("nnvm.mul") == 1
    shared = conv_scale([8, 1, 1]).replace(
        "  func.return %y : tensor<1x8x6x6xf32>",
        "  %z = nnvm.add %y, %c : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> "
        "tensor<1x8x6x6xf32>\n  func.return %z : tensor<1x8x6x6xf32>",
    )
    assert op_names(check_pass(shared, "fold-scale-axis")).count("nnvm.mul") == 1


@pytest.mark.parametrize("groups, out", [(1, 8), (2, 8), (4, 8), (4, 4)])
def test_fold_scale_forward(groups: int, out: int) -> None:
    i = 4 // groups
    text = f"""
func.func @main(%x: tensor<1x4x6x6xf32>) -> tensor<1x{out}x5x5xf32> {{
  %w = nnvm.param "w" : tensor<{out}x{i}x3x3xf32>
  %s = nnvm.param "s" : tensor<4x1x1xf32>
  %m = nnvm.mul %x, %s : (tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %c = nnvm.conv2d %m, %w {{padding = [1, 0, 0, 1], groups = {groups}}} : (tensor<1x4x6x6xf32>, tensor<{out}x{i}x3x3xf32>) -> tensor<1x{out}x5x5xf32>
  func.return %c : tensor<1x{out}x5x5xf32>
}}
"""
    after = check_pass(text, "fold-scale-axis")
    conv = next(op for op in after.walk() if op.name == "nnvm.conv2d")
    assert conv.operands[0].name_hint == "x"


DENSE = """
func.func @main(%x: tensor<3x6xf32>) -> tensor<3x4xf32> {
  %w = nnvm.param "w" : tensor<4x6xf32>
  %b = nnvm.param "b" : tensor<4xf32>
  %s_in = nnvm.param "s_in" : tensor<6xf32>
  %s_out = nnvm.param "s_out" : tensor<1x4xf32>
  %m = nnvm.mul %x, %s_in : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %d = nnvm.dense %m, %w : (tensor<3x6xf32>, tensor<4x6xf32>) -> tensor<3x4xf32>
  %a = nnvm.bias_add %d, %b {axis = -1} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %y = nnvm.mul %a, %s_out : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
"""


def test_fold_scale_dense_both_directions() -> None:
    after = check_pass(DENSE, "fold-scale-axis")
    dense = next(op for op in after.walk() if op.name == "nnvm.dense")
    assert dense.operands[0].name_hint == "x"
    assert all(dense.results[0] not in op.operands for op in after.walk() if op.name == "nnvm.mul")


def test_batch_norm_folds_into_conv() -> None:
    """simplify-inference then fold-scale-axis: the batch-norm scale ends up in the weight."""
    text = conv_scale([8, 1, 1]).replace(
        "  %y = nnvm.mul %s, %c : (tensor<8x1x1xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>",
        '  %g = nnvm.param "g" : tensor<8xf32>\n  %b = nnvm.param "b" : tensor<8xf32>\n'
        '  %mu = nnvm.param "mu" : tensor<8xf32>\n  %v = nnvm.param "var" : tensor<8xf32>\n'
        "  %y = nnvm.batch_norm %c, %g, %b, %mu, %v : (tensor<1x8x6x6xf32>, tensor<8xf32>, "
        "tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>",
    )
    module = parse(text)
    params = random_params(module, 3)
    inputs = random_inputs(module, 3)
    want = run_reference(module, params, inputs)
    SimplifyInferencePass().apply(CTX, module)
    FoldScaleAxisPass().apply(CTX, module)
    module.verify()
    np.testing.assert_allclose(
        run_reference(module, params, inputs)[0], want[0], rtol=1e-4, atol=1e-4
    )
    conv = next(op for op in module.walk() if op.name == "nnvm.conv2d")
    (use,) = list(conv.results[0].uses)
    assert use.operation.name == "nnvm.add"  # conv -> add(shift): the scale is in the weight


# ----------------------------------------------------------------------------------------------
# alter-layout
# ----------------------------------------------------------------------------------------------

RESNET_BLOCK = """
func.func @main(%x: tensor<1x8x8x8xf32>) -> tensor<1x10xf32> {
  %w1 = nnvm.param "w1" : tensor<16x8x3x3xf32>
  %b1 = nnvm.param "b1" : tensor<16xf32>
  %w2 = nnvm.param "w2" : tensor<16x16x3x3xf32>
  %b2 = nnvm.param "b2" : tensor<16x1x1xf32>
  %wd = nnvm.param "wd" : tensor<10x16xf32>
  %c1 = nnvm.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x8x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a1 = nnvm.bias_add %c1, %b1 : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = nnvm.relu %a1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c2 = nnvm.conv2d %r1, %w2 {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a2 = nnvm.add %c2, %b2 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %sum = nnvm.add %a2, %r1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %r2 = nnvm.relu %sum : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = nnvm.max_pool2d %r2 {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %g = nnvm.global_avg_pool2d %p : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x1xf32>
  %f = nnvm.flatten %g : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
  %d = nnvm.dense %f, %wd : (tensor<1x16xf32>, tensor<10x16xf32>) -> tensor<1x10xf32>
  %o = nnvm.softmax %d : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %o : tensor<1x10xf32>
}
"""

DEPTHWISE_BLOCK = """
func.func @main(%x: tensor<1x16x7x7xf32>) -> (tensor<1x32x7x7xf32>, tensor<1x32x1x1xf32>) {
  %wd = nnvm.param "wd" : tensor<16x1x3x3xf32>
  %wp = nnvm.param "wp" : tensor<16x16x1x1xf32>
  %wm = nnvm.param "wm" : tensor<16x1x3x3xf32>
  %dw = nnvm.conv2d %x, %wd {padding = [1, 1, 1, 1], groups = 16} : (tensor<1x16x7x7xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32>
  %r = nnvm.clip %dw {min = 0.0, max = 6.0} : (tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %pw = nnvm.conv2d %r, %wp : (tensor<1x16x7x7xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x7x7xf32>
  %mw = nnvm.conv2d %x, %wm {padding = [1, 1, 1, 1], groups = 16} : (tensor<1x16x7x7xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32>
  %cat = nnvm.concat %pw, %mw {axis = 1} : (tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>) -> tensor<1x32x7x7xf32>
  %av = nnvm.avg_pool2d %cat {pool_size = [3, 3], padding = [1, 1, 1, 1]} : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
  %gm = nnvm.global_max_pool2d %cat : (tensor<1x32x7x7xf32>) -> tensor<1x32x1x1xf32>
  func.return %av, %gm : tensor<1x32x7x7xf32>, tensor<1x32x1x1xf32>
}
"""


def data_transforms(module: ModuleOp) -> list[tuple[str, str]]:
    """(src, dst) of the layout transforms on runtime data (not on params)."""
    out = []
    for op in module.walk():
        if op.name != "nnvm.layout_transform":
            continue
        source = op.operands[0].owner
        source_name = source.name if isinstance(source, Operation) else "argument"
        if source_name == "nnvm.param":
            continue
        src = op.attr("src_layout")  # type: ignore[attr-defined]
        if src == "NCHW" and source_name == "nnvm.reshape":
            continue  # a per-channel bias brought to the blocked layout
        out.append((src, op.attr("dst_layout")))  # type: ignore[attr-defined]
    return out


def test_alter_layout_resnet_block() -> None:
    after = check_pass(RESNET_BLOCK, "alter-layout")
    assert data_transforms(after) == [("NCHW", "NCHW8c"), ("NCHW8c", "NCHW")]
    layouts = {
        op.name: op.attr("layout")
        for op in after.walk()
        if op.name.endswith("pool2d")  # type: ignore[attr-defined]
    }
    assert layouts == {"nnvm.max_pool2d": "NCHW8c", "nnvm.global_avg_pool2d": "NCHW8c"}
    kernels = [op.attr("kernel_layout") for op in after.walk() if op.name == "nnvm.conv2d"]  # type: ignore[attr-defined]
    assert kernels == ["OIHW8i8o", "OIHW8i8o"]


def test_alter_layout_depthwise_block() -> None:
    after = check_pass(DEPTHWISE_BLOCK, "alter-layout")
    kernels = [op.attr("kernel_layout") for op in after.walk() if op.name == "nnvm.conv2d"]  # type: ignore[attr-defined]
    assert kernels == ["OIHW1i8o", "OIHW8i8o", "OIHW1i8o"]
    # one shared transform of the input (after cse: 2 equal ones) and one per returned value
    srcs = sorted(data_transforms(after))
    assert srcs == [("NCHW", "NCHW8c")] * 2 + [("NCHW8c", "NCHW")] * 2
    assert "nnvm.concat" in op_names(after)


def test_alter_layout_block_4_and_unblockable_convs() -> None:
    text = """
func.func @main(%x: tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32> {
  %w1 = nnvm.param "w1" : tensor<12x3x3x3xf32>
  %w2 = nnvm.param "w2" : tensor<10x12x1x1xf32>
  %w3 = nnvm.param "w3" : tensor<3x10x1x1xf32>
  %c1 = nnvm.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x3x6x6xf32>, tensor<12x3x3x3xf32>) -> tensor<1x12x6x6xf32>
  %c2 = nnvm.conv2d %c1, %w2 : (tensor<1x12x6x6xf32>, tensor<10x12x1x1xf32>) -> tensor<1x10x6x6xf32>
  %c3 = nnvm.conv2d %c2, %w3 : (tensor<1x10x6x6xf32>, tensor<3x10x1x1xf32>) -> tensor<1x3x6x6xf32>
  func.return %c3 : tensor<1x3x6x6xf32>
}
"""
    after = check_pass(text, "alter-layout-4")
    # the stem (C=3 < 4) reads NCHW and writes NCHW4c; O=10 is padded to 3 blocks of 4 (the
    # transform back to NCHW drops the padding); O=3, fewer than a block and not divisible,
    # runs as the matmul w[3, 10] . x[1, 10, 36]
    assert data_transforms(after) == [("NCHW4c", "NCHW")]
    convs = [op for op in after.walk() if op.name == "nnvm.conv2d"]  # type: ignore[attr-defined]
    assert [(c.attr("kernel_layout"), c.attr("out_layout")) for c in convs] == [
        ("OIHW3i4o", "NCHW4c"),
        ("OIHW4i4o", ""),
    ]
    assert [tuple(c.results[0].type.get_shape()) for c in convs][1] == (1, 3, 6, 6, 4)
    assert op_names(after).count("nnvm.matmul") == 1


def test_alter_layout_cancels_user_transforms() -> None:
    text = """
func.func @main(%x: tensor<1x8x2x2xf32>) -> tensor<1x8x2x2xf32> {
  %a = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW4c"} : (tensor<1x8x2x2xf32>) -> tensor<1x2x2x2x4xf32>
  %b = nnvm.layout_transform %a {src_layout = "NCHW4c", dst_layout = "NCHW2c"} : (tensor<1x2x2x2x4xf32>) -> tensor<1x4x2x2x2xf32>
  %c = nnvm.layout_transform %b {src_layout = "NCHW2c", dst_layout = "NCHW"} : (tensor<1x4x2x2x2xf32>) -> tensor<1x8x2x2xf32>
  func.return %c : tensor<1x8x2x2xf32>
}
"""
    after = check_pass(text, "alter-layout")
    assert "nnvm.layout_transform" not in op_names(after)


# ----------------------------------------------------------------------------------------------
# The lit tests' functions, run
# ----------------------------------------------------------------------------------------------

LIT = Path(__file__).resolve().parents[2] / "filecheck" / "passes"


@pytest.mark.parametrize("pass_name", ["simplify-inference", "fold-scale-axis", "alter-layout"])
def test_lit_inputs_keep_their_meaning(pass_name: str) -> None:
    """Every function of the pass's lit test computes the same before and after the pass."""
    text = (LIT / f"{pass_name}.mlir").read_text()
    functions = re.findall(r"^func\.func @(\w+)", text, flags=re.M)
    assert functions
    check_pass(text, pass_name, functions=functions)


# ----------------------------------------------------------------------------------------------
# Random DAGs
# ----------------------------------------------------------------------------------------------


class GraphBuilder:
    """Emits textual IR for a random DAG over NCHW values of spatial size 5x5."""

    def __init__(self, channels: int, batch: int) -> None:
        self.lines: list[str] = []
        self.values: list[tuple[str, int]] = [("%x", channels)]
        self.batch = batch
        self.count = 0
        self.header = f"%x: {self.ty(channels)}"

    def ty(self, c: int) -> str:
        return t([self.batch, c, 5, 5])

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def param(self, shape: Sequence[int], prefix: str = "p") -> str:
        name = self.fresh(prefix)
        self.lines.append(f'  %{name} = nnvm.param "{name}" : {t(shape)}')
        return f"%{name}"

    def emit(self, text: str, c: int) -> None:
        name = self.fresh("v")
        self.lines.append(f"  %{name} = {text}")
        self.values.append((f"%{name}", c))

    def step(self, kind: str, pick: int, pick2: int, choice: int) -> None:
        v, c = self.values[-1 - pick % len(self.values)]  # mostly recent values: chains
        if kind == "conv":
            depthwise = choice % 3 == 0
            # 12 and 20 channels: no 8-block divides them, so alter-layout pads them
            o = c if depthwise else (4, 8, 12, 16, 20)[choice % 5]
            groups = c if depthwise else (2 if choice % 2 and c % 2 == 0 and o % 2 == 0 else 1)
            k, pad = ((3, 1), (1, 0))[choice % 2]
            w = self.param([o, c // groups, k, k], "w")
            self.emit(
                f"nnvm.conv2d {v}, {w} {{padding = [{pad}, {pad}, {pad}, {pad}], groups = "
                f"{groups}}} : ({self.ty(c)}, {t([o, c // groups, k, k])}) -> {self.ty(o)}",
                o,
            )
        elif kind == "relu":
            self.emit(f"nnvm.relu {v} : ({self.ty(c)}) -> {self.ty(c)}", c)
        elif kind == "add":
            same = [u for u, cu in self.values if cu == c]
            u = same[pick2 % len(same)]
            self.emit(f"nnvm.add {v}, {u} : ({self.ty(c)}, {self.ty(c)}) -> {self.ty(c)}", c)
        elif kind == "scale":
            shape = ([c, 1, 1], [1, c, 1, 1], [1])[choice % 3]
            s = self.param(shape, "s")
            ops = (
                f"{v}, {s} : ({self.ty(c)}, {t(shape)})"
                if choice % 2
                else (f"{s}, {v} : ({t(shape)}, {self.ty(c)})")
            )
            op = "mul" if choice % 4 else "add"
            self.emit(f"nnvm.{op} {ops} -> {self.ty(c)}", c)
        elif kind == "bias":
            b = self.param([c], "b")
            self.emit(f"nnvm.bias_add {v}, {b} : ({self.ty(c)}, {t([c])}) -> {self.ty(c)}", c)
        elif kind == "bn":
            g, b, m = (self.param([c], p) for p in ("g", "b", "m"))
            var = self.param([c], "var")
            vec = t([c])
            self.emit(
                f"nnvm.batch_norm {v}, {g}, {b}, {m}, {var} : ({self.ty(c)}, {vec}, {vec}, "
                f"{vec}, {vec}) -> {self.ty(c)}",
                c,
            )

    def text(self, outputs: Sequence[int], pool: bool) -> str:
        results = [self.values[-1]] + [self.values[k % len(self.values)] for k in outputs]
        results = list(dict.fromkeys(results))
        lines = list(self.lines)
        rets: list[tuple[str, str]] = []
        for v, c in results:
            if pool:
                name = self.fresh("pool")
                lines.append(
                    f"  %{name} = nnvm.global_avg_pool2d {v} : ({self.ty(c)}) -> "
                    f"{t([self.batch, c, 1, 1])}"
                )
                rets.append((f"%{name}", t([self.batch, c, 1, 1])))
            else:
                rets.append((v, self.ty(c)))
        types = ", ".join(ty for _, ty in rets)
        sig = f"({types})" if len(rets) > 1 else types
        lines.append(f"  func.return {', '.join(v for v, _ in rets)} : {types}")
        return "\n".join([f"func.func @main({self.header}) -> {sig} {{", *lines, "}"])


KINDS = ["conv", "conv", "relu", "add", "scale", "scale", "bias", "bn"]


@st.composite
def random_graphs(draw: st.DrawFn) -> str:
    """A random DAG: mostly chains on the newest value (so conv -> scale, scale -> conv and
    bias/bn patterns are common), with some reads of older values (branches, shared uses)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    builder = GraphBuilder(int(rng.choice([4, 8, 12, 16])), int(rng.choice([1, 2])))
    kind = ""
    for _ in range(int(rng.integers(1, 11))):
        after_conv = kind == "conv" and rng.random() < 0.5
        kind = str(rng.choice(["scale", "bias", "bn"] if after_conv else KINDS))
        pick = int(rng.choice([0, 0, 0, 0, 0, 0, 1, 2]))
        builder.step(kind, pick, int(rng.integers(0, 50)), int(rng.integers(0, 12)))
    outputs = [int(rng.integers(0, 50))] if rng.random() < 0.3 else []
    return builder.text(outputs, bool(rng.random() < 0.5))


@settings(max_examples=30, deadline=None)
@given(text=random_graphs(), seed=st.integers(0, 2**16))
def test_random_graphs_keep_their_meaning(text: str, seed: int) -> None:
    for name in PASSES:
        check_pass(text, name, seed)
    # and the three in O3 order
    module = parse(text)
    params, inputs = random_params(module, seed), random_inputs(module, seed)
    want = run_reference(module, params, inputs)
    for p in (SimplifyInferencePass(), FoldScaleAxisPass(), AlterLayoutPass()):
        p.apply(CTX, module)
        module.verify()
    assert_same(run_reference(module, params, inputs), want)
    assert not re.search(r"nnvm\.batch_norm", str(module))
