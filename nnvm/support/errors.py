"""Errors a user can cause. Tools print them as `FILE:LINE:COL: error: message` and exit 1;
anything else escaping a tool is an internal error (a bug), reported as such."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SourceLocation:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class UserError(Exception):
    """Bad input: malformed IR or model, unsupported op, bad option. Never shown with a traceback."""

    def __init__(self, message: str, location: SourceLocation | str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    def format(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}error: {self.message}"
