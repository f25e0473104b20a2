"""Located diagnostics for textual IR, as MLIR reports them: `FILE:LINE:COL: error: message`.

xDSL 0.74 neither keeps source locations when parsing nor reports verifier errors with a
position, so this module records each op's position while parsing (as MLIR's `loc(...)`),
verifies op by op, and implements `--verify-diagnostics`' `expected-error` matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from nnvm.support.errors import SourceLocation, UserError


@dataclass
class Diagnostic:
    """One message about the input, with the position it refers to (if any)."""

    severity: str  # "error", "warning", "remark" or "note"
    message: str
    location: SourceLocation | None = None
    file: str = "<stdin>"
    internal: bool = False
    """A bug in nnvm (a pass or verifier that crashed), not a problem with the input: exit 2."""

    def format(self) -> str:
        where = str(self.location) if self.location else self.file
        return f"{where}: {self.severity}: {self.message}"


class DiagnosticError(Exception):
    """Raised by passes for user-caused problems at an op; the driver reports it located."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


# ----------------------------------------------------------------------------------------------
# Parsing with locations
# ----------------------------------------------------------------------------------------------


class LocatedParser(Parser):
    """A parser that stamps every op it parses with its `FILE:LINE:COL` unless the input gave
    an explicit `loc(...)`."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.file_name = name
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            loc = start.get_location()
            op.location = FileLineColLoc(
                StringAttr(self.file_name),
                IntAttr(loc.line + self.line_offset),
                IntAttr(loc.col),
            )
        return op


def location_of(op: Operation | None) -> SourceLocation | None:
    """The source position of an op, or of its nearest ancestor that has one."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


def parse_error_diagnostic(err: ParseError, file: str, line_offset: int = 0) -> Diagnostic:
    loc = err.span.get_location()
    return Diagnostic("error", err.msg, SourceLocation(file, loc.line + line_offset, loc.col), file)


def parse_module(ctx: Context, text: str, file: str, line_offset: int = 0) -> ModuleOp:
    """Parse IR text; raise UserError with the parser's position on malformed input."""
    check_strings_closed(text, file, line_offset)
    parser = None
    try:
        parser = LocatedParser(ctx, text, file, line_offset)  # lexes its first token: may raise
        return parser.parse_module()
    except ParseError as err:
        diag = parse_error_diagnostic(err, file, line_offset)
        raise UserError(diag.message, diag.location) from None
    except VerifyException as err:  # raised by an op or attribute built while parsing
        where = _position(text, getattr(parser, "pos", None), file, line_offset)
        raise UserError(f"invalid IR: {_first_line(err)}", where or file) from None
    except ValueError as err:  # an attribute xDSL could not build from the text (an enum
        # case it does not know: `vector.reduction <m ...>`), or an integer out of range
        where = _position(text, getattr(parser, "pos", None), file, line_offset)
        raise UserError(f"invalid IR: {_first_line(err)}", where or file) from None


def _position(text: str, pos: object, file: str, line_offset: int) -> SourceLocation | None:
    """Where the parser stood (the end of the op it was building), as a line and column."""
    if not isinstance(pos, int) or not 0 <= pos <= len(text):
        return None
    while pos > 0 and text[pos - 1].isspace():
        pos -= 1  # the op's own line, not the start of the next one
    line = text.count("\n", 0, pos) + 1 + line_offset
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return SourceLocation(file, line, col)


def check_strings_closed(text: str, file: str, line_offset: int = 0) -> None:
    """Refuse a string literal left open at the end of its line (MLIR strings cannot span
    lines) before xDSL's lexer sees it: its string pattern backtracks exponentially in the
    length of the rest of the line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if '"' not in line:
            continue
        opened, k = -1, 0
        while k < len(line):
            c = line[k]
            if opened < 0:
                if c == "/" and line.startswith("//", k):
                    break
                if c == '"':
                    opened = k
            elif c == "\\":
                k += 1
            elif c == '"':
                opened = -1
            k += 1
        if opened >= 0:
            where = SourceLocation(file, number + line_offset, opened + 1)
            raise UserError("unterminated string literal", where)


# ----------------------------------------------------------------------------------------------
# Verification with locations
# ----------------------------------------------------------------------------------------------


def verify_located(module: Operation, file: str) -> list[Diagnostic]:
    """Verify every op; each failure is reported at the failing op's source position."""
    diagnostics: list[Diagnostic] = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as err:
            message = _first_line(err)
            where = location_of(op) or _nearest_location(op, message)
            diagnostics.append(Diagnostic("error", message, where, file))
        except Exception as err:  # a verifier that crashes is still a problem with this op
            diagnostics.append(
                Diagnostic(
                    "error",
                    f"verifier of {op.name} failed: {type(err).__name__}: {err}",
                    location_of(op),
                    file,
                    internal=True,
                )
            )
    return diagnostics


def _nearest_location(op: Operation, message: str) -> SourceLocation | None:
    """For an op without a position (the implicit top-level module): the op inside it that the
    message names by symbol (a symbol defined twice: its second definition), else its first."""
    inner = [o for o in op.walk() if o is not op and location_of(o) is not None]
    named = re.search(r'symbol "([^"]+)"', message)
    if named:
        same = [o for o in inner if _symbol(o) == named.group(1)]
        if same:
            return location_of(same[-1])
    return location_of(inner[0]) if inner else None


def _symbol(op: Operation) -> str | None:
    name = op.attributes.get("sym_name") or op.properties.get("sym_name")
    return getattr(name, "data", None)


def _first_line(err: Exception) -> str:
    text = str(err.args[0]) if err.args else str(err)
    return text.strip().splitlines()[0] if text.strip() else type(err).__name__


# ----------------------------------------------------------------------------------------------
# --verify-diagnostics: MLIR's expected-* annotations
# ----------------------------------------------------------------------------------------------

_EXPECTED = re.compile(
    r"//\s*expected-(error|warning|remark|note)\s*(@(?:[+-]\d+|above|below))?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expectation:
    severity: str
    line: int
    text: str
    source_line: int
    matched: bool = field(default=False)


def expectations_in(text: str, line_offset: int = 0) -> list[Expectation]:
    """Collect `// expected-<severity> [@+N|@-N|@above|@below] {{text}}` annotations."""
    found: list[Expectation] = []
    for index, line in enumerate(text.splitlines()):
        lineno = index + 1 + line_offset
        for m in _EXPECTED.finditer(line):
            severity, offset, message = m.groups()
            target = lineno
            if offset == "@above":
                target = lineno - 1
            elif offset == "@below":
                target = lineno + 1
            elif offset:
                target = lineno + int(offset[1:])
            found.append(Expectation(severity, target, message, lineno))
    return found


def match_expectations(
    expectations: list[Expectation], diagnostics: Iterable[Diagnostic], file: str
) -> list[str]:
    """MLIR's rule: every diagnostic must be expected and every expectation produced.

    Returns the problems found (empty when the two sets agree)."""
    problems: list[str] = []
    for diag in diagnostics:
        line = diag.location.line if diag.location else None
        for exp in expectations:
            if (
                not exp.matched
                and exp.severity == diag.severity
                and exp.line == line
                and exp.text in diag.message
            ):
                exp.matched = True
                break
        else:
            problems.append(f"{diag.format()} (unexpected {diag.severity})")
    for exp in expectations:
        if not exp.matched:
            problems.append(
                f'{file}:{exp.source_line}: error: expected {exp.severity} "{exp.text}" '
                f"was not produced (at line {exp.line})"
            )
    return problems
