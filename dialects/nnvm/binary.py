"""Binary ops with numpy broadcasting: arithmetic, comparisons and logic (pattern kind:
broadcast), plus the ternary `where`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def, var_operand_def
from xdsl.traits import Commutative, Pure

from nnvm.dialects.nnvm.autodiff import NoGradient, VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    broadcast_shapes,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import element_type_of, is_bool, is_float
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


class BinaryBroadcastOp(NNVMOp):
    """`%z = nnvm.<op> %x, %y : (A, B) -> broadcast(A, B)`; both operands share an element type."""

    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    #: "numeric" (float or integer), "float", "bool" operands.
    ACCEPTS: ClassVar[str] = "numeric"
    #: True for comparisons: the result is i1.
    PREDICATE: ClassVar[bool] = False

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        a, b = operand_types
        if a.element_type != b.element_type:
            raise ShapeError(
                f"{self.name} operands have different element types {a.element_type} and "
                f"{b.element_type}"
            )
        elt = a.element_type
        ok = {"numeric": not is_bool(elt), "float": is_float(elt), "bool": is_bool(elt)}
        if not ok[self.ACCEPTS]:
            raise ShapeError(f"{self.name} does not accept element type {elt}")
        shape = broadcast_shapes(a.get_shape(), b.get_shape())
        return [tensor(shape, element_type_of(np.bool_) if self.PREDICATE else elt)]

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, y = inputs
        with np.errstate(all="ignore"):
            out = np.asarray(self.compute(x, y))
        return [out if self.PREDICATE else out.astype(x.dtype, copy=False)]

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        """The formula of one element from the two broadcast operands."""
        raise NotImplementedError(f"{self.name} has no te definition")

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        return [topi.elementwise(b, inputs, self.te_scalar)]

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue | None, SSAValue | None]:
        """Both operands' cotangents at the broadcast (result) shape."""
        raise NoGradient(f"{self.name} has no gradient")

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        dx, dy = self.vjp_full(g, grads[0])
        return [
            g.sum_to(d, shape(v)) if d is not None and g.needs(k) else None
            for k, (d, v) in enumerate(((dx, self.lhs), (dy, self.rhs)))
        ]

    @classmethod
    def has_gradient(cls) -> bool:
        return cls.vjp_full is not BinaryBroadcastOp.vjp_full


@irdl_op_definition
class AddOp(BinaryBroadcastOp):
    name = "nnvm.add"
    traits = traits_def(Pure(), Commutative(), OpPattern(OpPatternKind.BROADCAST))

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x + y

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue, SSAValue]:
        return dz, dz


@irdl_op_definition
class SubOp(BinaryBroadcastOp):
    name = "nnvm.sub"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x - y

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x - y

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue, SSAValue | None]:
        return dz, g.op("neg", dz) if g.needs(1) else None


@irdl_op_definition
class MulOp(BinaryBroadcastOp):
    name = "nnvm.mul"
    traits = traits_def(Pure(), Commutative(), OpPattern(OpPatternKind.BROADCAST))

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x * y

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x * y

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue | None, SSAValue | None]:
        dx = g.op("mul", dz, self.rhs) if g.needs(0) else None
        dy = g.op("mul", dz, self.lhs) if g.needs(1) else None
        return dx, dy


@irdl_op_definition
class DivOp(BinaryBroadcastOp):
    """True division for floats; integer division truncates toward zero (as ONNX and C do)."""

    name = "nnvm.div"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if np.issubdtype(x.dtype, np.integer):
            q = np.trunc(x.astype(np.float64) / y.astype(np.float64))
            return q.astype(x.dtype)
        return x / y

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x / y

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue | None, SSAValue | None]:
        """d(x/y) = dz / y and -dz * (x/y) / y."""
        dx = g.op("div", dz, self.rhs) if g.needs(0) else None
        dy = None
        if g.needs(1):
            dy = g.op("neg", g.op("div", g.op("mul", dz, self.result), self.rhs))
        return dx, dy


@irdl_op_definition
class PowOp(BinaryBroadcastOp):
    name = "nnvm.pow"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.power(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        if is_float(x.type):
            return te.binary("pow", x, y)
        f64 = element_type_of(np.float64)
        return te.cast(te.binary("pow", te.cast(x, f64), te.cast(y, f64)), x.type)

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue | None, SSAValue | None]:
        """d(x^y) = dz * y * x^(y-1) and dz * x^y * log(x)."""
        x, y = self.lhs, self.rhs
        dx = dy = None
        if g.needs(0):
            ym1 = g.op("sub", y, g.scalar(1.0, y))
            dx = g.op("mul", dz, g.op("mul", y, g.op("pow", x, ym1)))
        if g.needs(1):
            dy = g.op("mul", dz, g.op("mul", self.result, g.op("log", x)))
        return dx, dy


@irdl_op_definition
class MaximumOp(BinaryBroadcastOp):
    name = "nnvm.maximum"
    traits = traits_def(Pure(), Commutative(), OpPattern(OpPatternKind.BROADCAST))

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.maximum(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return te.maximum(x, y)

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The cotangent goes to the larger operand (to x on ties)."""
        return _route(g, g.op("greater_equal", self.lhs, self.rhs), dz)


@irdl_op_definition
class MinimumOp(BinaryBroadcastOp):
    name = "nnvm.minimum"
    traits = traits_def(Pure(), Commutative(), OpPattern(OpPatternKind.BROADCAST))

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.minimum(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return te.minimum(x, y)

    def vjp_full(self, g: VJPBuilder, dz: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The cotangent goes to the smaller operand (to x on ties)."""
        return _route(g, g.op("less_equal", self.lhs, self.rhs), dz)


def _route(g: VJPBuilder, to_x: SSAValue, dz: SSAValue) -> tuple[SSAValue, SSAValue]:
    zero = g.scalar(0.0, dz)
    return g.op("where", to_x, dz, zero), g.op("where", to_x, zero, dz)


@irdl_op_definition
class ModOp(BinaryBroadcastOp):
    """Remainder; `fmod = true` keeps the dividend's sign (C fmod), else the divisor's."""

    name = "nnvm.mod"
    fmod = bool_prop(False)

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.fmod(x, y) if self.attr("fmod") else np.mod(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        if is_float(x.type):
            q = te.unary("trunc" if self.attr("fmod") else "floor", x / y)
            r = x - y * q
            # x mod ±inf: y * q is inf * 0 = NaN in the formula, but the remainder is x (or,
            # for Python's mod with signs that differ, the divisor itself)
            keep_x = x.eq(0.0) | (x < 0.0).eq(y < 0.0) if not self.attr("fmod") else None
            at_inf = te.select(keep_x, x, y) if keep_x is not None else x
            finite_x = te.unary("abs", x) < float("inf")
            return te.select(te.unary("abs", y).eq(float("inf")) & finite_x, at_inf, r)
        r = te.binary("rem", x, y)
        if self.attr("fmod"):
            return r
        # the remainder takes the divisor's sign (Python's %)
        fix = r.ne(0) & (r < 0).ne(y < 0)
        return te.select(fix, r + y, r)


class ComparisonOp(BinaryBroadcastOp):
    PREDICATE: ClassVar[bool] = True


@irdl_op_definition
class EqualOp(ComparisonOp):
    name = "nnvm.equal"
    ACCEPTS: ClassVar[str] = "numeric"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.equal(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x.eq(y)


@irdl_op_definition
class NotEqualOp(ComparisonOp):
    name = "nnvm.not_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.not_equal(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x.ne(y)


@irdl_op_definition
class LessOp(ComparisonOp):
    name = "nnvm.less"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.less(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x < y


@irdl_op_definition
class LessEqualOp(ComparisonOp):
    name = "nnvm.less_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.less_equal(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x <= y


@irdl_op_definition
class GreaterOp(ComparisonOp):
    name = "nnvm.greater"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.greater(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x > y


@irdl_op_definition
class GreaterEqualOp(ComparisonOp):
    name = "nnvm.greater_equal"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.greater_equal(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x >= y


class LogicalOp(BinaryBroadcastOp):
    ACCEPTS: ClassVar[str] = "bool"


@irdl_op_definition
class LogicalAndOp(LogicalOp):
    name = "nnvm.logical_and"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logical_and(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x & y


@irdl_op_definition
class LogicalOrOp(LogicalOp):
    name = "nnvm.logical_or"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logical_or(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return x | y


@irdl_op_definition
class LogicalXorOp(LogicalOp):
    name = "nnvm.logical_xor"

    def compute(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.logical_xor(x, y)

    def te_scalar(self, x: Expr, y: Expr) -> Expr:
        return te.binary("xor", x, y)


@irdl_op_definition
class WhereOp(NNVMOp):
    """`where(cond, x, y)`: x where cond holds, else y; all three broadcast together."""

    name = "nnvm.where"
    condition = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        c, a, b = operand_types
        if not is_bool(c.element_type):
            raise ShapeError(f"where: condition must be a tensor of i1, got {c.element_type}")
        if a.element_type != b.element_type:
            raise ShapeError(
                f"where: branches have different element types {a.element_type} and {b.element_type}"
            )
        shape = broadcast_shapes(c.get_shape(), a.get_shape(), b.get_shape())
        return [tensor(shape, a.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        c, a, b = inputs
        return [np.where(c, a, b).astype(a.dtype, copy=False)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        return [topi.elementwise(b, inputs, te.select)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        (dz,) = grads
        zero = g.scalar(0.0, dz)
        dx = g.op("where", self.condition, dz, zero) if g.needs(1) else None
        dy = g.op("where", self.condition, zero, dz) if g.needs(2) else None
        return [
            None,
            None if dx is None else g.sum_to(dx, shape(self.lhs)),
            None if dy is None else g.sum_to(dy, shape(self.rhs)),
        ]


@irdl_op_definition
class AddNOp(NNVMOp):
    """The sum of any number of same-typed broadcastable tensors (ONNX Sum)."""

    name = "nnvm.add_n"
    inputs = var_operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("add_n needs at least one operand")
        elts = {t.element_type for t in operand_types}
        if len(elts) != 1:
            raise ShapeError("add_n operands must share an element type")
        shape = broadcast_shapes(*(t.get_shape() for t in operand_types))
        return [tensor(shape, operand_types[0].element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return [np.asarray(out).astype(inputs[0].dtype, copy=False)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        def total(*xs: Expr) -> Expr:
            out = xs[0]
            for x in xs[1:]:
                out = out + x
            return out

        return [topi.elementwise(b, inputs, total)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        (dz,) = grads
        return [g.sum_to(dz, shape(v)) if g.needs(k) else None for k, v in enumerate(self.inputs)]


BINARY_OPS = [
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    PowOp,
    MaximumOp,
    MinimumOp,
    ModOp,
    EqualOp,
    NotEqualOp,
    LessOp,
    LessEqualOp,
    GreaterOp,
    GreaterEqualOp,
    LogicalAndOp,
    LogicalOrOp,
    LogicalXorOp,
    WhereOp,
    AddNOp,
]
