"""cumsum / cumprod: running sums or products along an axis (ONNX CumSum, CumProd), optionally
exclusive and/or from the end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    int_prop,
    normalize_axis,
)
from nnvm.dialects.nnvm.dtypes import is_float, is_integer
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


class _CumulativeOp(NNVMOp):
    #: The te reduction, its identity and the numpy running function.
    KIND: ClassVar[str]
    IDENTITY: ClassVar[int]

    input = operand_def()
    result = result_def()
    axis = int_prop()
    exclusive = bool_prop(False)
    reverse = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        if not (is_float(t.element_type) or is_integer(t.element_type)):
            raise ShapeError(f"{self.name} does not accept element type {t.element_type}")
        normalize_axis(self.attr("axis"), len(t.get_shape()), f"{self.name}: axis")
        return [t]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        axis = normalize_axis(self.attr("axis"), x.ndim, f"{self.name}: axis")
        y = np.flip(x, axis) if self.attr("reverse") else x
        if self.attr("exclusive"):
            # shift by one along the axis: element k sums the elements before k
            head = np.full_like(np.take(y, [0], axis=axis), self.IDENTITY)
            y = np.concatenate([head, np.delete(y, -1, axis=axis)], axis=axis)
        running = np.cumsum if self.KIND == "sum" else np.cumprod
        out = running(y, axis=axis, dtype=x.dtype)
        if self.attr("reverse"):
            out = np.flip(out, axis)
        return [np.asarray(out, order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, f"{self.name}: axis")
        excl, rev = self.attr("exclusive"), self.attr("reverse")

        def body(*args: Expr) -> Expr:
            *i, r = args
            src = list(i)
            src[axis] = r
            pos = i[axis]
            take = (r > pos if excl else r >= pos) if rev else (r < pos if excl else r <= pos)
            return te.select(take, x[src], self.IDENTITY)

        return [b.reduce(x.shape, self.KIND, (x.shape[axis],), body, reduce_axes=("r",))]


@irdl_op_definition
class CumSumOp(_CumulativeOp):
    """ONNX CumSum: running sums along `axis`, optionally exclusive and/or from the end."""

    name = "nnvm.cumsum"
    KIND: ClassVar[str] = "sum"
    IDENTITY: ClassVar[int] = 0


@irdl_op_definition
class CumProdOp(_CumulativeOp):
    """ONNX CumProd: running products along `axis`, optionally exclusive and/or from the end."""

    name = "nnvm.cumprod"
    KIND: ClassVar[str] = "prod"
    IDENTITY: ClassVar[int] = 1


SCAN_OPS: list[type[NNVMOp]] = [CumSumOp, CumProdOp]
