"""Repeating ops: broadcast_to (extent-1 axes repeated to a shape, ONNX Expand) and tile (the
whole tensor repeated along each axis)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    UnaryTransformOp,
    broadcast_shapes,
    ints_prop,
    tensor,
)
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import KernelBuilder, TensorRef


@irdl_op_definition
class BroadcastToOp(UnaryTransformOp):
    """Numpy-broadcast a tensor to a given shape (ONNX Expand, after the frontend has computed
    the bidirectional result shape)."""

    name = "nnvm.broadcast_to"
    shape = ints_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        target = tuple(self.attr("shape"))
        src = tuple(t.get_shape())
        try:
            fits = len(src) <= len(target) and broadcast_shapes(src, target) == target
        except ShapeError:
            fits = False
        if not fits:
            raise ShapeError(
                f"broadcast_to: shape {list(src)} does not broadcast to {list(target)}"
            )
        return [tensor(target, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.array(np.broadcast_to(inputs[0], self.attr("shape")))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [b.compute(self.attr("shape"), lambda *i: x[topi.broadcast_index(i, x.shape)])]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        return [g.sum_to(grads[0], shape(self.input))]


@irdl_op_definition
class TileOp(UnaryTransformOp):
    """Repeat the whole tensor `repeats[k]` times along each axis k."""

    name = "nnvm.tile"
    repeats = ints_prop()

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape, reps = t.get_shape(), self.attr("repeats")
        if len(reps) != len(shape):
            raise ShapeError(f"tile: {len(reps)} repeats for a tensor of rank {len(shape)}")
        if any(r < 0 for r in reps):
            raise ShapeError(f"tile: repeats {list(reps)} must be >= 0")
        return [tensor([d * r for d, r in zip(shape, reps, strict=True)], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.tile(inputs[0], self.attr("repeats"))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        shape = self.infer_result_types([x.type])[0].get_shape()
        reps = self.attr("repeats")
        return [
            b.compute(
                shape,
                lambda *i: x[
                    [v if r == 1 else v % d for v, r, d in zip(i, reps, x.shape, strict=True)]
                ],
            )
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Each input element is repeated: sum the copies, axis by axis ([r, d] -> [d])."""
        src = shape(self.input)
        reps = [int(r) for r in self.attr("repeats")]
        split: list[int] = []
        for r, d in zip(reps, src, strict=True):
            split += [r, d]
        dy = g.op("reshape", grads[0], shape=split)
        dx = g.op("sum", dy, axes=list(range(0, 2 * len(src), 2)))
        return [dx]


REPEAT_OPS: list[type[NNVMOp]] = [BroadcastToOp, TileOp]
