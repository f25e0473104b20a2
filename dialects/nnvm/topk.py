"""top_k: the k largest (or smallest) entries along an axis and their indices (ONNX TopK with a
k known at compile time). Equal values keep their order (the lower index first), and the
result is sorted (ONNX's sorted=0 leaves the order unspecified; sorted is one valid order).

As index formulas: each entry's rank is the number of entries that come before it (greater,
or equal at a lower index), and output slot j takes the entry whose rank is j. That costs
O(n^2) per row of n entries: right for the sizes detection heads and samplers use (hundreds
to a few thousand), slow for a whole vocabulary."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    int_prop,
    normalize_axis,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import element_type_of, is_bool
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

I64 = IntegerType(64)


@irdl_op_definition
class TopKOp(NNVMOp):
    """`%values, %indices = nnvm.top_k %x {k, axis, largest}`; indices are i64."""

    name = "nnvm.top_k"
    input = operand_def()
    values = result_def()
    indices = result_def()
    k = int_prop()
    axis = int_prop(-1)
    largest = bool_prop(True)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        if is_bool(t.element_type):
            raise ShapeError("top_k does not accept bool tensors")
        shape = list(t.get_shape())
        if not shape:
            raise ShapeError("top_k: the input must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), "top_k: axis")
        k = self.attr("k")
        if not 0 <= k <= shape[axis]:
            raise ShapeError(f"top_k: k = {k} must be in [0, {shape[axis]}] (the axis extent)")
        shape[axis] = k
        return [tensor(shape, t.element_type), tensor(shape, element_type_of(np.int64))]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, "top_k: axis")
        k = self.attr("k")
        key = -x if self.attr("largest") else x
        if np.issubdtype(x.dtype, np.unsignedinteger) and self.attr("largest"):
            key = np.iinfo(x.dtype).max - x
        order = np.argsort(key, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
        return [np.take_along_axis(x, idx, axis=axis), idx]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, "top_k: axis")
        n, k = x.shape[axis], self.attr("k")
        largest = self.attr("largest")

        def at(i: Sequence[Expr], r: Expr) -> list[Expr]:
            pos = list(i)
            pos[axis] = r
            return pos

        def before(*args: Expr) -> Expr:
            """1 where entry r comes before entry i in the sorted order."""
            *i, r = args
            a, v = x[at(i, r)], x[list(i)]
            wins = a > v if largest else a < v
            ties = a.eq(v) & (r < i[axis])
            return te.select(wins | ties, te.const(1, I64), te.const(0, I64))

        rank = b.reduce(x.shape, "sum", (n,), before, name="rank")
        out_shape = list(x.shape)
        out_shape[axis] = k

        def pick(value: bool):
            def body(*args: Expr) -> Expr:
                *j, r = args
                here = rank[at(j, r)].eq(te.cast(j[axis], I64))
                if value:
                    return te.select(here, x[at(j, r)], te.const(0, x.dtype))
                return te.select(here, te.cast(r, I64), te.const(0, I64))

            return body

        values = b.reduce(out_shape, "sum", (n,), pick(True), name="values")
        indices = b.reduce(out_shape, "sum", (n,), pick(False), name="indices")
        return [values, indices]


TOPK_OPS: list[type[NNVMOp]] = [TopKOp]
