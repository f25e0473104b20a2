"""nnvm-translate: convert between nnvm IR and other formats (mlir-translate's role).

    nnvm-translate --import-onnx model.onnx -o model.mlir [--shape input=1,3,224,224]

writes the graph-dialect IR to model.mlir and the weights beside it to model.params (the params
file format, docs/params-format.md). Each translation is one mode flag; a mode is a function in
MODES, so new ones (e.g. --mlir-to-llvmir) are one entry. User errors print `error: ...` to
stderr and exit 1 with no traceback and no (partial) output file.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nnvm import __version__
from nnvm.errors import UserError


@dataclass(frozen=True)
class Mode:
    """One translation: its flag, help text and implementation."""

    flag: str
    help: str
    run: Callable[[argparse.Namespace], None]

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


# ----------------------------------------------------------------------------------------------
# Output helpers: nothing is left behind when a translation fails
# ----------------------------------------------------------------------------------------------


class OutputFiles:
    """Collects outputs in memory and writes them all at the end (via temp files + rename), so
    a failure never leaves a partial or half-updated set of files."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, bytes]] = []

    def add(self, path: str, data: bytes | str) -> None:
        self.pending.append((path, data.encode() if isinstance(data, str) else data))

    def commit(self) -> None:
        temps: list[tuple[str, str]] = []
        try:
            for path, data in self.pending:
                if path == "-":
                    continue
                tmp = f"{path}.tmp{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(data)
                temps.append((tmp, path))
            for tmp, path in temps:
                os.replace(tmp, path)
        except OSError as err:
            for tmp, _ in temps:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            raise UserError(f"cannot write {err.filename}: {err.strerror}") from None
        for path, data in self.pending:
            if path == "-":
                sys.stdout.write(data.decode())
                sys.stdout.flush()


def print_ir(module: object) -> str:
    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)  # type: ignore[arg-type]
    stream.write("\n")
    return stream.getvalue()


# ----------------------------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------------------------


def parse_shapes(specs: Sequence[str]) -> dict[str, list[int]]:
    """`--shape name=1,3,224,224` (repeatable; a scalar is `name=`)."""
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, eq, dims = spec.rpartition("=")
        if not eq or not name:
            raise UserError(f"--shape expects NAME=D0,D1,..., got {spec!r}")
        try:
            shapes[name] = [int(d) for d in dims.split(",") if d.strip()] if dims.strip() else []
        except ValueError:
            raise UserError(f"--shape {spec!r}: dimensions must be integers") from None
        if any(d < 0 for d in shapes[name]):
            raise UserError(f"--shape {spec!r}: dimensions must be >= 0")
    return shapes


def params_path_for(output: str, args: argparse.Namespace) -> str:
    """Where the params go: --params, else beside the output (or the input for stdout)."""
    if args.params:
        return args.params
    anchor = output if output != "-" else args.input
    return os.path.splitext(anchor)[0] + ".params"


def import_onnx(args: argparse.Namespace) -> None:
    from nnvm.frontend.onnx import from_onnx
    from nnvm.params import save_params

    if args.input == "-":
        raise UserError("--import-onnx reads a file, not stdin")
    module, params = from_onnx(args.input, shape=parse_shapes(args.shape), dtype=args.dtype)
    output = args.output or "-"
    files = OutputFiles()
    files.add(output, print_ir(module))
    files.add(params_path_for(output, args), save_params(params))
    files.commit()


MODES: tuple[Mode, ...] = (
    Mode("--import-onnx", "import an ONNX model into the nnvm graph dialect", import_onnx),
)


# ----------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """Usage errors follow the tool's error convention: `error: ...`, exit 1."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"error: {message}\n")
        sys.exit(1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nnvm-translate",
        description="Translate between nnvm IR and other formats.",
    )
    modes = parser.add_mutually_exclusive_group(required=True)
    for mode in MODES:
        modes.add_argument(mode.flag, dest=mode.dest, action="store_true", help=mode.help)
    parser.add_argument("input", help="input file")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="concrete shape of an input with symbolic dims (repeatable)",
    )
    parser.add_argument("--dtype", default="float32", help="element type of untyped inputs")
    parser.add_argument(
        "--params", metavar="FILE", help="where to write the params (default: beside -o)"
    )
    parser.add_argument("--version", action="version", version=f"nnvm-translate {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    mode = next(m for m in MODES if getattr(args, m.dest))
    try:
        mode.run(args)
    except UserError as err:
        sys.stderr.write(err.format() + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
