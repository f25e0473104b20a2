"""IR as text: the one place that turns an op into its printed form (custom or generic), for
the tools' output, IR dumps, kernel-cache keys and structural hashes."""

from __future__ import annotations

import io
from functools import lru_cache

from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.printer import Printer


@lru_cache(maxsize=4096)
def _type_text(attr: TypeAttribute) -> str:
    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    return out.getvalue()


class _TypeMemoPrinter(Printer):
    """A printer that prints each distinct type once: a kernel's tensor types repeat on every
    op, and printing them was most of the time spent turning kernels into text."""

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, TypeAttribute):
            try:
                text = _type_text(attribute)
            except TypeError:  # unhashable
                text = None
            if text is not None and "\n" not in text:
                self.print_string(text)
                return
        super().print_attribute(attribute)


def ir_text(op: Operation, *, generic: bool = False, debuginfo: bool = False) -> str:
    """The printed form of `op` (no trailing newline)."""
    out = io.StringIO()
    printer = _TypeMemoPrinter(stream=out, print_generic_format=generic, print_debuginfo=debuginfo)
    printer.print_op(op)
    return out.getvalue()
