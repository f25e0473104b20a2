"""Graph ops through the GPU default schedules, lower-te-to-gpu and the OpenCL C printer, run on
an OpenCL device (PoCL in CI) and compared with the reference executor: odd shapes, so every
bound axis has a masked tail."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from opencl_harness import check_opencl, lower_for_opencl, op_module, random_inputs, requires_opencl
from xdsl.dialects.builtin import f32, i1, i32, i64

from nnvm.dialects.nnvm import binary, conv, elementwise, nn, pooling, reduce
from nnvm.dialects.nnvm.base import tensor

pytestmark = requires_opencl
F = f32


def t(shape: tuple[int, ...], elt: Any = F) -> Any:
    return tensor(shape, elt)


UNARY = [
    (elementwise.ReluOp, {}, F),
    (elementwise.ReluOp, {}, i32),
    (elementwise.ClipOp, {"min": -0.5, "max": 0.7}, F),
    (elementwise.SigmoidOp, {}, F),
    (elementwise.TanhOp, {}, F),
    (elementwise.ErfOp, {}, F),
    (elementwise.GeluOp, {}, F),
    (elementwise.ExpOp, {}, F),
    (elementwise.NegOp, {}, i32),
    (elementwise.AbsOp, {}, i64),
    (elementwise.FloorOp, {}, F),
    (elementwise.RoundOp, {}, F),
    (elementwise.LogicalNotOp, {}, i1),
    (elementwise.IsNaNOp, {}, F),
    (elementwise.CastOp, {"to": "int32"}, F),
    (elementwise.CastOp, {"to": "bool"}, F),
]


@pytest.mark.parametrize(("cls", "props", "elt"), UNARY, ids=lambda v: getattr(v, "name", None))
def test_unary(cls: type, props: dict[str, Any], elt: Any) -> None:
    """3 x 337: four blocks of 256 threads, the last one masked."""
    m = op_module(cls, [t((3, 337), elt)], **props)
    inputs = random_inputs(m)
    if cls is elementwise.RoundOp:
        inputs[0].reshape(-1)[:5] = [0.5, 1.5, 2.5, -0.5, -1.5]
    if cls is elementwise.IsNaNOp:
        inputs[0].reshape(-1)[:2] = np.nan
    check_opencl(m, inputs, rtol=2e-4, atol=2e-5)


VECTOR_BINARY = [
    (binary.AddOp, F, (2, 3, 37), (2, 1, 37), True),
    (binary.MaximumOp, F, (3, 37), (3, 1), True),
    # a masked-off lane would divide by 0; xDSL's arith has no vector compares: scalar loops
    (binary.DivOp, i32, (2, 37), (2, 37), False),
    (binary.LessOp, F, (3, 37), (3, 37), False),
    (binary.LogicalXorOp, i1, (3, 37), (3, 37), False),
]


@pytest.mark.parametrize(
    ("cls", "elt", "lhs", "rhs", "vectors"), VECTOR_BINARY, ids=lambda v: getattr(v, "name", None)
)
def test_vectorized_binary(
    cls: type, elt: Any, lhs: tuple[int, ...], rhs: tuple[int, ...], vectors: bool
) -> None:
    """Innermost rows of 37: 4 lanes per thread, as one vector (vload4 / vstore4, a masked
    tail of 1, broadcast operands uniform across the lanes) where the vectorizer can, else a
    loop of 4 scalars."""
    m = op_module(cls, [t(lhs, elt), t(rhs, elt)])
    code = json.loads(lower_for_opencl(m))["code"]
    assert ("vstore4" in code and ".s3" in code) == vectors
    inputs = random_inputs(m)
    if elt == i32:
        inputs[1] = np.where(inputs[1] == 0, 3, inputs[1]).astype(np.int32)
    check_opencl(m, inputs)


def test_vectorized_casts() -> None:
    m = op_module(elementwise.CastOp, [t((3, 37), i32)], to="float32")
    check_opencl(m)
    m = op_module(elementwise.CastOp, [t((3, 37), F)], to="int32")
    check_opencl(m)


BINARY = [
    (binary.AddOp, F, (3, 1)),
    (binary.DivOp, i32, (2, 3, 5)),
    (binary.MaximumOp, F, (2, 3, 5)),
    (binary.ModOp, i32, (2, 3, 5)),
    (binary.LessOp, F, (3, 1)),
    (binary.LogicalXorOp, i1, (2, 3, 5)),
]


@pytest.mark.parametrize(("cls", "elt", "rhs"), BINARY, ids=lambda v: getattr(v, "name", None))
def test_binary(cls: type, elt: Any, rhs: tuple[int, ...]) -> None:
    m = op_module(cls, [t((2, 3, 5), elt), t(rhs, elt)])
    inputs = random_inputs(m)
    if elt == i32:
        inputs[1] = np.where(inputs[1] == 0, 3, inputs[1]).astype(np.int32)
    check_opencl(m, inputs)


def test_elementwise_tail_of_many_blocks() -> None:
    """1000 x 1001 elements: 3911 blocks of 256 threads, the last one masked."""
    check_opencl(op_module(binary.MulOp, [t((1000, 1001)), t((1001,))]))


NN = [
    (nn.DenseOp, [(3, 20), (5, 20)], {}),
    (nn.DenseOp, [(33, 70), (17, 70)], {}),
    (nn.DenseOp, [(2, 3, 7), (4, 7)], {}),
    (nn.MatmulOp, [(5, 6), (6, 9)], {}),
    (nn.MatmulOp, [(37, 19), (19, 41)], {}),
    (nn.MatmulOp, [(131, 24), (24, 45)], {}),  # 4-row register tiles, a tail block of 3 rows
    (nn.DenseOp, [(130, 32), (20, 32)], {}),
    (nn.MatmulOp, [(2, 1, 3, 4), (3, 4, 18)], {}),
    (nn.MatmulOp, [(3, 4), (4,)], {}),
    (nn.BatchMatmulOp, [(2, 3, 4), (1, 4, 5)], {}),
    (nn.BatchMatmulOp, [(2, 4, 3), (2, 5, 4)], {"transpose_a": True, "transpose_b": True}),
    (nn.BiasAddOp, [(2, 3, 4, 4), (3,)], {}),
    (nn.SoftmaxOp, [(3, 20)], {}),
    (nn.SoftmaxOp, [(7, 1000)], {}),
    (nn.SoftmaxOp, [(2, 4, 3)], {"axis": 1}),
    (nn.LogSoftmaxOp, [(3, 7)], {}),
    (nn.LayerNormOp, [(2, 3, 8), (8,), (8,)], {}),
    (nn.LayerNormOp, [(5, 768), (768,), (768,)], {}),
    (nn.BatchNormOp, [(2, 3, 4, 4), (3,), (3,), (3,), (3,)], {}),
]


@pytest.mark.parametrize(("cls", "shapes", "props"), NN, ids=lambda v: getattr(v, "name", None))
def test_nn(cls: type, shapes: list[tuple[int, ...]], props: dict[str, Any]) -> None:
    m = op_module(cls, [t(s) for s in shapes], **props)
    inputs = random_inputs(m)
    if cls is nn.BatchNormOp:
        inputs[4] = np.abs(inputs[4]) + 0.5
    check_opencl(m, inputs, rtol=1e-4, atol=1e-4)


CONV = [
    ((1, 3, 8, 8), (4, 3, 3, 3), {"padding": (1, 1, 1, 1)}),
    ((2, 4, 9, 9), (8, 4, 3, 3), {"strides": (2, 2), "padding": (1, 0, 1, 0)}),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "padding": (1, 1, 1, 1)}),
    ((1, 4, 6, 6), (4, 2, 3, 3), {"groups": 2}),
    ((1, 3, 5, 5), (4, 3, 2, 2), {"dilation": (2, 2)}),
    ((1, 8, 19, 17), (16, 8, 3, 3), {"padding": (1, 1, 1, 1)}),
    (
        (1, 2, 7, 7, 8),
        (2, 2, 3, 3, 8, 8),
        {"padding": (1, 1, 1, 1), "data_layout": "NCHW8c", "kernel_layout": "OIHW8i8o"},
    ),
]


@pytest.mark.parametrize(("x", "w", "props"), CONV, ids=str)
def test_conv2d(x: tuple[int, ...], w: tuple[int, ...], props: dict[str, Any]) -> None:
    check_opencl(op_module(conv.Conv2DOp, [t(x), t(w)], **props), rtol=1e-4, atol=1e-4)


POOL = [
    (pooling.MaxPool2DOp, (1, 2, 7, 7), {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)}),
    (pooling.MaxPool2DOp, (1, 2, 6, 6), {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True, "padding": (0, 0, 1, 1)}),
    (pooling.MaxPool2DOp, (1, 2, 5, 5, 8), {"pool_size": (3, 3), "padding": (1, 1, 1, 1), "layout": "NCHW8c"}),
    (pooling.AvgPool2DOp, (1, 2, 7, 7), {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)}),
    (pooling.AvgPool2DOp, (1, 2, 7, 7), {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1), "count_include_pad": True}),
    (pooling.GlobalAvgPool2DOp, (2, 3, 5, 4), {}),
    (pooling.GlobalMaxPool2DOp, (1, 2, 3, 3, 8), {"layout": "NCHW8c"}),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "shape", "props"), POOL, ids=lambda v: getattr(v, "name", None))
def test_pooling(cls: type, shape: tuple[int, ...], props: dict[str, Any]) -> None:
    check_opencl(op_module(cls, [t(shape)], **props))


REDUCE = [
    (reduce.ReduceSumOp, {"axes": (1,)}, F),
    (reduce.ReduceSumOp, {"axes": (0, 2), "keepdims": True}, F),
    (reduce.ReduceSumOp, {"axes": (-1,)}, i32),
    (reduce.ReduceMeanOp, {"axes": (0, 1, 2)}, F),
    (reduce.ReduceMaxOp, {"axes": (1, 2)}, F),
    (reduce.ReduceMinOp, {"axes": (0,), "keepdims": True}, i32),
    (reduce.ReduceProdOp, {"axes": (2,)}, F),
    (reduce.ArgMaxOp, {"axis": 2}, F),
    (reduce.ArgMaxOp, {"axis": 1, "keepdims": False}, F),
]


@pytest.mark.parametrize(("cls", "props", "elt"), REDUCE, ids=lambda v: getattr(v, "name", None))
def test_reduce(cls: type, props: dict[str, Any], elt: Any) -> None:
    check_opencl(op_module(cls, [t((4, 6, 35), elt)], **props), rtol=1e-4, atol=1e-4)


LONG_ROWS = [
    (nn.SoftmaxOp, [(7, 1000)], {}),
    (nn.LayerNormOp, [(5, 768), (768,), (768,)], {}),
    (reduce.ReduceSumOp, [(2, 5001)], {"axes": (1,)}),
    (reduce.ReduceMaxOp, [(3, 7, 600)], {"axes": (1, 2)}),
    (reduce.ArgMaxOp, [(2, 5000)], {"axis": 1}),
]


@pytest.mark.parametrize(
    ("cls", "shapes", "props"), LONG_ROWS, ids=lambda v: getattr(v, "name", None)
)
def test_long_rows_reduce_across_a_block(
    cls: type, shapes: list[tuple[int, ...]], props: dict[str, Any]
) -> None:
    """Few outputs, long rows: each row is spread over a block's threads (a strided share per
    thread, the row tails masked), the shares combined as a tree in shared memory."""
    m = op_module(cls, [t(s) for s in shapes], **props)
    code = json.loads(lower_for_opencl(m))["code"]
    assert "__local" in code and "barrier(" in code, "the row is reduced across a block"
    check_opencl(m, rtol=1e-4, atol=1e-4)
