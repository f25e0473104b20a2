"""The custom syntax of `te.compute`: the formula of one element, printed and parsed.

    %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j]
           : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>

Formulas use infix `+ - * /` and `< <= > >= ==`, unary minus, function calls (`max`, `exp`,
`select`, `floordiv`, `cast<f32>(...)`, `cmpf.uno(...)`, ...; see exprs.py), tensor reads
`%T[e, ...]`, index variables by axis name, and `let x = e in ...` for values used twice.
Literals take the type of their context (an index, the other operand, the result), else
index / f32 / i1; `(2.0 : f64)` spells a literal whose type the context does not give. The
tensor types after the colon list the tensors the formula reads, in order of first appearance.

A body that uses an op outside this vocabulary is printed as a plain region instead:
`te.compute "C" [i] { ^bb0(%i: index): ... te.yield %v : f32 } : () -> tensor<4xf32>`.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

from nnvm.dialects.te import exprs
from nnvm.dialects.te.exprs import I1, INDEX, ExprTypeError

if TYPE_CHECKING:
    from nnvm.dialects.te.ops import ComputeOp

# ----------------------------------------------------------------------------------------------
# The formula AST (parsed first; typed and built once the tensor types are known)
# ----------------------------------------------------------------------------------------------


@dataclass
class Node:
    pos: int


@dataclass
class Lit(Node):
    value: float | int | bool
    type: Attribute | None = None


@dataclass
class Var(Node):
    name: str


@dataclass
class Read(Node):
    tensor: UnresolvedOperand
    indices: list[Node]


@dataclass
class Call(Node):
    name: str
    args: list[Node]
    type_param: Attribute | None = None


@dataclass
class Bin(Node):
    op: str
    lhs: Node
    rhs: Node


@dataclass
class Neg(Node):
    operand: Node


@dataclass
class Let(Node):
    name: str
    value: Node
    body: Node


_CMP_TOKENS = ("<", "<=", ">", ">=", "==")


class FormulaParser:
    """Recursive descent over xDSL's lexer (so `%names` and types parse as everywhere else)."""

    def __init__(self, parser: Parser):
        self.p = parser

    def formula(self) -> Node:
        pos = self.p.pos
        if self.p.parse_optional_keyword("let") is not None:
            name = self.p.parse_identifier(" after 'let'")
            self.p.parse_punctuation("=")
            value = self.expr()
            self.p.parse_keyword("in")
            return Let(pos, name, value, self.formula())
        return self.expr()

    def expr(self) -> Node:
        lhs = self.additive()
        pos = self.p.pos
        op = self._compare_token()
        if op is None:
            return lhs
        return Bin(pos, op, lhs, self.additive())

    def _compare_token(self) -> str | None:
        p = self.p
        if p.parse_optional_punctuation("<") is not None:
            return "<=" if p.parse_optional_punctuation("=") is not None else "<"
        if p.parse_optional_punctuation(">") is not None:
            return ">=" if p.parse_optional_punctuation("=") is not None else ">"
        if p.parse_optional_punctuation("=") is not None:
            p.parse_punctuation("=", " (comparisons are written ==)")
            return "=="
        return None

    def additive(self) -> Node:
        node = self.multiplicative()
        while True:
            pos = self.p.pos
            if self.p.parse_optional_punctuation("+") is not None:
                node = Bin(pos, "+", node, self.multiplicative())
            elif self.p.parse_optional_punctuation("-") is not None:
                node = Bin(pos, "-", node, self.multiplicative())
            else:
                return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while True:
            pos = self.p.pos
            if self.p.parse_optional_punctuation("*") is not None:
                node = Bin(pos, "*", node, self.unary())
            elif self.p.parse_optional_punctuation("/") is not None:
                node = Bin(pos, "/", node, self.unary())
            else:
                return node

    def unary(self) -> Node:
        pos = self.p.pos
        if self.p.parse_optional_punctuation("-") is not None:
            inner = self.unary()
            if isinstance(inner, Lit) and not isinstance(inner.value, bool):
                return Lit(pos, -inner.value, inner.type)
            return Neg(pos, inner)
        return self.primary()

    def primary(self) -> Node:
        p = self.p
        pos = p.pos
        if p.parse_optional_punctuation("(") is not None:
            inner = self.formula()
            if p.parse_optional_punctuation(":") is not None:
                t = p.parse_type()
                if not isinstance(inner, Lit):
                    p.raise_error("only a literal can be given a type with ':'", pos, p.pos)
                inner.type = t
            p.parse_punctuation(")")
            return inner
        operand = p.parse_optional_unresolved_operand()
        if operand is not None:
            indices = p.parse_comma_separated_list(p.Delimiter.SQUARE, self.expr)
            return Read(pos, operand, indices)
        number = p.parse_optional_number()
        if number is not None:
            return Lit(pos, number)
        ident = p.parse_optional_identifier()
        if ident is None:
            p.raise_error("expected a formula: a literal, an axis, %tensor[...] or a call")
        if ident in ("true", "false"):
            return Lit(pos, ident == "true", I1)
        if ident in ("inf", "nan"):
            return Lit(pos, math.inf if ident == "inf" else math.nan)
        type_param = None
        if ident == "cast":
            p.parse_punctuation("<")
            type_param = p.parse_type()
            p.parse_punctuation(">")
        if p.parse_optional_punctuation("(") is not None:
            args: list[Node] = []
            if p.parse_optional_punctuation(")") is None:
                args.append(self.formula())
                while p.parse_optional_punctuation(",") is not None:
                    args.append(self.formula())
                p.parse_punctuation(")")
            return Call(pos, ident, args, type_param)
        if type_param is not None:
            p.raise_error("cast<T> needs an argument: cast<T>(x)", pos, p.pos)
        return Var(pos, ident)


# ----------------------------------------------------------------------------------------------
# Building ops from the AST
# ----------------------------------------------------------------------------------------------


class Elaborator:
    """Types the AST (literals from context) and appends the ops to the formula block."""

    def __init__(
        self,
        parser: Parser,
        block: Block,
        env: dict[str, SSAValue],
        tensors: dict[tuple[str, int], SSAValue],
    ):
        self.p = parser
        self.block = block
        self.env = env
        self.tensors = tensors

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def fail(self, node: Node, message: str) -> None:
        self.p.raise_error(message, node.pos, node.pos + 1)

    @staticmethod
    def is_literal(node: Node) -> bool:
        return isinstance(node, Lit) and node.type is None

    def pair(self, a: Node, b: Node, expected: Attribute | None) -> tuple[SSAValue, SSAValue]:
        """Two operands of one type: an untyped literal takes its sibling's type."""
        if self.is_literal(a) and not self.is_literal(b):
            vb = self.build(b, expected)
            return self.build(a, vb.type), vb
        va = self.build(a, expected)
        return va, self.build(b, va.type if self.is_literal(b) else expected)

    def build(self, node: Node, expected: Attribute | None) -> SSAValue:
        try:
            return self._build(node, expected)
        except ExprTypeError as err:
            self.fail(node, str(err))
            raise AssertionError from err  # fail() raises

    def _build(self, node: Node, expected: Attribute | None) -> SSAValue:
        if isinstance(node, Lit):
            return self._literal(node, expected)
        if isinstance(node, Var):
            if node.name not in self.env:
                self.fail(node, f"unknown axis or let-name '{node.name}'")
            return self.env[node.name]
        if isinstance(node, Read):
            return self._read(node)
        if isinstance(node, Let):
            value = self.build(node.value, None)
            saved = self.env.get(node.name)
            self.env[node.name] = value
            result = self.build(node.body, expected)
            if saved is None:
                del self.env[node.name]
            else:
                self.env[node.name] = saved
            return result
        if isinstance(node, Neg):
            x = self.build(node.operand, expected)
            if exprs.is_float_type(x.type):
                return self.add(exprs.unary("neg", x))
            zero = self.add(exprs.constant(0, x.type))
            return self.add(exprs.binary("-", zero, x))
        if isinstance(node, Bin):
            if node.op in _CMP_TOKENS:
                a, b = self.pair(node.lhs, node.rhs, None)
                return self.add(exprs.compare_infix(node.op, a, b))
            a, b = self.pair(node.lhs, node.rhs, expected)
            return self.add(exprs.binary(node.op, a, b))
        assert isinstance(node, Call)
        return self._call(node, expected)

    def _literal(self, node: Lit, expected: Attribute | None) -> SSAValue:
        t = node.type or expected or _default_literal_type(node.value)
        if isinstance(node.value, bool) and t != I1:
            self.fail(node, f"a boolean literal cannot have type {t}")
        if (
            isinstance(node.value, float)
            and exprs.is_int_type(t)
            and not (math.isfinite(node.value) and node.value.is_integer())
        ):
            self.fail(node, f"the literal {node.value} cannot have type {t}")
        return self.add(exprs.constant(node.value, t))

    def _read(self, node: Read) -> SSAValue:
        from nnvm.dialects.te.ops import ReadOp

        tensor = self.tensors[_key(node.tensor)]
        t = tensor.type
        if not isinstance(t, TensorType):
            self.fail(node, f"%{node.tensor.operand_name} is not a tensor")
        assert isinstance(t, TensorType)
        if len(node.indices) != len(t.get_shape()):
            self.fail(
                node,
                f"%{node.tensor.operand_name} has rank {len(t.get_shape())}, but is read with "
                f"{len(node.indices)} indices",
            )
        indices = []
        for i in node.indices:
            v = self.build(i, INDEX)
            if v.type != INDEX:
                self.fail(i, f"a tensor index must be an index, got {v.type}")
            indices.append(v)
        return self.add(ReadOp(tensor, indices))

    def _call(self, node: Call, expected: Attribute | None) -> SSAValue:
        name, args = node.name, node.args

        def arity(n: int) -> None:
            if len(args) != n:
                self.fail(node, f"'{name}' takes {n} argument(s), got {len(args)}")

        if name == "select":
            arity(3)
            c = self.build(args[0], I1)
            a, b = self.pair(args[1], args[2], expected)
            return self.add(exprs.select(c, a, b))
        if name == "cast":
            arity(1)
            x = self.build(args[0], None)
            assert node.type_param is not None
            op = exprs.cast(x, node.type_param)
            return x if op is None else self.add(op)
        if name == "not":
            arity(1)
            x = self.build(args[0], expected)
            ones = self.add(exprs.constant(True if x.type == I1 else -1, x.type))
            return self.add(exprs.binary("xor", x, ones))
        if name == "ne":
            arity(2)
            a, b = self.pair(args[0], args[1], None)
            return self.add(exprs.compare_infix("ne", a, b))
        if name.startswith(("cmpf.", "cmpi.")):
            arity(2)
            a, b = self.pair(args[0], args[1], None)
            if exprs.is_float_type(a.type) != name.startswith("cmpf."):
                self.fail(node, f"'{name}' does not compare values of type {a.type}")
            return self.add(exprs.compare(name[5:], a, b))
        if name in exprs.BINARY_FUNCS:
            arity(2)
            a, b = self.pair(args[0], args[1], expected)
            return self.add(exprs.binary(name, a, b))
        if name in exprs.UNARY_FUNCS:
            arity(1)
            return self.add(exprs.unary(name, self.build(args[0], expected)))
        self.fail(node, f"unknown function '{name}'")
        raise AssertionError


def _default_literal_type(value: float | int | bool) -> Attribute:
    if isinstance(value, bool):
        return I1
    if isinstance(value, int):
        return INDEX
    return exprs.default_float()


# ----------------------------------------------------------------------------------------------
# Parsing te.compute
# ----------------------------------------------------------------------------------------------


def _parse_axis_list(parser: Parser, with_extents: bool) -> list[tuple[str, int]]:
    def one() -> tuple[str, int]:
        name = parser.parse_identifier(" (an axis name)")
        extent = 0
        if with_extents:
            parser.parse_punctuation(":")
            extent = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return name, extent

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, one)


def parse_compute(cls: type[ComputeOp], parser: Parser) -> ComputeOp:
    from nnvm.dialects.te.ops import YieldOp, make_compute_block

    start = parser.pos
    tag = parser.parse_str_literal(" (the stage name)")
    spatial = [n for n, _ in _parse_axis_list(parser, False)]
    reduce_kind = parser.parse_optional_keyword_in(exprs.REDUCE_KINDS)
    reduce_axes: list[tuple[str, int]] = []
    if reduce_kind is not None:
        reduce_axes = _parse_axis_list(parser, True)
    template = None
    if parser.parse_optional_keyword("template") is not None:
        template = parser.parse_str_literal()
    names = spatial + [n for n, _ in reduce_axes]
    ast: Node | None = None
    region: Region | None = None
    if parser.parse_optional_punctuation("=") is not None:
        ast = FormulaParser(parser).formula()
    else:
        region = parser.parse_region()
    parser.parse_punctuation(":")
    in_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    out_type = parser.parse_type()
    attrs = parser.parse_optional_attr_dict()
    if not isinstance(out_type, TensorType):
        parser.raise_error(f"te.compute produces a ranked tensor, got {out_type}", start)
    assert isinstance(out_type, TensorType)
    if len(spatial) != len(out_type.get_shape()):
        parser.raise_error(
            f"te.compute has {len(spatial)} spatial axes but its result has rank "
            f"{len(out_type.get_shape())}",
            start,
        )
    if ast is not None:
        reads: list[UnresolvedOperand] = []
        _collect_reads(ast, reads)
        if len(reads) != len(in_types):
            parser.raise_error(
                f"the formula reads {len(reads)} tensor(s), but {len(in_types)} type(s) are given",
                start,
            )
        tensors = {
            _key(r): parser.resolve_operand(r, t) for r, t in zip(reads, in_types, strict=True)
        }
        block = make_compute_block(len(names), names)
        env = dict(zip(names, block.args, strict=True))
        value = Elaborator(parser, block, env, tensors).build(ast, out_type.element_type)
        if value.type != out_type.element_type:
            parser.raise_error(
                f"the formula computes {value.type}, but the result holds {out_type.element_type}",
                start,
            )
        block.add_op(YieldOp(value))
        region = Region(block)
    assert region is not None
    op = cls(tag, out_type, names, region, reduce_kind, [e for _, e in reduce_axes], template)
    op.attributes.update(attrs)
    return op


def _key(u: UnresolvedOperand) -> tuple[str, int]:
    return (u.operand_name, u.index)


def _collect_reads(node: Node, out: list[UnresolvedOperand]) -> None:
    if isinstance(node, Read):
        if all(_key(r) != _key(node.tensor) for r in out):
            out.append(node.tensor)
        for i in node.indices:
            _collect_reads(i, out)
    elif isinstance(node, Call):
        for a in node.args:
            _collect_reads(a, out)
    elif isinstance(node, Bin):
        _collect_reads(node.lhs, out)
        _collect_reads(node.rhs, out)
    elif isinstance(node, Neg):
        _collect_reads(node.operand, out)
    elif isinstance(node, Let):
        _collect_reads(node.value, out)
        _collect_reads(node.body, out)


# ----------------------------------------------------------------------------------------------
# Printing
# ----------------------------------------------------------------------------------------------

_PREC_CMP, _PREC_ADD, _PREC_MUL, _PREC_UNARY, _PREC_ATOM = 1, 2, 3, 4, 5
_INFIX_PREC = {"+": _PREC_ADD, "-": _PREC_ADD, "*": _PREC_MUL, "/": _PREC_MUL}


class _NotPrintable(Exception):
    """The body holds an op the formula syntax cannot say: print a region instead."""


def _spelling_of(op: Operation) -> tuple[str, str] | None:
    """('infix' | 'binary' | 'unary', spelling) that parses back into exactly this op."""
    if not op.operands:
        return None
    t = op.operands[0].type
    if len(op.operands) == 2:
        for kind, table in (("infix", exprs.INFIX), ("binary", exprs.BINARY_FUNCS)):
            for spelling, ops in table.items():
                try:
                    if exprs._pick(ops, t, spelling) is type(op):
                        return kind, spelling
                except ExprTypeError:
                    pass
    if len(op.operands) == 1:
        for name, (f_op, i_op) in exprs.UNARY_FUNCS.items():
            try:
                if exprs._pick((f_op, i_op, i_op), t, name) is type(op):
                    return "unary", name
            except ExprTypeError:
                pass
    return None


def float_text(v: float, t: Attribute | None = None) -> str:
    """The shortest literal that reads back as the same value of type t (always with a dot,
    so the lexer sees a float; inf and nan by name)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    width = exprs.float_width(t) if t is not None and exprs.is_float_type(t) else 64
    text = repr(float(v)) if width == 64 else str({16: np.float16, 32: np.float32}[width](v))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def type_text(t: Attribute) -> str:
    out = io.StringIO()
    Printer(stream=out).print_attribute(t)
    return out.getvalue()


class FormulaPrinter:
    """Renders a formula block as text; raises _NotPrintable for ops outside the vocabulary."""

    def __init__(self, compute: ComputeOp, printer: Printer):
        self.compute = compute
        self.printer = printer
        self.block = compute.block
        self.names: dict[SSAValue, str] = dict(zip(self.block.args, compute.names, strict=True))
        self.reads: list[SSAValue] = []

    def uses_in_block(self, v: SSAValue) -> int:
        return sum(1 for use in v.uses if use.operation.parent_block() is self.block)

    def render(self) -> tuple[str, list[Attribute]]:
        lets: list[str] = []
        taken = set(self.compute.names)
        counter = 0
        for op in self.block.ops:
            self._check(op)
        for op in self.block.ops:
            if isinstance(op, arith.ConstantOp) or not op.results:
                continue
            v = op.results[0]
            if self.uses_in_block(v) > 1:
                while f"v{counter}" in taken:
                    counter += 1
                name = f"v{counter}"
                taken.add(name)
                text, _ = self.expr(v, None)
                lets.append(f"let {name} = {text} in ")
                self.names[v] = name
        body, _ = self.expr(self.compute.yielded, self.compute.element_type)
        return "".join(lets) + body, [t.type for t in self.reads]

    def _check(self, op: Operation) -> None:
        from nnvm.dialects.te.ops import ReadOp, YieldOp

        if op.attributes:
            raise _NotPrintable
        flags = op.properties.get("fastmath")
        if flags is not None and flags != arith.FastMathFlagsAttr("none"):
            raise _NotPrintable
        if isinstance(op, ReadOp | YieldOp | arith.SelectOp | arith.NegfOp):
            return
        if isinstance(op, arith.CmpfOp | arith.CmpiOp):
            if isinstance(op, arith.CmpiOp) and exprs.is_float_type(op.lhs.type):
                raise _NotPrintable
            return
        if isinstance(op, arith.ConstantOp):
            if exprs.constant_value(op) is None:
                raise _NotPrintable
            return
        if isinstance(op, exprs.CAST_OPS):
            try:
                rebuilt = exprs.cast(op.operands[0], op.results[0].type)
            except ExprTypeError:
                raise _NotPrintable from None
            if type(rebuilt) is not type(op):
                raise _NotPrintable
            return
        if _spelling_of(op) is None:
            raise _NotPrintable

    def is_literal(self, v: SSAValue) -> bool:
        return isinstance(v.owner, arith.ConstantOp) and v not in self.names

    def literal(self, op: Operation, expected: Attribute | None) -> tuple[str, int]:
        value = exprs.constant_value(op)
        assert value is not None
        t = op.results[0].type
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif exprs.is_float_type(t):
            text = float_text(float(value), t)
        else:
            text = str(int(value))
        # what the parser would give this literal here
        if isinstance(value, bool):
            natural: Attribute = I1
        elif exprs.is_float_type(t):
            natural = (
                expected
                if expected is not None and exprs.is_float_type(expected)
                else exprs.default_float()
            )
        else:
            natural = expected if expected is not None else INDEX
        if natural == t:
            return text, (_PREC_UNARY if text.startswith("-") else _PREC_ATOM)
        return f"({text} : {type_text(t)})", _PREC_ATOM

    def pair_expected(
        self, a: SSAValue, b: SSAValue, expected: Attribute | None
    ) -> tuple[Attribute | None, Attribute | None]:
        """Mirror Elaborator.pair: which type each side's literal would get."""
        la, lb = self.is_literal(a), self.is_literal(b)
        if la and not lb:
            return b.type, expected
        if lb and not la:
            return expected, a.type
        return expected, expected

    def ssa(self, v: SSAValue) -> str:
        saved = self.printer.stream
        out = io.StringIO()
        self.printer.stream = out
        try:
            self.printer.print_operand(v)
        finally:
            self.printer.stream = saved
        return out.getvalue()

    def expr(self, v: SSAValue, expected: Attribute | None) -> tuple[str, int]:
        from nnvm.dialects.te.ops import ReadOp

        if v in self.names:
            return self.names[v], _PREC_ATOM
        op = v.owner
        assert isinstance(op, Operation)
        if isinstance(op, arith.ConstantOp):
            return self.literal(op, expected)
        if isinstance(op, ReadOp):
            if op.tensor not in self.reads:
                self.reads.append(op.tensor)
            idx = ", ".join(self.expr(i, INDEX)[0] for i in op.indices)
            return f"{self.ssa(op.tensor)}[{idx}]", _PREC_ATOM
        if isinstance(op, arith.SelectOp):
            ea, eb = self.pair_expected(op.lhs, op.rhs, expected)
            c = self.expr(op.cond, I1)[0]
            a, b = self.expr(op.lhs, ea)[0], self.expr(op.rhs, eb)[0]
            return f"select({c}, {a}, {b})", _PREC_ATOM
        if isinstance(op, arith.CmpfOp | arith.CmpiOp):
            return self._compare(op)
        if isinstance(op, exprs.CAST_OPS):
            x = self.expr(op.operands[0], None)[0]
            return f"cast<{type_text(op.results[0].type)}>({x})", _PREC_ATOM
        if isinstance(op, arith.NegfOp):
            x, px = self.expr(op.operand, expected)
            if px >= _PREC_UNARY and not x.startswith("-"):
                return f"-{x}", _PREC_UNARY
            return f"-({x})", _PREC_UNARY
        spelled = _spelling_of(op)
        assert spelled is not None
        kind, spelling = spelled
        if kind == "unary":
            return f"{spelling}({self.expr(op.operands[0], expected)[0]})", _PREC_ATOM
        a_v, b_v = op.operands
        if spelling == "xor" and self._is_all_ones(b_v):
            return f"not({self.expr(a_v, expected)[0]})", _PREC_ATOM
        ea, eb = self.pair_expected(a_v, b_v, expected)
        a, pa = self.expr(a_v, ea)
        b, pb = self.expr(b_v, eb)
        if kind == "binary":
            return f"{spelling}({a}, {b})", _PREC_ATOM
        if spelling == "-" and self.is_literal(a_v) and exprs.constant_value(a_v.owner) == 0:  # type: ignore[arg-type]
            if a_v.type == b_v.type and not exprs.is_float_type(a_v.type):
                return f"0 - {b if pb > _PREC_ADD else f'({b})'}", _PREC_ADD
        prec = _INFIX_PREC[spelling]
        a = a if pa >= prec else f"({a})"
        b = b if pb > prec else f"({b})"
        return f"{a} {spelling} {b}", prec

    def _compare(self, op: Operation) -> tuple[str, int]:
        lhs, rhs = op.operands
        ea, eb = self.pair_expected(lhs, rhs, None)
        a, pa = self.expr(lhs, ea)
        b, pb = self.expr(rhs, eb)
        infix = exprs.infix_predicate(op)
        if infix is None:
            prefix = "cmpf." if isinstance(op, arith.CmpfOp) else "cmpi."
            return f"{prefix}{exprs.predicate_name(op)}({a}, {b})", _PREC_ATOM
        if infix == "ne":
            return f"ne({a}, {b})", _PREC_ATOM
        a = a if pa > _PREC_CMP else f"({a})"
        b = b if pb > _PREC_CMP else f"({b})"
        return f"{a} {infix} {b}", _PREC_CMP

    def _is_all_ones(self, v: SSAValue) -> bool:
        if not self.is_literal(v):
            return False
        value = exprs.constant_value(v.owner)  # type: ignore[arg-type]
        return value is True or (value == -1 and v.type != I1)


def print_compute(op: ComputeOp, printer: Printer) -> None:
    printer.print_string(" ")
    printer.print_string_literal(op.stage_name)
    printer.print_string(" [" + ", ".join(op.spatial_names) + "]")
    if op.reduce_kind is not None:
        axes = ", ".join(
            f"{n} : {e}" for n, e in zip(op.reduce_names, op.reduce_shape, strict=True)
        )
        printer.print_string(f" {op.reduce_kind} [{axes}]")
    if op.template_name is not None:
        printer.print_string(" template ")
        printer.print_string_literal(op.template_name)
    text: str | None
    try:
        text, in_types = FormulaPrinter(op, printer).render()
    except _NotPrintable:
        text, in_types = None, []
    if text is not None:
        printer.print_string(" = " + text)
    else:
        printer.print_string(" ")
        printer.print_region(op.body, print_entry_block_args=True)
    printer.print_string(" : (")
    printer.print_list(in_types, printer.print_attribute)
    printer.print_string(") -> ")
    printer.print_attribute(op.result.type)
    if op.attributes:
        printer.print_op_attributes(op.attributes)
