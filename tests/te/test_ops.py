"""Every graph op, through its te definition, the default schedule and the loop lowering,
computes what the reference executor computes (small shapes, CPU JIT)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check, op_module, random_inputs
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import f16, f32, f64, i1, i32, i64

from nnvm.dialects.nnvm import (
    binary,
    concat_split,
    conv,
    elementwise,
    indexing,
    nn,
    pad,
    passthrough,
    permute,
    pooling,
    reduce,
    repeat,
    reshape,
    resize,
    scan,
)
from nnvm.dialects.nnvm import rnn as nn_rnn
from nnvm.dialects.nnvm.base import tensor
from nnvm.dialects.nnvm.sources import ConstantOp

F = f32


def t(shape: tuple[int, ...], elt: Any = F) -> Any:
    return tensor(shape, elt)


S = (2, 3, 5)

UNARY: list[tuple[type, dict[str, Any], Any, bool]] = [
    (elementwise.ReluOp, {}, F, False),
    (elementwise.ReluOp, {}, i32, False),
    (elementwise.LeakyReluOp, {"alpha": 0.2}, F, False),
    (elementwise.ClipOp, {"min": -0.5, "max": 0.7}, F, False),
    (elementwise.ClipOp, {"min": -3.0}, i32, False),
    (elementwise.SigmoidOp, {}, F, False),
    (elementwise.HardSigmoidOp, {}, F, False),
    (elementwise.HardSwishOp, {}, F, False),
    (elementwise.TanhOp, {}, F, False),
    (elementwise.ErfOp, {}, F, False),
    (elementwise.GeluOp, {}, F, False),
    (elementwise.GeluOp, {"approximate": "tanh"}, F, False),
    (elementwise.ExpOp, {}, F, False),
    (elementwise.LogOp, {}, F, True),
    (elementwise.SqrtOp, {}, F, True),
    (elementwise.RsqrtOp, {}, F, True),
    (elementwise.ReciprocalOp, {}, F, True),
    (elementwise.NegOp, {}, F, False),
    (elementwise.NegOp, {}, i32, False),
    (elementwise.AbsOp, {}, F, False),
    (elementwise.AbsOp, {}, i64, False),
    (elementwise.FloorOp, {}, F, False),
    (elementwise.CeilOp, {}, F, False),
    (elementwise.RoundOp, {}, F, False),
    (elementwise.LogicalNotOp, {}, i1, False),
    (elementwise.IsNaNOp, {}, F, False),
    (elementwise.CastOp, {"to": "int32"}, F, False),
    (elementwise.CastOp, {"to": "float32"}, i32, False),
    (elementwise.CastOp, {"to": "bool"}, F, False),
    (elementwise.CastOp, {"to": "float64"}, F, False),
]


@pytest.mark.parametrize(
    ("cls", "props", "elt", "positive"), UNARY, ids=lambda v: getattr(v, "name", None)
)
def test_unary(cls: type, props: dict[str, Any], elt: Any, positive: bool) -> None:
    m = op_module(cls, [t(S, elt)], **props)
    inputs = random_inputs(m, positive=positive)
    if cls is elementwise.RoundOp:
        inputs = [np.array([[[0.5, 1.5, 2.5, -0.5, -1.5]] * 3] * 2, np.float32)]
    if cls is elementwise.IsNaNOp:
        inputs[0][0, 0, :2] = np.nan
    check(m, inputs, rtol=2e-4, atol=2e-5)


BINARY: list[tuple[type, dict[str, Any], Any, tuple[int, ...], bool]] = [
    (binary.AddOp, {}, F, (3, 1), False),
    (binary.SubOp, {}, F, (5,), False),
    (binary.MulOp, {}, i32, (2, 1, 5), False),
    (binary.DivOp, {}, F, (3, 1), True),
    (binary.DivOp, {}, i32, S, True),
    (binary.PowOp, {}, F, (5,), True),
    (binary.MaximumOp, {}, F, S, False),
    (binary.MinimumOp, {}, i32, (1,), False),
    (binary.ModOp, {}, F, S, True),
    (binary.ModOp, {"fmod": True}, F, S, True),
    (binary.ModOp, {}, i32, S, False),
    (binary.ModOp, {"fmod": True}, i32, S, False),
    (binary.EqualOp, {}, i32, S, False),
    (binary.NotEqualOp, {}, F, S, False),
    (binary.LessOp, {}, F, (3, 1), False),
    (binary.LessEqualOp, {}, i32, S, False),
    (binary.GreaterOp, {}, F, S, False),
    (binary.GreaterEqualOp, {}, F, S, False),
    (binary.LogicalAndOp, {}, i1, S, False),
    (binary.LogicalOrOp, {}, i1, (5,), False),
    (binary.LogicalXorOp, {}, i1, S, False),
]


@pytest.mark.parametrize(
    ("cls", "props", "elt", "rhs", "positive"), BINARY, ids=lambda v: getattr(v, "name", None)
)
def test_binary(
    cls: type, props: dict[str, Any], elt: Any, rhs: tuple[int, ...], positive: bool
) -> None:
    m = op_module(cls, [t(S, elt), t(rhs, elt)], **props)
    inputs = random_inputs(m, positive=positive)
    if cls is binary.ModOp and elt == i32:
        inputs[1] = np.where(inputs[1] == 0, 3, inputs[1]).astype(np.int32)
    check(m, inputs)


def test_where_and_add_n() -> None:
    check(op_module(binary.WhereOp, [t((3, 1), i1), t(S), t((5,))]))
    check(op_module(binary.AddNOp, [t(S), t((3, 5)), t(S)]))


CONV: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((1, 3, 8, 8), (4, 3, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((2, 4, 9, 9), (8, 4, 3, 3), {"strides": (2, 2), "padding": (1, 0, 1, 0)}),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "padding": (1, 1, 1, 1)}),
    ((1, 4, 6, 6), (4, 2, 3, 3), {"groups": 2}),
    ((1, 3, 5, 5), (4, 3, 2, 2), {"dilation": (2, 2)}),
    (
        (1, 2, 7, 7, 8),
        (2, 2, 3, 3, 8, 8),
        {"padding": (1, 1, 1, 1), "data_layout": "NCHW8c", "kernel_layout": "OIHW8i8o"},
    ),
    (
        (1, 2, 5, 5, 4),
        (3, 2, 1, 1, 4, 4),
        {"strides": (2, 2), "data_layout": "NCHW4c", "kernel_layout": "OIHW4i4o"},
    ),
    (
        (1, 2, 7, 7, 4),
        (2, 8, 3, 3, 4),
        {"padding": (1, 1, 1, 1), "data_layout": "NCHW4c", "kernel_layout": "OIHW4o"},
    ),
    (  # depthwise, blocked
        (1, 2, 7, 7, 4),
        (2, 1, 3, 3, 1, 4),
        {
            "strides": (2, 2),
            "padding": (1, 1, 1, 1),
            "groups": 8,
            "data_layout": "NCHW4c",
            "kernel_layout": "OIHW1i4o",
        },
    ),
    (  # depthwise, stride 1: its padded input computed per output tile (pad_at)
        (1, 1, 9, 9, 8),
        (1, 1, 3, 3, 1, 8),
        {
            "padding": (1, 1, 1, 1),
            "groups": 8,
            "data_layout": "NCHW8c",
            "kernel_layout": "OIHW1i8o",
        },
    ),
    (  # a stem: NCHW in, NCHW<b>c out
        (1, 3, 9, 9),
        (2, 1, 3, 3, 3, 8),
        {
            "strides": (2, 2),
            "padding": (1, 1, 1, 1),
            "kernel_layout": "OIHW3i8o",
            "out_layout": "NCHW8c",
        },
    ),
    (  # another layout pair with out_layout: the generic formula
        (1, 3, 5, 5),
        (8, 3, 3, 3),
        {"padding": (1, 1, 1, 1), "out_layout": "NCHW4c"},
    ),
]


@pytest.mark.parametrize(("x", "w", "props"), CONV)
def test_conv2d(x: tuple[int, ...], w: tuple[int, ...], props: dict[str, Any]) -> None:
    check(op_module(conv.Conv2DOp, [t(x), t(w)], **props), rtol=1e-4, atol=1e-4)


NN: list[tuple[type, list[tuple[int, ...]], dict[str, Any]]] = [
    (nn.DenseOp, [(3, 20), (5, 20)], {}),
    (nn.DenseOp, [(2, 3, 7), (4, 7)], {}),
    (nn.MatmulOp, [(5, 6), (6, 9)], {}),
    (nn.MatmulOp, [(2, 1, 3, 4), (3, 4, 18)], {}),
    (nn.MatmulOp, [(4,), (2, 4, 3)], {}),
    (nn.MatmulOp, [(3, 4), (4,)], {}),
    (nn.BatchMatmulOp, [(2, 3, 4), (1, 4, 5)], {}),
    (nn.BatchMatmulOp, [(2, 4, 3), (2, 5, 4)], {"transpose_a": True, "transpose_b": True}),
    (nn.BiasAddOp, [(2, 3, 4, 4), (3,)], {}),
    (nn.SoftmaxOp, [(3, 20)], {}),
    (nn.SoftmaxOp, [(2, 4, 3)], {"axis": 1}),
    (nn.LogSoftmaxOp, [(3, 7)], {}),
    (nn.BatchNormOp, [(2, 3, 4, 4), (3,), (3,), (3,), (3,)], {}),
    (nn.LayerNormOp, [(2, 3, 8), (8,), (8,)], {}),
    (nn.LayerNormOp, [(2, 3, 4), (3, 4), (4,)], {"axis": 1}),
    (nn.InstanceNormOp, [(2, 3, 4, 5), (3,), (3,)], {}),
    (nn.LRNOp, [(1, 5, 3, 3)], {"size": 3}),
    (nn.PReluOp, [(2, 3, 4), (3, 1)], {}),
]


@pytest.mark.parametrize(("cls", "shapes", "props"), NN, ids=lambda v: getattr(v, "name", None))
def test_nn(cls: type, shapes: list[tuple[int, ...]], props: dict[str, Any]) -> None:
    m = op_module(cls, [t(s) for s in shapes], **props)
    inputs = random_inputs(m)
    if cls is nn.BatchNormOp:
        inputs[4] = np.abs(inputs[4]) + 0.5
    check(m, inputs, rtol=1e-4, atol=1e-4)


POOL: list[tuple[type, tuple[int, ...], dict[str, Any]]] = [
    (
        pooling.MaxPool2DOp,
        (1, 2, 7, 7),
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    (
        pooling.MaxPool2DOp,
        (1, 2, 6, 6),
        {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True, "padding": (0, 0, 1, 1)},
    ),
    (pooling.MaxPool2DOp, (1, 2, 7, 7), {"pool_size": (2, 2), "dilation": (2, 2)}),
    (
        pooling.MaxPool2DOp,
        (1, 2, 5, 5, 8),
        {"pool_size": (3, 3), "padding": (1, 1, 1, 1), "layout": "NCHW8c"},
    ),
    (
        pooling.AvgPool2DOp,
        (1, 2, 7, 7),
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    (
        pooling.AvgPool2DOp,
        (1, 2, 7, 7),
        {
            "pool_size": (3, 3),
            "strides": (2, 2),
            "padding": (1, 1, 1, 1),
            "count_include_pad": True,
        },
    ),
    (
        pooling.AvgPool2DOp,
        (1, 2, 6, 6),
        {"pool_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
    ),
    (
        pooling.AvgPool2DOp,
        (1, 1, 7, 7),
        {"pool_size": (2, 2), "dilation": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    (
        pooling.AvgPool2DOp,
        (1, 2, 4, 4, 4),
        {"pool_size": (2, 2), "strides": (2, 2), "layout": "NCHW4c"},
    ),
    (pooling.GlobalAvgPool2DOp, (2, 3, 5, 4), {}),
    (pooling.GlobalMaxPool2DOp, (1, 2, 3, 3, 8), {"layout": "NCHW8c"}),
]


@pytest.mark.parametrize(("cls", "shape", "props"), POOL, ids=lambda v: getattr(v, "name", None))
def test_pooling(cls: type, shape: tuple[int, ...], props: dict[str, Any]) -> None:
    check(op_module(cls, [t(shape)], **props))


REDUCE: list[tuple[type, dict[str, Any], Any]] = [
    (reduce.ReduceSumOp, {"axes": (1,)}, F),
    (reduce.ReduceSumOp, {"axes": (0, 2), "keepdims": True}, F),
    (reduce.ReduceSumOp, {"axes": (-1,)}, i32),
    (reduce.ReduceSumOp, {"axes": ()}, F),
    (reduce.ReduceMeanOp, {"axes": (2,)}, F),
    (reduce.ReduceMeanOp, {"axes": (0, 1, 2)}, F),
    (reduce.ReduceMeanOp, {"axes": (1,)}, i32),
    (reduce.ReduceMaxOp, {"axes": (1, 2)}, F),
    (reduce.ReduceMinOp, {"axes": (0,), "keepdims": True}, i32),
    (reduce.ReduceProdOp, {"axes": (2,)}, F),
    (reduce.ArgMaxOp, {"axis": 2}, F),
    (reduce.ArgMaxOp, {"axis": 1, "keepdims": False}, F),
    (reduce.ArgMinOp, {"axis": 0, "select_last_index": True}, i32),
]


@pytest.mark.parametrize(("cls", "props", "elt"), REDUCE, ids=lambda v: getattr(v, "name", None))
def test_reduce(cls: type, props: dict[str, Any], elt: Any) -> None:
    check(op_module(cls, [t((3, 4, 20), elt)], **props), rtol=1e-4, atol=1e-4)


TRANSFORM: list[tuple[type, list[tuple[int, ...]], dict[str, Any]]] = [
    (reshape.ReshapeOp, [(2, 3, 4)], {"shape": (4, 6)}),
    (reshape.ReshapeOp, [(2, 1, 3)], {"shape": (2, 3, 1)}),
    (reshape.ReshapeOp, [(1, 12, 5, 3)], {"shape": (1, 2, 6, 5, 3)}),  # channel shuffle
    (reshape.ReshapeOp, [(1, 6, 2, 5, 3)], {"shape": (1, 12, 5, 3)}),
    (reshape.ReshapeOp, [(4, 6, 5)], {"shape": (3, 8, 5)}),  # runs that split and merge
    (reshape.ReshapeOp, [(2, 3, 4, 5)], {"shape": (6, 1, 20)}),
    (reshape.FlattenOp, [(2, 3, 4)], {"axis": 2}),
    (reshape.SqueezeOp, [(2, 1, 3, 1)], {"axes": (1, 3)}),
    (reshape.ExpandDimsOp, [(2, 3)], {"axes": (0, 2)}),
    (permute.TransposeOp, [(2, 3, 4)], {"perm": (2, 0, 1)}),
    (permute.LayoutTransformOp, [(1, 16, 3, 3)], {"src_layout": "NCHW", "dst_layout": "NCHW8c"}),
    (
        permute.LayoutTransformOp,
        [(1, 2, 3, 3, 8)],
        {"src_layout": "NCHW8c", "dst_layout": "NCHW4c"},
    ),
    (  # vectors of the source's 4-lane block, not 8 (see _block_lanes)
        permute.LayoutTransformOp,
        [(1, 4, 3, 3, 4)],
        {"src_layout": "NCHW4c", "dst_layout": "NCHW8c"},
    ),
    (permute.DepthToSpaceOp, [(1, 8, 2, 3)], {"blocksize": 2}),
    (permute.DepthToSpaceOp, [(1, 8, 2, 3)], {"blocksize": 2, "mode": "CRD"}),
    (permute.SpaceToDepthOp, [(1, 2, 4, 6)], {"blocksize": 2}),
    (permute.SpaceToDepthOp, [(1, 2, 4, 6)], {"blocksize": 2, "mode": "CRD"}),
    (concat_split.ConcatOp, [(2, 3), (2, 1), (2, 4)], {"axis": 1}),
    (
        indexing.SliceOp,
        [(5, 6)],
        {"starts": (1, -1), "ends": (4, 0), "axes": (0, 1), "steps": (2, -2)},
    ),
    (repeat.BroadcastToOp, [(3, 1)], {"shape": (2, 3, 4)}),
    (repeat.TileOp, [(2, 3)], {"repeats": (2, 3)}),
    (pad.PadOp, [(3, 4)], {"pads": (1, 2, 0, 1), "value": 1.5}),
    (pad.PadOp, [(3, 4)], {"pads": (2, 1, 1, 3), "mode": "reflect"}),
    (pad.PadOp, [(3, 4)], {"pads": (1, 2, 2, 1), "mode": "edge"}),
    (pad.PadOp, [(3, 4)], {"pads": (4, 1, 2, 5), "mode": "wrap"}),
    (pad.PadOp, [(4, 5)], {"pads": (-1, 2, 1, -2)}),
    (passthrough.IdentityOp, [(2, 3)], {}),
    (passthrough.DropoutOp, [(2, 3)], {}),
    (scan.CumSumOp, [(3, 5)], {"axis": 1}),
    (scan.CumSumOp, [(3, 5)], {"axis": 0, "exclusive": True, "reverse": True}),
]


@pytest.mark.parametrize(
    ("cls", "shapes", "props"), TRANSFORM, ids=lambda v: getattr(v, "name", None)
)
def test_transform(cls: type, shapes: list[tuple[int, ...]], props: dict[str, Any]) -> None:
    check(op_module(cls, [t(s) for s in shapes], **props))


def test_split() -> None:
    check(op_module(concat_split.SplitOp, [t((2, 7))], axis=1, sizes=(3, 4)))


def test_gather() -> None:
    m = op_module(indexing.GatherOp, [t((4, 5)), t((2, 3), i64)], axis=1)
    idx = np.array([[0, -1, 2], [4, -5, 1]], np.int64)
    check(m, [random_inputs(m)[0], idx])


def test_gather_nd() -> None:
    m = op_module(indexing.GatherNDOp, [t((2, 3, 4)), t((2, 2, 1), i64)], batch_dims=1)
    idx = np.array([[[0], [2]], [[-1], [1]]], np.int64)
    check(m, [random_inputs(m)[0], idx])


def test_constants() -> None:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    block = Block(arg_types=[t((2, 3))])
    splat = ConstantOp(np.full((1, 3), 2.0, np.float32))
    table = ConstantOp(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = binary.MulOp.make(block.args[0], splat.result)
    b = binary.AddOp.make(a.results[0], table.result)
    block.add_ops([splat, table, a, b, func.ReturnOp(b.results[0])])
    fn = func.FuncOp("k", ([t((2, 3))], [t((2, 3))]), Region(block))
    check(ModuleOp([fn]))


RESIZE: list[dict[str, Any]] = [
    {"size": (1, 2, 6, 7), "mode": "nearest"},
    {
        "size": (1, 2, 3, 2),
        "mode": "nearest",
        "nearest_mode": "floor",
        "coordinate_transformation_mode": "asymmetric",
    },
    {"size": (1, 2, 7, 5), "mode": "linear"},
    {"size": (1, 2, 8, 8), "mode": "linear", "coordinate_transformation_mode": "align_corners"},
    {"size": (1, 2, 6, 6), "mode": "cubic", "exclude_outside": True},
    {
        "size": (1, 2, 5, 5),
        "mode": "linear",
        "coordinate_transformation_mode": "tf_crop_and_resize",
        "roi": (0.0, 0.0, -0.2, 0.1, 1.0, 1.0, 0.9, 1.3),
        "extrapolation_value": 7.0,
    },
]


@pytest.mark.parametrize(
    "props",
    RESIZE,
    ids=lambda p: f"{p['mode']}-{p.get('coordinate_transformation_mode', 'half_pixel')}",
)
def test_resize(props: dict[str, Any]) -> None:
    check(op_module(resize.ResizeOp, [t((1, 2, 4, 3))], **props), rtol=1e-4, atol=1e-5)


def _rnn_inputs(m: Any, seed: int = 0) -> list[np.ndarray]:
    return [v * 0.5 for v in random_inputs(m, seed=seed)]


@pytest.mark.parametrize(
    "props",
    [
        {"hidden_size": 3},
        {"hidden_size": 3, "direction": "bidirectional", "clip": 0.8},
        {"hidden_size": 3, "direction": "reverse", "input_forget": True, "layout": 1},
    ],
    ids=["forward", "bidirectional-clip", "reverse-coupled-layout1"],
)
def test_lstm(props: dict[str, Any]) -> None:
    _check_lstm(props, batch=2, inp=4)


@pytest.mark.parametrize(
    ("props", "batch"),
    [
        ({"hidden_size": 3, "direction": "bidirectional"}, 2),
        ({"hidden_size": 16, "layout": 1}, 1),
        ({"hidden_size": 32, "direction": "bidirectional", "recurrent_panel": 32}, 1),
        ({"hidden_size": 16, "recurrent_panel": 16}, 3),
    ],
    ids=["bidirectional-batch2", "gemv-tiles-layout1", "panels-bidirectional", "panels-batch3"],
)
def test_lstm_weights_kn(props: dict[str, Any], batch: int) -> None:
    """Transposed weights: the input projection and each step's h R^T are matmul tiles
    inside the kernel (cache_write tiles; 4H = 64 columns make GEMV tiles of 8 vectors); R
    packed in column panels ([dirs, 4H/P, H, P]: 128 columns in four 32-wide panels, one GEMV
    tile; 64 in four 16-wide ones for three rows)."""
    _check_lstm({**props, "weights_kn": True}, batch=batch, inp=8)


def _check_lstm(props: dict[str, Any], batch: int, inp: int) -> None:
    h = props["hidden_size"]
    dirs = 2 if props.get("direction") == "bidirectional" else 1
    layout = props.get("layout", 0)
    x = (batch, 3, inp) if layout else (3, batch, inp)
    st = (batch, dirs, h) if layout else (dirs, batch, h)
    kn = props.get("weights_kn", False)
    w = (dirs, inp, 4 * h) if kn else (dirs, 4 * h, inp)
    r = (dirs, h, 4 * h) if kn else (dirs, 4 * h, h)
    if panel := props.get("recurrent_panel", 0):
        r = (dirs, 4 * h // panel, h, panel)
    shapes = [x, w, r, (dirs, 8 * h), st, st, (dirs, 3 * h)]
    m = op_module(nn_rnn.LSTMOp, [t(s) for s in shapes], **props)
    check(m, _rnn_inputs(m), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "props",
    [
        {"hidden_size": 3},
        {"hidden_size": 3, "linear_before_reset": True, "direction": "bidirectional"},
        {"hidden_size": 2, "direction": "reverse", "layout": 1, "clip": 0.5},
        {"hidden_size": 3, "weights_kn": True, "direction": "bidirectional"},
        {"hidden_size": 16, "weights_kn": True, "linear_before_reset": True, "layout": 1},
    ],
    ids=[
        "forward",
        "linear-before-reset-bidirectional",
        "reverse-layout1-clip",
        "kn-bidirectional",
        "kn-gemv-tiles-linear-before-reset",
    ],
)
def test_gru(props: dict[str, Any]) -> None:
    """With `weights_kn` ([dirs, K, 3H] weights) the input projection is one product for every
    step and the products by R (the z and r gates' 2H columns, then the h gate's H from
    column 2H on) are matmul tiles."""
    h = props["hidden_size"]
    dirs = 2 if props.get("direction") == "bidirectional" else 1
    layout = props.get("layout", 0)
    x = (2, 3, 4) if layout else (3, 2, 4)
    st = (2, dirs, h) if layout else (dirs, 2, h)
    w, r = (dirs, 3 * h, 4), (dirs, 3 * h, h)
    if props.get("weights_kn"):
        w, r = (dirs, 4, 3 * h), (dirs, h, 3 * h)
    shapes = [x, w, r, (dirs, 6 * h), st]
    m = op_module(nn_rnn.GRUOp, [t(s) for s in shapes], **props)
    check(m, _rnn_inputs(m), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("elt", [f16, f64], ids=["f16", "f64"])
def test_other_float_types(elt: Any) -> None:
    check(op_module(binary.AddOp, [t(S, elt), t((5,), elt)]), rtol=1e-3, atol=1e-3)
    check(op_module(elementwise.SigmoidOp, [t((4, 32), elt)]), rtol=1e-3, atol=1e-3)
    check(op_module(reduce.ReduceSumOp, [t((3, 40), elt)], axes=(1,)), rtol=1e-2, atol=1e-2)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_reshape_any_refactoring(data: st.DataObject) -> None:
    """te_reshape's runs (reshape_groups) against numpy on random factorings of one size."""
    factors = data.draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=5))
    src = tuple(data.draw(st.permutations(factors)))
    cut = data.draw(st.lists(st.booleans(), min_size=len(factors), max_size=len(factors)))
    dst: list[int] = []
    for f, merge in zip(data.draw(st.permutations(factors)), cut, strict=True):
        if merge and dst:
            dst[-1] *= f
        else:
            dst.append(f)
    check(op_module(reshape.ReshapeOp, [t(src)], shape=tuple(dst)))
