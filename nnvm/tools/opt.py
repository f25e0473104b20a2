"""nnvm-opt: parse IR, run passes, print IR, with mlir-opt's conventions.

    nnvm-opt input.mlir --pass fuse -o out.mlir
    nnvm-opt input.mlir -p 'infer-shapes,cse,dce' --mlir-print-ir-after-all
    nnvm-opt tests.mlir --split-input-file --verify-diagnostics
    nnvm-opt --load-pass-plugin=my_passes.py input.mlir -p my-pass
    nnvm-opt input.mlir -p fuse --view-op-graph 2> graph.dot    # Graphviz DOT, IR unchanged

User errors are printed as `FILE:LINE:COL: error: message` and exit 1 without a traceback or
an output file; a crash inside a pass is reported as an internal error naming the pass.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, get_pass_option_infos
from xdsl.utils.exceptions import VerifyException

from nnvm import __version__
from nnvm.registry import build_pipeline, dialect_factories, make_context, one_line, pass_factories
from nnvm.support.diagnostics import (
    Diagnostic,
    DiagnosticError,
    expectations_in,
    location_of,
    match_expectations,
    parse_module,
    verify_located,
)
from nnvm.support.errors import UserError
from nnvm.support.graph_dot import ViewOptions, module_to_dot, parse_view_options
from nnvm.support.ir_text import ir_text
from nnvm.support.param_store import attach_params, params_of
from nnvm.support.pass_statistics import format_statistics, statistics_of
from nnvm.tools.common import ArgumentParser, OutputFiles, read_input, run_tool

SPLIT_MARKER = "// -----"


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


class _PluginAction(argparse.Action):
    """Collect `--load-pass-plugin` and `--load-dialect-plugin` in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        items = getattr(namespace, "plugins", None) or []
        items.append((option_string, str(values)))
        namespace.plugins = items


class _PipelineAction(argparse.Action):
    """Collect `--pass` and `-p` in command-line order into one pipeline text."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        items = getattr(namespace, "pipeline", None) or []
        items.append(str(values))
        namespace.pipeline = items


def build_arg_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="nnvm-opt",
        description="Run nnvm and xDSL passes over MLIR textual IR (mlir-opt conventions).",
    )
    p.add_argument("input", nargs="?", default="-", help="input file ('-' or nothing: stdin)")
    p.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    p.add_argument(
        "--pass",
        dest="pipeline",
        action=_PipelineAction,
        metavar="NAME",
        help="run one pass, e.g. --pass fuse or --pass 'fuse{max-group-size=4}' (repeatable)",
    )
    p.add_argument(
        "-p",
        "--pass-pipeline",
        "--passes",
        dest="pipeline",
        action=_PipelineAction,
        metavar="PIPELINE",
        help="comma-separated passes with options: 'a,b{opt=v}' (builtin.module(...) accepted)",
    )
    p.add_argument("--list-passes", action="store_true", help="list passes with their options")
    p.add_argument("--show-dialects", action="store_true", help="list the registered dialects")
    p.add_argument(
        "--split-input-file",
        action="store_const",
        const=SPLIT_MARKER,
        default=None,
        help=f"process chunks separated by '{SPLIT_MARKER}' independently "
        "(--split-input-file=MARKER: by another marker line)",
    )
    p.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check diagnostics against // expected-error @+1 {{...}} annotations",
    )
    p.add_argument(
        "--print-op-generic", "--mlir-print-op-generic", action="store_true", dest="generic"
    )
    p.add_argument(
        "--mlir-print-debuginfo", "--print-debuginfo", action="store_true", dest="debuginfo"
    )
    p.add_argument("--mlir-print-ir-after-all", action="store_true")
    p.add_argument("--mlir-print-ir-before-all", action="store_true")
    p.add_argument("--mlir-print-ir-before", action="append", default=[], metavar="PASS")
    p.add_argument("--mlir-print-ir-after", action="append", default=[], metavar="PASS")
    p.add_argument("--mlir-timing", "--time-passes", action="store_true", dest="timing")
    p.add_argument(
        "--mlir-pass-statistics", action="store_true", help="print pass statistics to stderr"
    )
    p.add_argument("--allow-unregistered-dialect", action="store_true")
    p.add_argument(
        "--verify-each",
        type=lambda s: s.lower() not in ("0", "false", "no"),
        default=True,
        metavar="BOOL",
        help="verify after every pass (default true)",
    )
    p.add_argument("--disable-verify", action="store_true", help="same as --verify-each=0")
    for flag, what in (("--load-pass-plugin", "passes"), ("--load-dialect-plugin", "dialects")):
        p.add_argument(
            flag,
            dest="plugins",
            action=_PluginAction,
            default=[],
            metavar="PLUGIN",
            help=f"load {what} from a module name or a .py file before anything else (repeatable)",
        )
    p.add_argument(
        "--view-op-graph",
        action="store_const",
        const="",
        default=None,
        help="after the passes, write a Graphviz DOT picture of the module to stderr, as "
        "mlir-opt's -view-op-graph; options as --view-op-graph='max-label-len=20 "
        "print-attrs=true print-result-types=true print-data-flow-edges=true "
        "print-control-flow-edges=false'",
    )
    p.add_argument(
        "--view-op-graph-output",
        metavar="FILE",
        help="write the --view-op-graph DOT to FILE instead of stderr (implies --view-op-graph)",
    )
    p.add_argument("--params", metavar="FILE", help="read the params store from FILE")
    p.add_argument("--params-out", metavar="FILE", help="write the params store to FILE")
    p.add_argument("--version", action="version", version=f"nnvm-opt {__version__}")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line, with mlir-opt's `--split-input-file`: the bare flag takes no value (so
    `--split-input-file x.mlir` reads x.mlir), and a custom marker comes only as
    `--split-input-file=MARKER`, which argparse cannot express for a flag on its own."""
    parser = build_arg_parser()
    tokens = list(sys.argv[1:] if argv is None else argv)
    marker: str | None = None
    view_options: str | None = None
    for k, token in enumerate(tokens):
        if token == "--":
            break
        flag, eq, value = token.partition("=")
        if eq and flag == "--split-input-file":
            if not value.strip():
                parser.error("--split-input-file=MARKER needs a non-empty marker")
            marker = value.strip()
            tokens[k] = flag
        elif eq and flag == "--view-op-graph":  # its options, like the marker, only after '='
            view_options = value
            tokens[k] = flag
    args = parser.parse_args(tokens)
    if marker is not None:
        args.split_input_file = marker
    if view_options is not None:
        args.view_op_graph = view_options
    if args.view_op_graph_output and args.view_op_graph is None:
        args.view_op_graph = ""
    return args


def load_plugins(plugins: Sequence[tuple[str, str]]) -> None:
    """Import each `--load-pass-plugin` / `--load-dialect-plugin` module, in command-line order,
    so that its passes and dialects are registered before anything is looked up."""
    if not plugins:
        return
    try:
        from nnvm.support.plugins import load_plugin_module
    except ImportError:
        flag = plugins[0][0]
        raise UserError(f"{flag}: this nnvm cannot load plugins (no plugin loader)") from None
    for flag, spec in plugins:
        try:
            load_plugin_module(spec)
        except UserError as err:
            where = f"{err.location}: " if err.location else ""
            raise UserError(f"{flag}={spec}: {where}{err.message}") from None


# ----------------------------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------------------------


@dataclass
class Chunk:
    text: str
    line_offset: int


@dataclass
class RunState:
    args: argparse.Namespace
    file: str
    ctx: Context
    timings: dict[str, float] = field(default_factory=dict)
    out_params: dict | None = None
    stderr: io.TextIOBase = field(default_factory=lambda: sys.stderr)  # type: ignore[assignment]
    view: ViewOptions | None = None
    """--view-op-graph's options (None: no picture)."""
    dots: list[str] = field(default_factory=list)
    """The DOT of each chunk, when it goes to --view-op-graph-output."""


def split_chunks(text: str, marker: str | None) -> list[Chunk]:
    if marker is None:
        return [Chunk(text, 0)]
    chunks: list[Chunk] = []
    current: list[str] = []
    start = 0
    for index, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == marker:
            chunks.append(Chunk("".join(current), start))
            current, start = [], index + 1
        else:
            current.append(line)
    chunks.append(Chunk("".join(current), start))
    return chunks


def print_module(module: ModuleOp, args: argparse.Namespace) -> str:
    return ir_text(module, generic=args.generic, debuginfo=args.debuginfo) + "\n"


def _pass_label(p: ModulePass) -> str:
    return f"{type(p).__name__} ({p.name})"


def run_chunk(
    state: RunState, chunk: Chunk, passes: list[ModulePass], params: dict | None
) -> tuple[str | None, list[Diagnostic]]:
    """Parse, verify, run the pipeline and print one chunk; diagnostics instead of output on
    failure."""
    args, file = state.args, state.file
    started = time.perf_counter()
    try:
        module = parse_module(state.ctx, chunk.text, file, chunk.line_offset)
    except UserError as err:
        return None, [Diagnostic("error", err.message, err.location, file)]  # type: ignore[arg-type]
    state.timings["Parser"] = state.timings.get("Parser", 0.0) + time.perf_counter() - started
    verify = args.verify_each and not args.disable_verify
    diagnostics = verify_located(module, file)
    if diagnostics:
        return None, diagnostics
    if params is not None:
        attach_params(module, dict(params))
    for p in passes:
        label = _pass_label(p)
        if args.mlir_print_ir_before_all or p.name in args.mlir_print_ir_before:
            state.stderr.write(f"// -----// IR Dump Before {label} //----- //\n")
            state.stderr.write(print_module(module, args))
        started = time.perf_counter()
        try:
            p.apply(state.ctx, module)
        except DiagnosticError as err:
            return None, [Diagnostic("error", err.message, location_of(err.op), file)]
        except UserError as err:
            return None, [Diagnostic("error", err.message, err.location, file)]  # type: ignore[arg-type]
        except VerifyException as err:
            return None, [Diagnostic("error", f"pass '{p.name}' failed: {err}", None, file)]
        except Exception as err:
            if os.environ.get("NNVM_DEBUG"):
                traceback.print_exc()
            return None, [
                Diagnostic(
                    "error",
                    f"internal error: pass '{p.name}' crashed with {type(err).__name__}: "
                    f"{one_line(err)} (this is a bug in nnvm; NNVM_DEBUG=1 shows the traceback)",
                    None,
                    file,
                    internal=True,
                )
            ]
        state.timings[label] = state.timings.get(label, 0.0) + time.perf_counter() - started
        if verify:
            problems = verify_located(module, file)
            if problems:
                for d in problems:
                    d.message = f"{d.message} (after pass '{p.name}')"
                return None, problems
        if args.mlir_print_ir_after_all or p.name in args.mlir_print_ir_after:
            state.stderr.write(f"// -----// IR Dump After {label} //----- //\n")
            state.stderr.write(print_module(module, args))
    if args.mlir_pass_statistics and statistics_of(module):
        state.stderr.write(format_statistics(statistics_of(module)))
    if state.view is not None:
        dot = module_to_dot(module, state.view, name=os.path.basename(file))
        if args.view_op_graph_output:
            state.dots.append(dot)
        else:
            state.stderr.write(dot)
    started = time.perf_counter()
    text = print_module(module, args)
    state.timings["Output"] = state.timings.get("Output", 0.0) + time.perf_counter() - started
    if args.params_out:
        state.out_params = params_of(module)
    return text, []


def report_timing(state: RunState, total: float) -> None:
    w = state.stderr
    w.write("===" + "-" * 73 + "===\n")
    w.write(" " * 25 + "... Execution time report ...\n")
    w.write("===" + "-" * 73 + "===\n")
    w.write(f"  Total Execution Time: {total:.4f} seconds\n\n")
    w.write("  ----Wall Time----  ----Name----\n")
    for name, seconds in state.timings.items():
        pct = 100.0 * seconds / total if total > 0 else 0.0
        w.write(f"  {seconds:8.4f} ({pct:5.1f}%)  {name}\n")
    w.write(f"  {total:8.4f} (100.0%)  Total\n")


def list_passes(out: io.TextIOBase) -> None:
    out.write("Available passes:\n")
    for name, factory in sorted(pass_factories().items()):
        cls = factory()
        doc = (cls.__doc__ or "").strip().splitlines()
        out.write(f"  {name}: {doc[0] if doc else ''}\n")
        for info in get_pass_option_infos(cls):
            option = info.name.replace("_", "-")
            default = f" (default: {info.default_value})" if info.default_value is not None else ""
            out.write(f"      {option}: {info.expected_type}{default}\n")


def run(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        load_plugins(args.plugins)
    except UserError as err:
        sys.stderr.write(f"nnvm-opt: {err.format()}\n")
        return 1
    if args.list_passes:
        list_passes(sys.stdout)  # type: ignore[arg-type]
        return 0
    if args.show_dialects:
        sys.stdout.write("Available Dialects: " + ", ".join(sorted(dialect_factories())) + "\n")
        return 0
    total_start = time.perf_counter()
    try:
        passes = build_pipeline(args.pipeline or [])
        text, file = read_input(args.input)
        params = None
        if args.params:
            from nnvm.support.params import load_params_file

            params = load_params_file(args.params)
        view = parse_view_options(args.view_op_graph) if args.view_op_graph is not None else None
    except UserError as err:
        sys.stderr.write(err.format() + "\n")
        return 1
    state = RunState(args, file, make_context(args.allow_unregistered_dialect), view=view)
    outputs: list[str] = []
    failed = False
    crashes: list[Diagnostic] = []
    problems: list[str] = []
    for chunk in split_chunks(text, args.split_input_file):
        output, diagnostics = run_chunk(state, chunk, passes, params)
        crashes += [d for d in diagnostics if d.internal]
        if args.verify_diagnostics:
            expectations = expectations_in(chunk.text, chunk.line_offset)
            problems += match_expectations(expectations, diagnostics, file)
        elif diagnostics:
            failed = True
            for d in diagnostics:
                sys.stderr.write(d.format() + "\n")
        if output is not None:
            outputs.append(output)
    if args.timing:
        report_timing(state, time.perf_counter() - total_start)
    if problems:
        for line in problems:
            sys.stderr.write(line + "\n")
    if crashes:
        if args.verify_diagnostics:  # a crash is a bug even where errors were expected
            for d in crashes:
                sys.stderr.write(d.format() + "\n")
        return 2
    if problems or failed:
        return 1
    try:
        separator = f"{args.split_input_file or SPLIT_MARKER}\n"
        files = OutputFiles()
        files.add(args.output, separator.join(outputs))
        if args.view_op_graph_output:
            files.add(args.view_op_graph_output, "".join(state.dots))
        if args.params_out:
            from nnvm.support.params import save_params

            store = state.out_params if state.out_params is not None else params or {}
            files.add(args.params_out, save_params(store))
        files.commit()
    except UserError as err:
        sys.stderr.write(err.format() + "\n")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool("nnvm-opt", run, argv)


if __name__ == "__main__":
    sys.exit(main())
