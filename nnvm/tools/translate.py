"""nnvm-translate: convert between nnvm IR and other formats (mlir-translate's role).

    nnvm-translate --import-onnx model.onnx -o model.mlir [--shape input=1,3,224,224]

writes the graph-dialect IR to model.mlir and the weights beside it to model.params (the params
file format, docs/params-format.md). Each translation is one mode flag; a mode is a function in
MODES, so new ones (e.g. --mlir-to-llvmir) are one entry. User errors print `error: ...` to
stderr and exit 1 with no traceback and no (partial) output file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nnvm import __version__
from nnvm.support.errors import UserError
from nnvm.tools.common import ArgumentParser, OutputFiles, parse_shapes, read_input, run_tool


@dataclass(frozen=True)
class Mode:
    """One translation: its flag, help text and implementation."""

    flag: str
    help: str
    run: Callable[[argparse.Namespace], None]

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


def print_ir(module: object) -> str:
    from nnvm.support.ir_text import ir_text

    return ir_text(module) + "\n"  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------------------------


def params_path_for(output: str, args: argparse.Namespace) -> str:
    """Where the params go: --params, else beside the output (or the input for stdout)."""
    if args.params:
        return args.params
    anchor = output if output != "-" else args.input
    return os.path.splitext(anchor)[0] + ".params"


def import_onnx(args: argparse.Namespace) -> None:
    from nnvm.frontend.onnx import from_onnx
    from nnvm.support.params import save_params

    if args.input == "-":
        raise UserError("--import-onnx reads a file, not stdin")
    module, params = from_onnx(args.input, shape=parse_shapes(args.shape), dtype=args.dtype)
    output = args.output or "-"
    files = OutputFiles(protect=[args.input])
    files.add(output, print_ir(module))
    files.add(params_path_for(output, args), save_params(params))
    files.commit()


def mlir_to_llvmir(args: argparse.Namespace) -> None:
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module, verify_located
    from nnvm.targets.llvm import translate_to_llvm_ir

    text, name = read_input(args.input)
    module = parse_module(make_context(), text, name)
    problems = verify_located(module, name)
    if problems:
        raise UserError(problems[0].message, problems[0].location)
    files = OutputFiles(protect=[args.input])
    files.add(args.output or "-", translate_to_llvm_ir(module))
    files.commit()


def list_onnx_ops(args: argparse.Namespace) -> None:
    from nnvm.frontend.onnx.coverage import table

    sys.stdout.write(table())


MODES: tuple[Mode, ...] = (
    Mode("--import-onnx", "import an ONNX model into the nnvm graph dialect", import_onnx),
    Mode("--mlir-to-llvmir", "translate llvm-dialect IR to LLVM IR text", mlir_to_llvmir),
    Mode(
        "--list-onnx-ops",
        "list the ONNX op types --import-onnx supports, with opsets (no input file)",
        list_onnx_ops,
    ),
)

#: Modes that read no input file.
NO_INPUT = frozenset({"list_onnx_ops"})


# ----------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="nnvm-translate",
        description="Translate between nnvm IR and other formats.",
    )
    modes = parser.add_mutually_exclusive_group(required=True)
    for mode in MODES:
        modes.add_argument(mode.flag, dest=mode.dest, action="store_true", help=mode.help)
    parser.add_argument("input", nargs="?", help="input file")
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


def run(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mode = next(m for m in MODES if getattr(args, m.dest))
    if args.input is None and mode.dest not in NO_INPUT:
        parser.error(f"{mode.flag} needs an input file")
    mode.run(args)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool("nnvm-translate", run, argv)


if __name__ == "__main__":
    sys.exit(main())
