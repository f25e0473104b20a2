"""IR as text: the one place that turns an op into its printed form (custom or generic), for
the tools' output, IR dumps, kernel-cache keys and structural hashes."""

from __future__ import annotations

import io

from xdsl.ir import Operation
from xdsl.printer import Printer


def ir_text(op: Operation, *, generic: bool = False, debuginfo: bool = False) -> str:
    """The printed form of `op` (no trailing newline)."""
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(op)
    return out.getvalue()
