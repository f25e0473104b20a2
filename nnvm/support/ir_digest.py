"""A structural digest of IR: equal for two ops that print the same in generic form up to SSA
names, without printing them whole. Fusion names and deduplicates kernels by it; the texts of
the attributes (types above all) repeat from op to op and are printed once per digest pass."""

from __future__ import annotations

import hashlib

from xdsl.ir import Attribute, Operation, SSAValue


class StructuralDigest:
    """Digests of ops, sharing one table of attribute texts (keep one per pass run)."""

    def __init__(self) -> None:
        self._texts: dict[Attribute, bytes] = {}

    def _text(self, attr: Attribute) -> bytes:
        try:
            found = self._texts.get(attr)
        except TypeError:  # an unhashable attribute: printed each time
            return str(attr).encode()
        if found is None:
            found = self._texts[attr] = str(attr).encode()
        return found

    def __call__(self, op: Operation) -> str:
        """The hex sha256 of `op` and everything nested in it: op names, operand and result
        numbering, types, properties, attributes, regions and their block arguments."""
        h = hashlib.sha256()
        numbers: dict[SSAValue, int] = {}

        def value(v: SSAValue) -> bytes:
            return str(numbers.setdefault(v, len(numbers))).encode()

        def visit(inner: Operation) -> None:
            h.update(b"(" + inner.name.encode())
            for operand in inner.operands:
                h.update(b" %" + value(operand))
            for kind, attrs in ((b"<", inner.properties), (b"{", inner.attributes)):
                for key in sorted(attrs):
                    h.update(kind + key.encode() + b"=" + self._text(attrs[key]))
            for region in inner.regions:
                h.update(b"[")
                for block in region.blocks:
                    h.update(b"^")
                    for arg in block.args:
                        h.update(b" %" + value(arg) + b":" + self._text(arg.type))
                    for nested in block.ops:
                        visit(nested)
                h.update(b"]")
            for result in inner.results:
                h.update(b" -> %" + value(result) + b":" + self._text(result.type))
            h.update(b")")

        visit(op)
        return h.hexdigest()
