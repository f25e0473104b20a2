"""Converters for elementwise ONNX ops: activations, arithmetic, comparisons, logic, casts."""

from __future__ import annotations

import math

import numpy as np

from nnvm.frontend.onnx.builder import Known, Unsupported, Value
from nnvm.frontend.onnx.registry import NodeContext, converter

# -- unary ---------------------------------------------------------------------------------------

_UNARY = {
    "Relu": "nnvm.relu",
    "Sigmoid": "nnvm.sigmoid",
    "Tanh": "nnvm.tanh",
    "Erf": "nnvm.erf",
    "Exp": "nnvm.exp",
    "Log": "nnvm.log",
    "Sqrt": "nnvm.sqrt",
    "Neg": "nnvm.neg",
    "Abs": "nnvm.abs",
    "Floor": "nnvm.floor",
    "Ceil": "nnvm.ceil",
    "Round": "nnvm.round",
    "Reciprocal": "nnvm.reciprocal",
    "Not": "nnvm.logical_not",
    "IsNaN": "nnvm.isnan",
    "HardSwish": "nnvm.hard_swish",
    "Sin": "nnvm.sin",
    "Cos": "nnvm.cos",
    "Tan": "nnvm.tan",
    "Asin": "nnvm.asin",
    "Acos": "nnvm.acos",
    "Atan": "nnvm.atan",
    "Sinh": "nnvm.sinh",
    "Cosh": "nnvm.cosh",
    "Asinh": "nnvm.asinh",
    "Acosh": "nnvm.acosh",
    "Atanh": "nnvm.atanh",
    "BitwiseNot": "nnvm.bitwise_not",
}


def _unary(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit(_UNARY[ctx.op_type], ctx.required(0))]


for _op in _UNARY:
    converter(_op, attrs=("consumed_inputs",))(_unary)


@converter("LeakyRelu", attrs=("alpha", "consumed_inputs"))
def _leaky_relu(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit("nnvm.leaky_relu", ctx.required(0), alpha=float(ctx.attr("alpha", 0.01)))]


@converter("HardSigmoid", attrs=("alpha", "beta", "consumed_inputs"))
def _hard_sigmoid(ctx: NodeContext) -> list[Value | None]:
    return [
        ctx.emit(
            "nnvm.hard_sigmoid",
            ctx.required(0),
            alpha=float(ctx.attr("alpha", 0.2)),
            beta=float(ctx.attr("beta", 0.5)),
        )
    ]


@converter("Gelu", attrs=("approximate",), since=20)
def _gelu(ctx: NodeContext) -> list[Value | None]:
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise Unsupported(f"approximate={approx!r} not supported")
    return [ctx.emit("nnvm.gelu", ctx.required(0), approximate=approx)]


@converter("Elu", attrs=("alpha", "consumed_inputs"))
def _elu(ctx: NodeContext) -> list[Value | None]:
    """x if x > 0 else alpha * (exp(x) - 1): composed, there is no graph op for it."""
    x = ctx.required(0)
    alpha = ctx.scalar(float(ctx.attr("alpha", 1.0)), x)
    neg = ctx.emit(
        "nnvm.mul", ctx.emit("nnvm.sub", ctx.emit("nnvm.exp", x), ctx.scalar(1, x)), alpha
    )
    return [ctx.emit("nnvm.where", ctx.emit("nnvm.greater", x, ctx.scalar(0, x)), x, neg)]


@converter("Selu", attrs=("alpha", "gamma", "consumed_inputs"))
def _selu(ctx: NodeContext) -> list[Value | None]:
    """gamma * (x if x > 0 else alpha * (exp(x) - 1))."""
    x = ctx.required(0)
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    neg = ctx.emit(
        "nnvm.mul",
        ctx.emit("nnvm.sub", ctx.emit("nnvm.exp", x), ctx.scalar(1, x)),
        ctx.scalar(alpha, x),
    )
    y = ctx.emit("nnvm.where", ctx.emit("nnvm.greater", x, ctx.scalar(0, x)), x, neg)
    return [ctx.emit("nnvm.mul", y, ctx.scalar(gamma, x))]


@converter("Celu", attrs=("alpha",))
def _celu(ctx: NodeContext) -> list[Value | None]:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    x = ctx.required(0)
    alpha = ctx.scalar(float(ctx.attr("alpha", 1.0)), x)
    zero = ctx.scalar(0, x)
    e = ctx.emit("nnvm.sub", ctx.emit("nnvm.exp", ctx.emit("nnvm.div", x, alpha)), ctx.scalar(1, x))
    neg = ctx.emit("nnvm.minimum", zero, ctx.emit("nnvm.mul", alpha, e))
    return [ctx.emit("nnvm.add", ctx.emit("nnvm.maximum", zero, x), neg)]


@converter("ThresholdedRelu", attrs=("alpha",))
def _thresholded_relu(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    cond = ctx.emit("nnvm.greater", x, ctx.scalar(float(ctx.attr("alpha", 1.0)), x))
    return [ctx.emit("nnvm.where", cond, x, ctx.scalar(0, x))]


@converter("Softsign")
def _softsign(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    return [
        ctx.emit("nnvm.div", x, ctx.emit("nnvm.add", ctx.emit("nnvm.abs", x), ctx.scalar(1, x)))
    ]


@converter("Sign")
def _sign(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    zero, one, minus = ctx.scalar(0, x), ctx.scalar(1, x), ctx.scalar(-1, x)
    negative = ctx.emit("nnvm.where", ctx.emit("nnvm.less", x, zero), minus, zero)
    return [ctx.emit("nnvm.where", ctx.emit("nnvm.greater", x, zero), one, negative)]


@converter("Shrink", attrs=("bias", "lambd"))
def _shrink(ctx: NodeContext) -> list[Value | None]:
    """x - bias above lambd, x + bias below -lambd, 0 between."""
    x = ctx.required(0)
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    zero = ctx.scalar(0, x)
    low = ctx.emit(
        "nnvm.where",
        ctx.emit("nnvm.less", x, ctx.scalar(-lambd, x)),
        ctx.emit("nnvm.add", x, ctx.scalar(bias, x)),
        zero,
    )
    high = ctx.emit("nnvm.sub", x, ctx.scalar(bias, x))
    return [ctx.emit("nnvm.where", ctx.emit("nnvm.greater", x, ctx.scalar(lambd, x)), high, low)]


@converter("Softplus")
def _softplus(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    return [ctx.emit("nnvm.log", ctx.emit("nnvm.add", ctx.emit("nnvm.exp", x), ctx.scalar(1, x)))]


@converter("Identity")
def _identity(ctx: NodeContext) -> list[Value | None]:
    return [ctx.required(0)]


@converter("Dropout", attrs=("ratio", "seed", "is_test", "consumed_inputs"))
def _dropout(ctx: NodeContext) -> list[Value | None]:
    """Inference: the identity, with an all-true mask when asked for one. Training mode is
    only accepted with ratio 0 (then it is the identity too)."""
    x = ctx.required(0)
    training = False
    ratio = float(ctx.attr("ratio", 0.5))
    if ctx.opset >= 12:
        r = ctx.const(1, "ratio")
        t = ctx.const(2, "training_mode")
        ratio = float(r) if r is not None else 0.5
        training = bool(t) if t is not None else False
    elif ctx.opset < 7:
        training = not ctx.attr("is_test", 0)
    if training and ratio != 0.0:
        raise Unsupported("training mode (random dropout) not supported")
    outs: list[Value | None] = [x]
    if ctx.num_outputs > 1:
        mask_dtype = np.bool_ if ctx.opset >= 10 else ctx.dtype(x)
        outs.append(ctx.known(np.ones(ctx.shape(x), dtype=mask_dtype), tag="mask"))
    return outs


# -- binary --------------------------------------------------------------------------------------

_BINARY = {
    "Add": "nnvm.add",
    "Sub": "nnvm.sub",
    "Mul": "nnvm.mul",
    "Div": "nnvm.div",
    "Equal": "nnvm.equal",
    "Less": "nnvm.less",
    "LessOrEqual": "nnvm.less_equal",
    "Greater": "nnvm.greater",
    "GreaterOrEqual": "nnvm.greater_equal",
    "And": "nnvm.logical_and",
    "Or": "nnvm.logical_or",
    "Xor": "nnvm.logical_xor",
    "BitwiseAnd": "nnvm.bitwise_and",
    "BitwiseOr": "nnvm.bitwise_or",
    "BitwiseXor": "nnvm.bitwise_xor",
}


def legacy_broadcast(ctx: NodeContext, a: Value, b: Value) -> Value:
    """Opset < 7 binary ops broadcast b only when `broadcast = 1`, aligned at `axis`."""
    if ctx.opset >= 7 or not ctx.attr("broadcast", 0):
        return b
    ra, rb = ctx.rank(a), ctx.rank(b)
    axis = ctx.attr("axis")
    if axis is None or rb == 0:
        return b
    axis = axis % ra if ra else 0
    trailing = ra - axis - rb
    if trailing <= 0:
        return b
    return ctx.emit("nnvm.reshape", b, shape=[*ctx.shape(b), *([1] * trailing)])


def _binary(ctx: NodeContext) -> list[Value | None]:
    a, b = ctx.required(0), ctx.required(1)
    b = legacy_broadcast(ctx, a, b)
    if ctx.op_type == "Equal" and ctx.dtype(a) == np.bool_:
        # equal is numeric-only in the dialect: bool equality is not-xor.
        return [ctx.emit("nnvm.logical_not", ctx.emit("nnvm.logical_xor", a, b))]
    return [ctx.emit(_BINARY[ctx.op_type], a, b)]


for _op in _BINARY:
    converter(_op, attrs=("broadcast", "axis", "consumed_inputs"))(_binary)


@converter("BitShift", attrs=("direction",))
def _bit_shift(ctx: NodeContext) -> list[Value | None]:
    direction = str(ctx.attr("direction", "")).lower()
    if direction not in ("left", "right"):
        raise Unsupported(f"direction must be LEFT or RIGHT, got {ctx.attr('direction')!r}")
    x, y = ctx.required(0), ctx.required(1)
    return [ctx.emit("nnvm.bit_shift", x, y, direction=direction)]


@converter("BitCast", attrs=("to",))
def _bit_cast(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    to = onnx_dtype(int(ctx.attr("to")))
    src = ctx.dtype(x)
    if np.bool_ in (to.type, src.type):
        # a bool is one byte of 0 or 1: to and from (u)int8 the bits are the value
        if {to.itemsize, src.itemsize} != {1}:
            raise Unsupported(f"a bit cast between {src} and {to} changes the width")
        if src == np.bool_:
            return [ctx.emit("nnvm.cast", x, to=to.name)]
        raise Unsupported("a bit cast to bool is not supported (bytes other than 0/1)")
    return [ctx.emit("nnvm.bitcast", x, to=to.name)]


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def _is_inf(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    hits = []
    if ctx.flag("detect_positive", 1):
        hits.append(ctx.emit("nnvm.equal", x, ctx.scalar(math.inf, x)))
    if ctx.flag("detect_negative", 1):
        hits.append(ctx.emit("nnvm.equal", x, ctx.scalar(-math.inf, x)))
    if not hits:
        return [ctx.known(np.zeros(ctx.shape(x), np.bool_), tag="none")]
    return [hits[0] if len(hits) == 1 else ctx.emit("nnvm.logical_or", *hits)]


@converter("Mod", attrs=("fmod",))
def _mod(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit("nnvm.mod", ctx.required(0), ctx.required(1), fmod=ctx.flag("fmod", 0))]


@converter("Pow", attrs=("broadcast", "axis"))
def _pow(ctx: NodeContext) -> list[Value | None]:
    """Pow allows a differently-typed exponent; the result has the base's type."""
    x, y = ctx.required(0), ctx.required(1)
    y = legacy_broadcast(ctx, x, y)
    xt, yt = ctx.dtype(x), ctx.dtype(y)
    if xt == yt:
        return [ctx.emit("nnvm.pow", x, y)]
    if xt.kind == "f":
        return [ctx.emit("nnvm.pow", x, ctx.emit("nnvm.cast", y, to=xt.name))]
    if yt.kind == "f":  # integer base, float exponent: compute in float, truncate back
        out = ctx.emit("nnvm.pow", ctx.emit("nnvm.cast", x, to=yt.name), y)
        return [ctx.emit("nnvm.cast", out, to=xt.name)]
    return [ctx.emit("nnvm.pow", x, ctx.emit("nnvm.cast", y, to=xt.name))]


@converter("Where")
def _where(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit("nnvm.where", ctx.required(0), ctx.required(1), ctx.required(2))]


def _variadic(ctx: NodeContext) -> list[Value]:
    values = [v for v in ctx.inputs if v is not None]
    if not values:
        raise Unsupported("needs at least one input")
    return values


@converter("Sum", attrs=("consumed_inputs",))
def _sum(ctx: NodeContext) -> list[Value | None]:
    values = _variadic(ctx)
    if len(values) == 1:
        return [values[0]]
    return [ctx.emit("nnvm.add_n", *values)]


@converter("Mean", attrs=("consumed_inputs",))
def _mean(ctx: NodeContext) -> list[Value | None]:
    values = _variadic(ctx)
    total = values[0] if len(values) == 1 else ctx.emit("nnvm.add_n", *values)
    if len(values) == 1:
        return [total]
    return [ctx.emit("nnvm.div", total, ctx.scalar(len(values), total))]


def _fold_pairwise(ctx: NodeContext, op: str) -> list[Value | None]:
    values = _variadic(ctx)
    out = values[0]
    for v in values[1:]:
        out = ctx.emit(op, out, v)
    return [out]


@converter("Min", attrs=("consumed_inputs",))
def _min(ctx: NodeContext) -> list[Value | None]:
    return _fold_pairwise(ctx, "nnvm.minimum")


@converter("Max", attrs=("consumed_inputs",))
def _max(ctx: NodeContext) -> list[Value | None]:
    return _fold_pairwise(ctx, "nnvm.maximum")


# -- clip and cast -------------------------------------------------------------------------------


def _known(v: Value | None) -> bool:
    """Absent (None) or known at import."""
    return v is None or isinstance(v, Known)


@converter("Clip", attrs=("min", "max", "consumed_inputs"))
def _clip(ctx: NodeContext) -> list[Value | None]:
    """Bounds known at import become clip's attributes; run-time bounds become max/min ops."""
    x = ctx.required(0)
    if ctx.opset < 11:
        lo = float(ctx.attr("min", -math.inf))
        hi = float(ctx.attr("max", math.inf))
        return [ctx.emit("nnvm.clip", x, min=lo, max=hi)]
    bounds: list[Value | None] = [ctx.input(1), ctx.input(2)]
    known = [None if b is None else np.asarray(b.array).reshape(()) for b in bounds if _known(b)]
    exact = all(v is None or abs(float(v)) < 2**53 for v in known)  # float attrs hold it exactly
    if len(known) == 2 and exact:
        lo = -math.inf if known[0] is None else float(known[0])
        hi = math.inf if known[1] is None else float(known[1])
        return [ctx.emit("nnvm.clip", x, min=lo, max=hi)]
    out = x
    if bounds[0] is not None:
        out = ctx.emit("nnvm.maximum", out, bounds[0])
    if bounds[1] is not None:
        out = ctx.emit("nnvm.minimum", out, bounds[1])
    return [out]


_ONNX_TYPE_NAMES = {
    "FLOAT": 1,
    "UINT8": 2,
    "INT8": 3,
    "UINT16": 4,
    "INT16": 5,
    "INT32": 6,
    "INT64": 7,
    "BOOL": 9,
    "FLOAT16": 10,
    "DOUBLE": 11,
    "UINT32": 12,
    "UINT64": 13,
}


def onnx_dtype(code: int | str) -> np.dtype:
    """Numpy dtype of an ONNX TensorProto data type (a name in opsets < 6)."""
    from onnx import TensorProto, helper

    from nnvm.dialects.nnvm.dtypes import element_type_of

    if isinstance(code, str):
        code = _ONNX_TYPE_NAMES.get(code.upper(), -1)
    try:
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(int(code)))
        element_type_of(dt)
        return dt
    except (KeyError, TypeError, ValueError):
        name = (
            TensorProto.DataType.Name(code) if code in TensorProto.DataType.values() else str(code)
        )
        raise Unsupported(f"element type {name} not supported") from None


def cast(ctx: NodeContext, x: Value, dtype: np.dtype) -> Value:
    if ctx.dtype(x) == dtype:
        return x
    return ctx.emit("nnvm.cast", x, to=dtype.name)


@converter("Cast", attrs=("to", "saturate", "round_mode"))
def _cast(ctx: NodeContext) -> list[Value | None]:
    return [cast(ctx, ctx.required(0), onnx_dtype(ctx.attr("to")))]


@converter("CastLike", attrs=("saturate", "round_mode"), since=15)
def _cast_like(ctx: NodeContext) -> list[Value | None]:
    return [cast(ctx, ctx.required(0), ctx.dtype(ctx.required(1)))]
