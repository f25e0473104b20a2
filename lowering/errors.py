"""The one error type of the lowerings: a user error located at the op that could not be
lowered (nnvm-opt prints it as `FILE:LINE:COL: error: ...`; Python callers can catch it as
`nnvm.support.errors.UserError`)."""

from __future__ import annotations

from xdsl.ir import Operation

from nnvm.support.diagnostics import DiagnosticError, location_of
from nnvm.support.errors import UserError


class LoweringError(DiagnosticError, UserError):
    """Unsupported input (op, type, layout, shape) met by a conversion."""

    def __init__(self, op: Operation | None, message: str):
        UserError.__init__(self, message, location_of(op))
        self.op = op


def located(op: Operation | None, error: UserError) -> LoweringError:
    """`error` re-raised at `op` unless it already names a location."""
    if isinstance(error, LoweringError):
        return error
    return LoweringError(op, error.message)
