"""Joining and cutting along one axis: concat (several tensors into one) and split (one tensor into
consecutive parts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    int_prop,
    ints_prop,
    normalize_axis,
    tensor,
)
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


@irdl_op_definition
class ConcatOp(NNVMOp):
    """Join one or more tensors along `axis`; all other extents must agree."""

    name = "nnvm.concat"
    inputs = var_operand_def()
    result = result_def()
    axis = int_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("concat needs at least one operand")
        first = operand_types[0]
        rank = len(first.get_shape())
        if rank == 0:
            raise ShapeError("concat: operands must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), rank, "concat: axis")
        total = 0
        for k, t in enumerate(operand_types):
            shape = t.get_shape()
            if t.element_type != first.element_type:
                raise ShapeError(
                    f"concat: operand #{k} has element type {t.element_type}, operand #0 "
                    f"{first.element_type}"
                )
            if len(shape) != rank:
                raise ShapeError(f"concat: operand #{k} has rank {len(shape)}, operand #0 {rank}")
            for d in range(rank):
                if d != axis and shape[d] != first.get_shape()[d]:
                    raise ShapeError(
                        f"concat: operand #{k} has shape {list(shape)}, which differs from "
                        f"{list(first.get_shape())} off the concatenation axis {axis}"
                    )
            total += shape[axis]
        out = list(first.get_shape())
        out[axis] = total
        return [tensor(out, first.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        axis = normalize_axis(self.attr("axis"), inputs[0].ndim, "concat: axis")
        return [np.concatenate(list(inputs), axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        axis = normalize_axis(self.attr("axis"), inputs[0].ndim, "concat: axis")
        shape = self.infer_result_types([x.type for x in inputs])[0].get_shape()
        starts = [0]
        for x in inputs:
            starts.append(starts[-1] + x.shape[axis])

        def body(*i: Expr) -> Expr:
            value: Expr | None = None
            for k in reversed(range(len(inputs))):
                src = list(i)
                src[axis] = i[axis] - starts[k]
                v = inputs[k][src]
                value = v if value is None else te.select(i[axis] < starts[k + 1], v, value)
            assert value is not None
            return value

        return [b.compute(shape, body)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        (dy,) = grads
        axis = normalize_axis(self.attr("axis"), len(shape(dy)))
        out: list[SSAValue | None] = []
        start = 0
        for k, x in enumerate(self.inputs):
            end = start + shape(x)[axis]
            piece = [start], [end], [axis], [1]
            out.append(
                g.op("slice", dy, starts=piece[0], ends=piece[1], axes=piece[2], steps=piece[3])
                if g.needs(k)
                else None
            )
            start = end
        return out


@irdl_op_definition
class SplitOp(NNVMOp):
    """Cut a tensor along `axis` into pieces of the given sizes, one result each."""

    name = "nnvm.split"
    input = operand_def()
    outputs = var_result_def()
    axis = int_prop(0)
    sizes = ints_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        axis = normalize_axis(self.attr("axis"), len(shape), "split: axis")
        sizes = self.attr("sizes")
        if not sizes:
            raise ShapeError("split: sizes must not be empty")
        if min(sizes) < 0 or sum(sizes) != shape[axis]:
            raise ShapeError(
                f"split: sizes {list(sizes)} do not add up to the extent {shape[axis]} of axis "
                f"{axis}"
            )
        outs = []
        for s in sizes:
            piece = list(shape)
            piece[axis] = s
            outs.append(tensor(piece, t.element_type))
        return outs

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        axis = normalize_axis(self.attr("axis"), x.ndim, "split: axis")
        cuts = np.cumsum(self.attr("sizes"))[:-1]
        return [np.asarray(p, order="C") for p in np.split(x, cuts, axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, "split: axis")
        outs = []
        start = 0
        for k, t in enumerate(self.infer_result_types([x.type])):

            def body(*i: Expr, offset: int = start) -> Expr:
                src = list(i)
                src[axis] = i[axis] + offset
                return x[src]

            outs.append(b.compute(t.get_shape(), body, name=f"part{k}"))
            start += t.get_shape()[axis]
        return outs

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        axis = normalize_axis(self.attr("axis"), len(shape(self.input)))
        return [g.op("concat", *grads, axis=axis)]


CONCAT_SPLIT_OPS: list[type[NNVMOp]] = [ConcatOp, SplitOp]
