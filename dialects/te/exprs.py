"""The scalar vocabulary of te formulas: which arith/math op each formula spelling builds.

Both the formula parser and the Python builder (te definitions of graph ops) go through these
factories, so a formula printed from IR parses back into the same ops.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

INDEX = IndexType()
I1 = IntegerType(1)


class ExprTypeError(Exception):
    """A formula combines values whose types do not fit the operation."""


def scalar_type(t: Attribute) -> Attribute:
    """The element type of a vector type, or the type itself."""
    return t.element_type if isinstance(t, VectorType) else t


def is_float_type(t: Attribute) -> bool:
    return isinstance(scalar_type(t), Float16Type | Float32Type | Float64Type)


def is_index_type(t: Attribute) -> bool:
    return isinstance(scalar_type(t), IndexType)


def is_int_type(t: Attribute) -> bool:
    """Integers of any width (i1 included) and index."""
    return isinstance(scalar_type(t), IntegerType | IndexType)


def is_unsigned(t: Attribute) -> bool:
    s = scalar_type(t)
    return isinstance(s, IntegerType) and s.signedness.data == Signedness.UNSIGNED


def is_bool_type(t: Attribute) -> bool:
    return scalar_type(t) == I1


def float_width(t: Attribute) -> int:
    s = scalar_type(t)
    return {Float16Type: 16, Float32Type: 32, Float64Type: 64}[type(s)]


def int_width(t: Attribute) -> int:
    s = scalar_type(t)
    return 64 if isinstance(s, IndexType) else s.width.data  # type: ignore[union-attr]


# ----------------------------------------------------------------------------------------------
# Constants
# ----------------------------------------------------------------------------------------------


def constant(value: float | int | bool, t: Attribute) -> Operation:
    """A scalar `arith.constant` of type t (floats accept ints; bools are i1)."""
    if is_float_type(t):
        return arith.ConstantOp(FloatAttr(float(value), t))  # type: ignore[arg-type]
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprTypeError(f"the literal {value} is not an integer, but {t} is wanted")
        value = int(value)
    if t == I1:
        return arith.ConstantOp(IntegerAttr(-1 if value else 0, I1))
    return arith.ConstantOp(IntegerAttr(int(value), t))  # type: ignore[arg-type]


def constant_value(op: Operation) -> float | int | bool | None:
    """The Python value of a scalar arith.constant, or None for anything else."""
    if not isinstance(op, arith.ConstantOp):
        return None
    v = op.value
    if isinstance(v, FloatAttr):
        return float(v.value.data)
    if isinstance(v, IntegerAttr):
        if v.type == I1:
            return bool(v.value.data)
        return int(v.value.data)
    return None


# ----------------------------------------------------------------------------------------------
# Operations by formula spelling
# ----------------------------------------------------------------------------------------------

#: Infix operators: spelling -> (float op, signed int op, unsigned int op).
INFIX: dict[str, tuple[type[Operation] | None, type[Operation] | None, type[Operation] | None]] = {
    "+": (arith.AddfOp, arith.AddiOp, arith.AddiOp),
    "-": (arith.SubfOp, arith.SubiOp, arith.SubiOp),
    "*": (arith.MulfOp, arith.MuliOp, arith.MuliOp),
    "/": (arith.DivfOp, arith.DivSIOp, arith.DivUIOp),
}

#: Binary functions: name -> (float op, signed int op, unsigned int op).
BINARY_FUNCS: dict[
    str, tuple[type[Operation] | None, type[Operation] | None, type[Operation] | None]
] = {
    "max": (arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    "min": (arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp),
    "maxnum": (arith.MaxnumfOp, None, None),
    "minnum": (arith.MinnumfOp, None, None),
    "floordiv": (None, arith.FloorDivSIOp, arith.DivUIOp),
    "ceildiv": (None, arith.CeilDivSIOp, arith.CeilDivUIOp),
    "rem": (None, arith.RemSIOp, arith.RemUIOp),
    "and": (None, arith.AndIOp, arith.AndIOp),
    "or": (None, arith.OrIOp, arith.OrIOp),
    "xor": (None, arith.XOrIOp, arith.XOrIOp),
    "shl": (None, arith.ShLIOp, arith.ShLIOp),
    "shr": (None, arith.ShRSIOp, arith.ShRUIOp),
    "pow": (math.PowFOp, None, None),
    "atan2": (math.Atan2Op, None, None),
    "copysign": (math.CopySignOp, None, None),
}

#: Unary functions: name -> (float op, int op).
UNARY_FUNCS: dict[str, tuple[type[Operation] | None, type[Operation] | None]] = {
    "exp": (math.ExpOp, None),
    "exp2": (math.Exp2Op, None),
    "expm1": (math.ExpM1Op, None),
    "log": (math.LogOp, None),
    "log2": (math.Log2Op, None),
    "log1p": (math.Log1pOp, None),
    "tanh": (math.TanhOp, None),
    "sqrt": (math.SqrtOp, None),
    "rsqrt": (math.RsqrtOp, None),
    "erf": (math.ErfOp, None),
    "floor": (math.FloorOp, None),
    "ceil": (math.CeilOp, None),
    "round": (math.RoundOp, None),
    "roundeven": (math.RoundEvenOp, None),
    "trunc": (math.TruncOp, None),
    "sin": (math.SinOp, None),
    "cos": (math.CosOp, None),
    "tan": (math.TanOp, None),
    "atan": (math.AtanOp, None),
    "asin": (math.AsinOp, None),
    "acos": (math.AcosOp, None),
    "sinh": (math.SinhOp, None),
    "cosh": (math.CoshOp, None),
    "asinh": (math.AsinhOp, None),
    "acosh": (math.AcoshOp, None),
    "atanh": (math.AtanhOp, None),
    "abs": (math.AbsFOp, math.AbsIOp),
}

#: Infix comparisons and the predicates they mean for floats / signed / unsigned integers.
COMPARE: dict[str, tuple[str, str, str]] = {
    "<": ("olt", "slt", "ult"),
    "<=": ("ole", "sle", "ule"),
    ">": ("ogt", "sgt", "ugt"),
    ">=": ("oge", "sge", "uge"),
    "==": ("oeq", "eq", "eq"),
    "ne": ("une", "ne", "ne"),
}

CMPF_PREDICATES = [
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
]  # fmt: skip
CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _pick(ops: Sequence[type[Operation] | None], t: Attribute, what: str) -> type[Operation]:
    if is_float_type(t):
        chosen = ops[0]
    elif is_int_type(t):
        chosen = ops[2] if len(ops) > 2 and is_unsigned(t) else ops[1]
    else:
        chosen = None
    if chosen is None:
        raise ExprTypeError(f"'{what}' is not defined on {t}")
    return chosen


def _check_same(a: SSAValue, b: SSAValue, what: str) -> None:
    if a.type != b.type:
        raise ExprTypeError(f"'{what}' combines {a.type} and {b.type}")


def binary(spelling: str, a: SSAValue, b: SSAValue) -> Operation:
    """An infix operator or a binary function applied to two values of one type."""
    _check_same(a, b, spelling)
    table = INFIX.get(spelling) or BINARY_FUNCS.get(spelling)
    if table is None:
        raise ExprTypeError(f"unknown operation '{spelling}'")
    cls = _pick(table, a.type, spelling)
    return cls.create(operands=[a, b], result_types=[a.type])


def unary(name: str, x: SSAValue) -> Operation:
    if name == "neg":
        if is_float_type(x.type):
            return arith.NegfOp(x)
        raise ExprTypeError("unary minus on integers is written 0 - x")
    if name == "not":
        if not is_int_type(x.type):
            raise ExprTypeError(f"'not' is not defined on {x.type}")
        raise ExprTypeError("'not' is built with xor(x, true)")  # handled by callers
    table = UNARY_FUNCS.get(name)
    if table is None:
        raise ExprTypeError(f"unknown function '{name}'")
    cls = _pick(table, x.type, name)
    return cls.create(operands=[x], result_types=[x.type])


def compare(predicate: str, a: SSAValue, b: SSAValue) -> Operation:
    """`arith.cmpf`/`arith.cmpi` with an explicit predicate name."""
    _check_same(a, b, predicate)
    result = I1 if not isinstance(a.type, VectorType) else VectorType(I1, a.type.get_shape())
    if is_float_type(a.type):
        if predicate not in CMPF_PREDICATES:
            raise ExprTypeError(f"'{predicate}' is not a float comparison")
        op = arith.CmpfOp(a, b, predicate)
    elif is_int_type(a.type):
        if predicate not in CMPI_PREDICATES:
            raise ExprTypeError(f"'{predicate}' is not an integer comparison")
        op = arith.CmpiOp(a, b, predicate)
    else:
        raise ExprTypeError(f"cannot compare values of type {a.type}")
    assert op.result.type == result
    return op


def compare_infix(spelling: str, a: SSAValue, b: SSAValue) -> Operation:
    """`<`, `<=`, `>`, `>=`, `==`, `ne`: ordered for floats, signedness from the type."""
    _check_same(a, b, spelling)
    preds = COMPARE[spelling]
    if is_float_type(a.type):
        pred = preds[0]
    else:
        pred = preds[2] if is_unsigned(a.type) else preds[1]
    return compare(pred, a, b)


def infix_predicate(op: Operation) -> str | None:
    """The infix spelling that parses back into this comparison, if there is one."""
    if isinstance(op, arith.CmpfOp):
        pred = CMPF_PREDICATES[op.predicate.value.data]
        column = 0
    elif isinstance(op, arith.CmpiOp):
        pred = CMPI_PREDICATES[op.predicate.value.data]
        column = 2 if is_unsigned(op.lhs.type) else 1
    else:
        return None
    for spelling, preds in COMPARE.items():
        if preds[column] == pred:
            return spelling
    return None


def predicate_name(op: Operation) -> str:
    if isinstance(op, arith.CmpfOp):
        return CMPF_PREDICATES[op.predicate.value.data]
    assert isinstance(op, arith.CmpiOp)
    return CMPI_PREDICATES[op.predicate.value.data]


def select(c: SSAValue, a: SSAValue, b: SSAValue) -> Operation:
    if not is_bool_type(c.type):
        raise ExprTypeError(f"select needs an i1 condition, got {c.type}")
    _check_same(a, b, "select")
    return arith.SelectOp(c, a, b)


def cast(x: SSAValue, to: Attribute) -> Operation | None:
    """The conversion op from x's type to `to` (None when the types are equal)."""
    src = x.type
    if src == to:
        return None
    if is_index_type(src) or is_index_type(to):
        if is_int_type(src) and is_int_type(to):
            return arith.IndexCastOp(x, to)
        if is_float_type(to):  # index -> float goes through i64
            raise ExprTypeError("cast index values to i64 before casting them to a float")
        raise ExprTypeError(f"cannot cast {src} to {to}")
    if is_float_type(src) and is_float_type(to):
        if float_width(to) > float_width(src):
            return arith.ExtFOp(x, to)
        return arith.TruncFOp(x, to)
    if is_int_type(src) and is_float_type(to):
        if is_unsigned(src) or is_bool_type(src):
            return arith.UIToFPOp(x, to)
        return arith.SIToFPOp(x, to)
    if is_float_type(src) and is_int_type(to):
        if is_unsigned(to) or is_bool_type(to):
            return arith.FPToUIOp(x, to)
        return arith.FPToSIOp(x, to)
    if is_int_type(src) and is_int_type(to):
        ws, wt = int_width(src), int_width(to)
        if wt > ws:
            if is_unsigned(src) or is_bool_type(src):
                return arith.ExtUIOp(x, to)
            return arith.ExtSIOp(x, to)
        if wt < ws:
            return arith.TruncIOp(x, to)
        # same width, different signedness: a bit-preserving reinterpretation
        return arith.BitcastOp(x, to)
    raise ExprTypeError(f"cannot cast {src} to {to}")


CAST_OPS: tuple[type[Operation], ...] = (
    arith.IndexCastOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.UIToFPOp,
    arith.SIToFPOp,
    arith.FPToUIOp,
    arith.FPToSIOp,
    arith.ExtUIOp,
    arith.ExtSIOp,
    arith.TruncIOp,
    arith.BitcastOp,
)


def identity_value(kind: str, t: Attribute) -> float | int:
    """The identity of a commutative reduction (sum 0, prod 1, max -inf, min +inf)."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if is_float_type(t):
        return -pymath.inf if kind == "max" else pymath.inf
    if is_bool_type(t):
        return 0 if kind == "max" else 1
    w = int_width(t)
    if is_unsigned(t):
        return 0 if kind == "max" else (1 << w) - 1
    return -(1 << (w - 1)) if kind == "max" else (1 << (w - 1)) - 1


REDUCE_KINDS = ("sum", "prod", "max", "min")


def combine(kind: str, acc: SSAValue, x: SSAValue) -> Operation:
    """The combiner of a reduction kind."""
    spelling = {"sum": "+", "prod": "*", "max": "max", "min": "min"}[kind]
    return binary(spelling, acc, x)


def default_float() -> Attribute:
    from xdsl.dialects.builtin import f32

    return f32


def int_type(width: int) -> Attribute:
    return IntegerType(width)


def element_bits(elt: object) -> int:
    """Bits of a float or (non-bool) integer element; 32 for the rest (i1, index)."""
    if is_float_type(elt):  # type: ignore[arg-type]
        return float_width(elt)  # type: ignore[arg-type]
    if is_int_type(elt) and not is_bool_type(elt):  # type: ignore[arg-type]
        return int_width(elt)  # type: ignore[arg-type]
    return 32


def native_lanes(elt: object, vector_bits: int) -> int:
    """Lanes of `elt` in one vector register of `vector_bits`."""
    return max(vector_bits // element_bits(elt), 1)
