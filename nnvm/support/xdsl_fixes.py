"""Fixes to the pinned xDSL (0.74) that nnvm relies on, applied when nnvm.support is imported.

* Hexadecimal float elements of dense literals. MLIR writes a float that has no decimal
  spelling (inf, nan) as its bit pattern, `dense<0xFF800000> : tensor<1xf32>` is -inf, and
  xDSL's printer does so too; but xDSL's parser reads such an element as the integer
  4286578688 converted to float. A kernel holding -inf (an attention mask, a max-reduction
  identity) then computed garbage after any print-and-parse round trip (worker processes,
  the kernel cache). Scalar float attributes already parse hex as bits; this makes tensor
  literal elements do the same.
* Vector operands of arith's conversions, compares and selects. MLIR's arith takes vectors
  everywhere; xDSL 0.74's fptosi / sitofp / extsi / trunci / cmpi / select (and their
  unsigned and float kin) accept scalars only, so a loop that casts (every int8 quantize and
  requantize kernel) stayed scalar: 16x slower than the float math around it. Each such
  operand or result now also accepts a vector of what it accepted; the LLVM conversion was
  already type-generic. cmpf stays scalar: xDSL's llvm.fcmp has no vector form.
* arith.constant of unsigned integer types (MLIR's arith wants signless ones; te formulas
  compute on ui8 tensors, and a uint8 convolution pads with the constant 128)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl.constraints import (
    AttrConstraint,
    RangeConstraint,
    VarConstraint,
    VerificationContext,
)
from xdsl.irdl.operations import single_range_constr_coercion
from xdsl.parser.attribute_parser import AttrParser
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

_Element = AttrParser._TensorLiteralElement  # noqa: SLF001 - the class the fix is about
_original_to_type = _Element.to_type


def _to_type(self, parser: AttrParser, type: Attribute):  # noqa: A002 - xDSL's name
    from xdsl.dialects.builtin import AnyFloat

    text = self.span.text.lstrip("-")
    if isa(type, AnyFloat) and text[:2] in ("0x", "0X") and isinstance(self.value, int):
        bits = int(text, 16)
        raw = bits.to_bytes(type.compile_time_size, "little")
        (value,) = type.iter_unpack(raw)
        return -value if self.span.text.startswith("-") else value
    return _original_to_type(self, parser, type)


_VECTOR_CAPABLE = (
    "FPToSIOp",
    "FPToUIOp",
    "SIToFPOp",
    "UIToFPOp",
    "ExtSIOp",
    "ExtUIOp",
    "TruncIOp",
    "ExtFOp",
    "TruncFOp",
    "CmpiOp",
    "SelectOp",
    "BitcastOp",
)


@dataclass(frozen=True)
class _ScalarOrVector(AttrConstraint):
    """What `scalar` accepts, or a vector of elements it accepts."""

    scalar: AttrConstraint

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if isinstance(attr, VectorType):
            attr = attr.element_type
        self.scalar.verify(attr, constraint_context)

    def can_infer(self, var_constraint_names):  # noqa: ANN001, ANN201 - xDSL's signature
        return self.scalar.can_infer(var_constraint_names)

    def infer(self, context):  # noqa: ANN001, ANN201 - a scalar op built without types
        return self.scalar.infer(context)

    def mapping_type_vars(self, type_var_mapping):  # noqa: ANN001, ANN201 - xDSL's signature
        return self


def _or_vector(constr: RangeConstraint) -> RangeConstraint:
    inner = constr.constraint.constr  # type: ignore[attr-defined]  # RangeLength(RangeOf(c))
    if isinstance(inner, VarConstraint | _ScalarOrVector):
        return constr  # select's shared type variable takes any type already
    return single_range_constr_coercion(_ScalarOrVector(inner))


@dataclass(frozen=True)
class _OrUnsignedInteger(AttrConstraint):
    """What `other` accepts, or an integer attribute of an unsigned integer type."""

    other: AttrConstraint

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        from xdsl.dialects.builtin import IntegerAttr, IntegerType, Signedness

        t = attr.type if isinstance(attr, IntegerAttr) else None
        if isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED:
            return
        self.other.verify(attr, constraint_context)

    def mapping_type_vars(self, type_var_mapping):  # noqa: ANN001, ANN201 - xDSL's signature
        return self


def _unsigned_constants() -> None:
    """arith.constant of an unsigned integer type (te formulas compute on ui8 as TVM's on
    uint8: a uint8 conv pads with its zero point 128)."""
    from xdsl.dialects import arith

    prop = arith.ConstantOp.get_irdl_definition().properties["value"]
    if not isinstance(prop.constr, _OrUnsignedInteger):
        prop.constr = _OrUnsignedInteger(prop.constr)


def _verify_width_change(op: Operation) -> None:
    """extsi / extui / trunci on scalars or vectors: lane counts equal, width grows (ext) or
    shrinks (trunc)."""
    from xdsl.dialects import arith

    a, r = op.operands[0].type, op.results[0].type
    if isinstance(a, VectorType) != isinstance(r, VectorType) or (
        isinstance(a, VectorType) and a.get_shape() != r.get_shape()  # type: ignore[union-attr]
    ):
        raise VerifyException(f"{op.name}: operand {a} and result {r} differ in shape")
    wa = (a.element_type if isinstance(a, VectorType) else a).width.data  # type: ignore[union-attr]
    wr = (r.element_type if isinstance(r, VectorType) else r).width.data  # type: ignore[union-attr]
    if (wr < wa) != isinstance(op, arith.TruncIOp) or wr == wa:
        raise VerifyException(f"{op.name}: cannot go from {wa} to {wr} bits")


def _vector_arith() -> None:
    from xdsl.dialects import arith

    for name in _VECTOR_CAPABLE:
        cls = getattr(arith, name)
        opdef = cls.get_irdl_definition()
        for defs in (opdef.operands, opdef.results):
            for _, d in defs:
                d.constr = _or_vector(d.constr)
    for cls in (arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp):
        cls.verify_ = _verify_width_change  # type: ignore[method-assign]


def apply() -> None:
    if _Element.to_type is not _to_type:
        _Element.to_type = _to_type  # type: ignore[method-assign]
        _vector_arith()
        _unsigned_constants()


apply()
