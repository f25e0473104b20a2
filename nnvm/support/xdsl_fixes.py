"""Fixes to the pinned xDSL (0.74) that nnvm relies on, applied when nnvm.support is imported.

* Hexadecimal float elements of dense literals. MLIR writes a float that has no decimal
  spelling (inf, nan) as its bit pattern, `dense<0xFF800000> : tensor<1xf32>` is -inf, and
  xDSL's printer does so too; but xDSL's parser reads such an element as the integer
  4286578688 converted to float. A kernel holding -inf (an attention mask, a max-reduction
  identity) then computed garbage after any print-and-parse round trip (worker processes,
  the kernel cache). Scalar float attributes already parse hex as bits; this makes tensor
  literal elements do the same."""

from __future__ import annotations

from xdsl.ir import Attribute
from xdsl.parser.attribute_parser import AttrParser
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


def apply() -> None:
    if _Element.to_type is not _to_type:
        _Element.to_type = _to_type  # type: ignore[method-assign]


apply()
