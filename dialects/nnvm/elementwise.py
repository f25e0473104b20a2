"""Unary elementwise ops: one input, one output of the same shape (pattern kind: elemwise)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import NoGradient, VJPBuilder
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    float_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import element_type_of, is_bool, is_float, numpy_dtype_of
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


class UnaryElementwiseOp(NNVMOp):
    """Shared shape: `%y = nnvm.<op> %x : (T) -> T` with a numpy body."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.ELEMWISE))

    #: Which element types the op ACCEPTS: "float", "numeric" (float or integer) or "bool".
    ACCEPTS: ClassVar[str] = "float"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        elt = t.element_type
        ok = {
            "float": is_float(elt),
            "numeric": not is_bool(elt),
            "bool": is_bool(elt),
            "any": True,
        }[self.ACCEPTS]
        if not ok:
            raise ShapeError(f"{self.name} does not accept element type {elt}")
        return [t]

    def compute(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        (x,) = inputs
        with np.errstate(all="ignore"):
            return [np.asarray(self.compute(x)).astype(x.dtype, copy=False)]

    def te_scalar(self, x: Expr) -> Expr:
        """The formula of one element (the te definition is this, elementwise)."""
        raise NotImplementedError(f"{self.name} has no te definition")

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [b.compute(x.shape, lambda *i: self.te_scalar(x[i]))]

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        """The input's cotangent from the input `x`, the result `y` and its cotangent `dy`
        (None: the derivative is zero almost everywhere)."""
        raise NoGradient(f"{self.name} has no gradient")

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [self.vjp_dx(g, self.input, self.result, grads[0])]

    @classmethod
    def has_gradient(cls) -> bool:
        return cls.vjp_dx is not UnaryElementwiseOp.vjp_dx


@irdl_op_definition
class ReluOp(UnaryElementwiseOp):
    """max(x, 0)."""

    name = "nnvm.relu"
    ACCEPTS: ClassVar[str] = "numeric"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, np.zeros((), x.dtype))

    def te_scalar(self, x: Expr) -> Expr:
        return te.maximum(x, 0)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("where", g.op("greater", x, g.scalar(0.0, x)), dy, g.scalar(0.0, dy))


@irdl_op_definition
class LeakyReluOp(UnaryElementwiseOp):
    """x if x >= 0 else alpha * x."""

    name = "nnvm.leaky_relu"
    alpha = float_prop(0.01)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.where(x >= 0, x, x * x.dtype.type(self.attr("alpha")))

    def te_scalar(self, x: Expr) -> Expr:
        return te.select(x >= 0.0, x, x * self.attr("alpha"))

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        slope = g.op("mul", dy, g.scalar(self.attr("alpha"), dy))
        return g.op("where", g.op("greater_equal", x, g.scalar(0.0, x)), dy, slope)


@irdl_op_definition
class ClipOp(UnaryElementwiseOp):
    """min(max(x, min), max): ReLU6 is clip{min = 0.0, max = 6.0}."""

    name = "nnvm.clip"
    ACCEPTS: ClassVar[str] = "numeric"
    min = float_prop(-math.inf)
    max = float_prop(math.inf)

    def compute(self, x: np.ndarray) -> np.ndarray:
        lo, hi = self.attr("min"), self.attr("max")
        if np.issubdtype(x.dtype, np.integer):
            info = np.iinfo(x.dtype)
            lo = info.min if math.isinf(lo) else int(lo)
            hi = info.max if math.isinf(hi) else int(hi)
        return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))

    def te_scalar(self, x: Expr) -> Expr:
        lo, hi = self.attr("min"), self.attr("max")
        integer = not is_float(x.type)
        if not math.isinf(lo):
            x = te.maximum(x, int(lo) if integer else lo)
        if not math.isinf(hi):
            x = te.minimum(x, int(hi) if integer else hi)
        return x

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        lo, hi = self.attr("min"), self.attr("max")
        inside = None
        for bound, cmp in ((lo, "greater_equal"), (hi, "less_equal")):
            if not math.isinf(bound):
                c = g.op(cmp, x, g.scalar(bound, x))
                inside = c if inside is None else g.op("logical_and", inside, c)
        return dy if inside is None else g.op("where", inside, dy, g.scalar(0.0, dy))


@irdl_op_definition
class SigmoidOp(UnaryElementwiseOp):
    """1 / (1 + exp(-x))."""

    name = "nnvm.sigmoid"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    def te_scalar(self, x: Expr) -> Expr:
        return 1.0 / (1.0 + te.exp(-x))

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("mul", dy, g.op("mul", y, g.op("sub", g.scalar(1.0, y), y)))


@irdl_op_definition
class HardSigmoidOp(UnaryElementwiseOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "nnvm.hard_sigmoid"
    alpha = float_prop(0.2)
    beta = float_prop(0.5)

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.clip(x * self.attr("alpha") + self.attr("beta"), 0.0, 1.0)

    def te_scalar(self, x: Expr) -> Expr:
        return te.minimum(te.maximum(x * self.attr("alpha") + self.attr("beta"), 0.0), 1.0)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        a, b = self.attr("alpha"), self.attr("beta")
        z = g.op("add", g.op("mul", x, g.scalar(a, x)), g.scalar(b, x))
        inside = g.op(
            "logical_and",
            g.op("greater", z, g.scalar(0.0, z)),
            g.op("less", z, g.scalar(1.0, z)),
        )
        return g.op("where", inside, g.op("mul", dy, g.scalar(a, dy)), g.scalar(0.0, dy))


@irdl_op_definition
class HardSwishOp(UnaryElementwiseOp):
    """x * max(0, min(1, x / 6 + 1/2))."""

    name = "nnvm.hard_swish"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)

    def te_scalar(self, x: Expr) -> Expr:
        return x * te.minimum(te.maximum(x / 6.0 + 0.5, 0.0), 1.0)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        """0 below -3, 1 above 3, (2x + 3) / 6 between."""
        ramp = g.op("add", g.op("mul", x, g.scalar(1 / 3, x)), g.scalar(0.5, x))
        d = g.op("where", g.op("greater", x, g.scalar(3.0, x)), g.scalar(1.0, x), ramp)
        d = g.op("where", g.op("less", x, g.scalar(-3.0, x)), g.scalar(0.0, x), d)
        return g.op("mul", dy, d)


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "nnvm.tanh"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.tanh(x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("mul", dy, g.op("sub", g.scalar(1.0, y), g.op("mul", y, y)))


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    name = "nnvm.erf"

    def compute(self, x: np.ndarray) -> np.ndarray:
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return erf(x.astype(np.float64)) if x.size else x

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("erf", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        bell = g.op("exp", g.op("neg", g.op("mul", x, x)))
        return g.op("mul", dy, g.op("mul", bell, g.scalar(2 / math.sqrt(math.pi), x)))


@irdl_op_definition
class GeluOp(UnaryElementwiseOp):
    """x * Phi(x); approximate = "tanh" selects the tanh formula."""

    name = "nnvm.gelu"
    approximate = str_prop("none")

    def verify_(self) -> None:
        if self.attr("approximate") not in ("none", "tanh"):
            raise ShapeError('gelu approximate must be "none" or "tanh"')
        super().verify_()

    def compute(self, x: np.ndarray) -> np.ndarray:
        xd = x.astype(np.float64)
        if self.attr("approximate") == "tanh":
            return 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * xd * (1 + erf(xd / math.sqrt(2))) if x.size else x

    def te_scalar(self, x: Expr) -> Expr:
        if self.attr("approximate") == "tanh":
            inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
            return x * 0.5 * (te.tanh(inner) + 1.0)
        return x * 0.5 * (te.unary("erf", x * (1 / math.sqrt(2))) + 1.0)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        if self.attr("approximate") == "tanh":
            c = math.sqrt(2 / math.pi)
            x2 = g.op("mul", x, x)
            u = g.op(
                "mul",
                g.op(
                    "mul", x, g.op("add", g.op("mul", x2, g.scalar(0.044715, x)), g.scalar(1.0, x))
                ),
                g.scalar(c, x),
            )
            t = g.op("tanh", u)
            du = g.op(
                "mul",
                g.op("add", g.op("mul", x2, g.scalar(3 * 0.044715, x)), g.scalar(1.0, x)),
                g.scalar(c, x),
            )
            half_x = g.op("mul", x, g.scalar(0.5, x))
            d = g.op(
                "add",
                g.op("mul", g.op("add", t, g.scalar(1.0, t)), g.scalar(0.5, t)),
                g.op(
                    "mul", half_x, g.op("mul", g.op("sub", g.scalar(1.0, t), g.op("mul", t, t)), du)
                ),
            )
            return g.op("mul", dy, d)
        cdf = g.op(
            "mul",
            g.op(
                "add", g.op("erf", g.op("mul", x, g.scalar(1 / math.sqrt(2), x))), g.scalar(1.0, x)
            ),
            g.scalar(0.5, x),
        )
        pdf = g.op(
            "mul",
            g.op("exp", g.op("mul", g.op("mul", x, x), g.scalar(-0.5, x))),
            g.scalar(1 / math.sqrt(2 * math.pi), x),
        )
        return g.op("mul", dy, g.op("add", cdf, g.op("mul", x, pdf)))


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "nnvm.exp"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.exp(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.exp(x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("mul", dy, y)


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    name = "nnvm.log"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.log(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.log(x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("div", dy, x)


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "nnvm.sqrt"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.sqrt(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.sqrt(x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("div", g.op("mul", dy, g.scalar(0.5, dy)), y)


@irdl_op_definition
class RsqrtOp(UnaryElementwiseOp):
    """1 / sqrt(x): what batch-norm and layer-norm simplify into."""

    name = "nnvm.rsqrt"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / np.sqrt(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("rsqrt", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        """d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3."""
        y3 = g.op("mul", y, g.op("mul", y, y))
        return g.op("mul", dy, g.op("mul", y3, g.scalar(-0.5, y)))


@irdl_op_definition
class ReciprocalOp(UnaryElementwiseOp):
    name = "nnvm.reciprocal"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / x

    def te_scalar(self, x: Expr) -> Expr:
        return 1.0 / x

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("neg", g.op("mul", dy, g.op("mul", y, y)))


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    name = "nnvm.neg"
    ACCEPTS: ClassVar[str] = "numeric"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.negative(x)

    def te_scalar(self, x: Expr) -> Expr:
        return -x

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("neg", dy)


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    name = "nnvm.abs"
    ACCEPTS: ClassVar[str] = "numeric"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.abs(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("abs", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return g.op("where", g.op("less", x, g.scalar(0.0, x)), g.op("neg", dy), dy)


@irdl_op_definition
class FloorOp(UnaryElementwiseOp):
    name = "nnvm.floor"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.floor(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("floor", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return None  # piecewise constant


@irdl_op_definition
class CeilOp(UnaryElementwiseOp):
    name = "nnvm.ceil"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.ceil(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("ceil", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return None  # piecewise constant


@irdl_op_definition
class RoundOp(UnaryElementwiseOp):
    """Round half to even, as ONNX specifies."""

    name = "nnvm.round"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.round(x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary("roundeven", x)

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        return None  # piecewise constant


@irdl_op_definition
class LogicalNotOp(UnaryElementwiseOp):
    name = "nnvm.logical_not"
    ACCEPTS: ClassVar[str] = "bool"

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x)

    def te_scalar(self, x: Expr) -> Expr:
        return ~x


@irdl_op_definition
class IsNaNOp(UnaryElementwiseOp):
    """True where x is NaN: the result is a tensor of i1."""

    name = "nnvm.isnan"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = super().infer_result_types(operand_types)
        return [tensor(t.get_shape(), element_type_of(np.bool_))]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.isnan(inputs[0])]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [b.compute(x.shape, lambda *i: te.compare("uno", x[i], x[i]))]


@irdl_op_definition
class CastOp(UnaryElementwiseOp):
    """Element type conversion; the target is the declared result element type's `to`."""

    name = "nnvm.cast"
    ACCEPTS: ClassVar[str] = "any"
    to = str_prop()

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        try:
            elt = element_type_of(self.attr("to"))
        except TypeError as err:
            raise ShapeError(f"cast: {err}") from None
        return [tensor(t.get_shape(), elt)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            return [inputs[0].astype(np.dtype(self.attr("to")))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        to = element_type_of(self.attr("to"))
        if is_bool(to) and not is_bool(x.dtype):  # nonzero -> true, as numpy
            return [b.compute(x.shape, lambda *i: x[i].ne(0))]
        return [b.compute(x.shape, lambda *i: te.cast(x[i], to))]

    def vjp_dx(self, g: VJPBuilder, x: SSAValue, y: SSAValue, dy: SSAValue) -> SSAValue | None:
        if not (is_float(x.type.element_type) and is_float(y.type.element_type)):
            return None  # through integers or booleans nothing is differentiable
        return g.op("cast", dy, to=str(numpy_dtype_of(x.type.element_type)))


UNARY_OPS = [
    ReluOp,
    LeakyReluOp,
    ClipOp,
    SigmoidOp,
    HardSigmoidOp,
    HardSwishOp,
    TanhOp,
    ErfOp,
    GeluOp,
    ExpOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    ReciprocalOp,
    NegOp,
    AbsOp,
    FloorOp,
    CeilOp,
    RoundOp,
    LogicalNotOp,
    IsNaNOp,
    CastOp,
]
