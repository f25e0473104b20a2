"""Reshaping ops: the row-major data is kept, only the shape changes (reshape, flatten, squeeze,
expand_dims). Shapes are static: frontends resolve ONNX's -1/0 and shape inputs beforehand."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    UnaryTransformOp,
    int_prop,
    ints_prop,
    tensor,
    unique_axes,
)
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


@irdl_op_definition
class ReshapeOp(UnaryTransformOp):
    """Reinterpret the row-major data with a new static shape (same element count)."""

    name = "nnvm.reshape"
    shape = ints_prop()

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = self.attr("shape")
        if any(d < 0 for d in shape):
            raise ShapeError(f"reshape: target shape {list(shape)} must be static (no -1)")
        if math.prod(shape) != math.prod(t.get_shape()):
            raise ShapeError(
                f"reshape: cannot reshape {list(t.get_shape())} ({math.prod(t.get_shape())} "
                f"elements) to {list(shape)} ({math.prod(shape)} elements)"
            )
        return [tensor(shape, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.reshape(inputs[0], self.attr("shape"))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [te_reshape(b, x, tuple(self.attr("shape")))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [g.op("reshape", grads[0], shape=list(shape(self.input)))]


@irdl_op_definition
class FlattenOp(UnaryTransformOp):
    """ONNX Flatten: collapse axes [0, axis) and [axis, rank) into a 2-D matrix."""

    name = "nnvm.flatten"
    axis = int_prop(1)

    def _split(self, rank: int) -> int:
        axis = self.attr("axis")
        if not -rank <= axis <= rank:
            raise ShapeError(f"flatten: axis {axis} is out of range for rank {rank}")
        return axis + rank if axis < 0 else axis

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        k = self._split(len(shape))
        return [tensor((math.prod(shape[:k]), math.prod(shape[k:])), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        k = self._split(x.ndim)
        return [x.reshape(math.prod(x.shape[:k]), math.prod(x.shape[k:]))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        out = self.infer_result_types([x.type])[0]
        return [te_reshape(b, x, tuple(out.get_shape()))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [g.op("reshape", grads[0], shape=list(shape(self.input)))]


@irdl_op_definition
class SqueezeOp(UnaryTransformOp):
    """Drop the listed size-1 axes (axes index the input)."""

    name = "nnvm.squeeze"
    axes = ints_prop()

    def _axes(self, shape: Sequence[int]) -> list[int]:
        axes = unique_axes(self.attr("axes"), len(shape), "squeeze: axis")
        for a in axes:
            if shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} has extent {shape[a]}, not 1")
        return axes

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        axes = self._axes(shape)
        return [tensor([d for k, d in enumerate(shape) if k not in axes], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.squeeze(inputs[0], axis=tuple(self._axes(inputs[0].shape)))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [te_reshape(b, x, tuple(self.infer_result_types([x.type])[0].get_shape()))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [g.op("reshape", grads[0], shape=list(shape(self.input)))]


@irdl_op_definition
class ExpandDimsOp(UnaryTransformOp):
    """ONNX Unsqueeze: insert size-1 axes; the axes index the output."""

    name = "nnvm.expand_dims"
    axes = ints_prop()

    def _axes(self, rank: int) -> list[int]:
        return unique_axes(self.attr("axes"), rank + len(self.attr("axes")), "expand_dims: axis")

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = list(t.get_shape())
        axes = self._axes(len(shape))
        out: list[int] = []
        rest = iter(shape)
        for k in range(len(shape) + len(axes)):
            out.append(1 if k in axes else next(rest))
        return [tensor(out, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.expand_dims(inputs[0], tuple(self._axes(inputs[0].ndim)))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [te_reshape(b, x, tuple(self.infer_result_types([x.type])[0].get_shape()))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [g.op("reshape", grads[0], shape=list(shape(self.input)))]


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The axes of a row-major reshape in matching runs: (source axes, result axes) pairs whose
    extents have one product, extent-1 axes left out. [1, 232, 14, 14] -> [1, 2, 116, 14, 14]
    is ([1], [1, 2]), ([2], [3]), ([3], [4]): only the channel axis is split."""
    s_axes = [k for k, d in enumerate(src) if d != 1]
    d_axes = [k for k, d in enumerate(dst) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(s_axes) and j < len(d_axes):
        gs, gd = [s_axes[i]], [d_axes[j]]
        ps, pd = src[s_axes[i]], dst[d_axes[j]]
        i, j = i + 1, j + 1
        while ps != pd:
            if ps < pd:
                gs.append(s_axes[i])
                ps *= src[s_axes[i]]
                i += 1
            else:
                gd.append(d_axes[j])
                pd *= dst[d_axes[j]]
                j += 1
        groups.append((gs, gd))
    return groups


def te_reshape(b: KernelBuilder, x: TensorRef, shape: tuple[int, ...]) -> TensorRef:
    """Row-major reinterpretation, run by run (reshape_groups): an axis that stays as it is
    indexes the source directly, and only the axes a run splits or merges go through a flat
    position, so a reshape that splits channels leaves the spatial axes (and their vector
    loads) alone."""
    if 0 in x.shape or 0 in shape:  # never read: any index will do
        return b.compute(shape, lambda *i: x[topi.unravel(topi.ravel(i, shape), x.shape)])
    groups = reshape_groups(x.shape, shape)

    def index(*i: Expr) -> Expr:
        src: list[Expr | int] = [0] * len(x.shape)
        for gs, gd in groups:
            if len(gs) == 1 and len(gd) == 1:
                src[gs[0]] = i[gd[0]]
                continue
            flat = topi.ravel([i[a] for a in gd], [shape[a] for a in gd])
            for a, v in zip(gs, topi.unravel(flat, [x.shape[a] for a in gs], True), strict=True):
                src[a] = v
        return x[src]

    return b.compute(shape, index)


RESHAPE_OPS: list[type[NNVMOp]] = [ReshapeOp, FlattenOp, SqueezeOp, ExpandDimsOp]
