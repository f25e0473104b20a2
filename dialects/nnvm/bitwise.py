"""Bitwise ops on integer tensors: and, or, xor, not, and shifts (ONNX BitShift semantics:
arithmetic right shifts for signed types; a shift by a negative amount or by the width or more
leaves only the sign fill)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Commutative, Pure

from nnvm.dialects.nnvm.base import EvalContext, ShapeError, str_prop, tensor
from nnvm.dialects.nnvm.binary import BinaryBroadcastOp
from nnvm.dialects.nnvm.dtypes import element_type_of, is_integer, numpy_dtype_of
from nnvm.dialects.nnvm.elementwise import UnaryElementwiseOp
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr


class _IntegerBinaryOp(BinaryBroadcastOp):
    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        out = super().infer_result_types(operand_types)
        if not is_integer(operand_types[0].element_type):
            raise ShapeError(f"{self.name} takes integers, got {operand_types[0].element_type}")
        return out


class _BitwiseOp(_IntegerBinaryOp):
    traits = traits_def(Pure(), Commutative(), OpPattern(OpPatternKind.BROADCAST))
    FUNC: ClassVar[str]

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return getattr(np, f"bitwise_{self.FUNC}")(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return te.binary(self.FUNC, x, y)


@irdl_op_definition
class BitwiseAndOp(_BitwiseOp):
    name = "nnvm.bitwise_and"
    FUNC: ClassVar[str] = "and"


@irdl_op_definition
class BitwiseOrOp(_BitwiseOp):
    name = "nnvm.bitwise_or"
    FUNC: ClassVar[str] = "or"


@irdl_op_definition
class BitwiseXorOp(_BitwiseOp):
    name = "nnvm.bitwise_xor"
    FUNC: ClassVar[str] = "xor"


@irdl_op_definition
class BitwiseNotOp(UnaryElementwiseOp):
    name = "nnvm.bitwise_not"
    ACCEPTS: ClassVar[str] = "numeric"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        if not is_integer(operand_types[0].element_type):
            raise ShapeError(f"{self.name} takes integers, got {operand_types[0].element_type}")
        return super().infer_result_types(operand_types)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.bitwise_not(x)

    def te_scalar(self, x: Expr) -> Expr:
        bits = x.type.width.data  # type: ignore[attr-defined]
        unsigned = np.issubdtype(numpy_dtype_of(x.type), np.unsignedinteger)
        return te.binary("xor", x, te.const((1 << bits) - 1 if unsigned else -1, x.type))


@irdl_op_definition
class BitShiftOp(_IntegerBinaryOp):
    """x shifted by y bits, `direction` "left" or "right"."""

    name = "nnvm.bit_shift"
    direction = str_prop("left")

    def verify_(self) -> None:
        if self.attr("direction") not in ("left", "right"):
            raise ShapeError('bit_shift direction must be "left" or "right"')
        super().verify_()

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        x, y = np.broadcast_arrays(x, y)
        bits = x.dtype.itemsize * 8
        valid = (y >= 0) & (y < bits)
        amount = np.where(valid, y, 0).astype(x.dtype)
        fill = np.zeros_like(x)
        if self.attr("direction") == "left":
            shifted = np.left_shift(x, amount)
        else:
            shifted = np.right_shift(x, amount)  # arithmetic for signed numpy types
            if np.issubdtype(x.dtype, np.signedinteger):
                fill = np.where(x < 0, np.array(-1, x.dtype), fill)
        return np.where(valid, shifted, fill)

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, y = inputs
        return [np.asarray(self.compute(x, y)).astype(x.dtype, copy=False)]

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        bits = x.type.width.data  # type: ignore[attr-defined]
        valid = (y >= 0) & (y < bits)
        amount = te.select(valid, y, 0)
        signed = np.issubdtype(numpy_dtype_of(x.type), np.signedinteger)
        if self.attr("direction") == "left":
            return te.select(valid, te.binary("shl", x, amount), 0)
        zero = te.const(0, x.type)
        fill = te.select(x < 0, te.const(-1, x.type), zero) if signed else zero
        return te.select(valid, te.binary("shr", x, amount), fill)


@irdl_op_definition
class BitCastOp(UnaryElementwiseOp):
    """The bits of each element read as `to`, a type of the same width (ONNX BitCast)."""

    name = "nnvm.bitcast"
    to = str_prop()
    ACCEPTS: ClassVar[str] = "numeric"

    def _target(self) -> np.dtype:
        try:
            return np.dtype(self.attr("to"))
        except TypeError:
            raise ShapeError(f"bitcast: unknown element type {self.attr('to')!r}") from None

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = super().infer_result_types(operand_types)
        src, dst = numpy_dtype_of(t.element_type), self._target()
        if src.itemsize != dst.itemsize or np.bool_ in (src.type, dst.type):
            raise ShapeError(f"bitcast: {src} and {dst} differ in width (or are bool)")
        return [tensor(t.get_shape(), element_type_of(dst))]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.array(inputs[0], order="C").view(self._target())]

    def te_scalar(self, x: Expr) -> Expr:
        return te.bitcast(x, element_type_of(self._target()))


BITWISE_OPS = [BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, BitwiseNotOp, BitShiftOp, BitCastOp]
