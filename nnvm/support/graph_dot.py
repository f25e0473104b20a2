"""Pictures of graphs: Graphviz DOT text for IR modules (nnvm-opt --view-op-graph, after
mlir-opt's -view-op-graph) and for the fused executor graph of a build (nnvm-compile
--graph-svg), and SVG through Graphviz's `dot`.

IR pictures follow mlir-opt's conventions: ops are nodes labelled with the op name, its
attributes and its result types; uses of SSA values are solid edges (labelled here with the
value's shape); regions and blocks are nested clusters; block arguments are nodes; control flow
(op order and block successors) is dashed edges, off by default. Long attributes and types are
cut to `max-label-len` characters."""

from __future__ import annotations

import html
import io
import re
import shutil
import subprocess
from dataclasses import dataclass, fields

from xdsl.dialects.builtin import ContainerType, ShapedType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.printer import Printer

from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, Ref, TensorInfo

# ----------------------------------------------------------------------------------------------
# Options (mlir-opt's -view-op-graph options, same names and defaults)
# ----------------------------------------------------------------------------------------------


@dataclass
class ViewOptions:
    max_label_len: int = 20
    """Cut attribute and type text longer than this (0: never)."""
    print_attrs: bool = True
    print_control_flow_edges: bool = False
    print_data_flow_edges: bool = True
    print_result_types: bool = True


def parse_view_options(text: str) -> ViewOptions:
    """`max-label-len=30 print-attrs=false` (space- or comma-separated; `{...}` accepted), as
    mlir-opt spells pass options."""
    options = ViewOptions()
    known = {f.name.replace("_", "-"): f for f in fields(ViewOptions)}
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    for item in re.split(r"[\s,]+", body.strip()):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if key not in known:
            raise UserError(
                f"--view-op-graph: unknown option '{key}' (options: {', '.join(sorted(known))})"
            )
        f = known[key]
        if f.type in (bool, "bool"):
            if not eq:
                setattr(options, f.name, True)
            elif value.lower() in ("1", "true", "yes", "on"):
                setattr(options, f.name, True)
            elif value.lower() in ("0", "false", "no", "off"):
                setattr(options, f.name, False)
            else:
                raise UserError(f"--view-op-graph: {key} expects true or false, got {value!r}")
        else:
            try:
                number = int(value)
            except ValueError:
                raise UserError(f"--view-op-graph: {key} expects a number, got {value!r}") from None
            if number < 0:
                raise UserError(f"--view-op-graph: {key} must be >= 0, got {number}")
            setattr(options, f.name, number)
    return options


# ----------------------------------------------------------------------------------------------
# DOT text helpers
# ----------------------------------------------------------------------------------------------


def quote(text: str) -> str:
    """A DOT double-quoted string for plain (non-record) labels; newlines become centred line
    breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def _html_label(title: str, sections: list[list[str]]) -> str:
    """An HTML-like label: the title in bold, then each section's lines left-aligned under a
    rule (Graphviz's records cannot carry edges between neighbours; these can)."""
    rows = [f"<tr><td><b>{html.escape(title)}</b></td></tr>"]
    for lines in sections:
        if not lines:
            continue
        rows.append("<hr/>")
        cell = '<br align="left"/>'.join(html.escape(line) for line in lines)
        rows.append(f'<tr><td align="left" balign="left">{cell}<br align="left"/></td></tr>')
    return (
        '<<table border="0" cellborder="0" cellspacing="0" cellpadding="2">'
        + "".join(rows)
        + "</table>>"
    )


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if limit and len(text) > limit:
        return text[: max(limit - 3, 1)] + "..."
    return text


def _attr_text(attr: Attribute) -> str:
    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    return out.getvalue()


def shape_text(t: Attribute) -> str:
    """A type as a short edge label: `1x3x224x224xf32` for shaped types, the type otherwise."""
    if isinstance(t, ShapedType) and isinstance(t, ContainerType):
        dims = ["?" if d < 0 else str(d) for d in t.get_shape()]
        return "x".join([*dims, _attr_text(t.get_element_type())])
    return _attr_text(t)


# ----------------------------------------------------------------------------------------------
# IR modules
# ----------------------------------------------------------------------------------------------


class _OpGraph:
    def __init__(self, options: ViewOptions):
        self.options = options
        self.lines: list[str] = []
        self.edges: list[str] = []
        self.node_of: dict[int, str] = {}  # id(op or block argument) -> DOT node name
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def op_label(self, op: Operation) -> str:
        limit = self.options.max_label_len
        sections: list[list[str]] = []
        if self.options.print_attrs:
            attrs = {**op.properties, **op.attributes}
            sections.append(
                [
                    f"{name}: {_truncate(_attr_text(value), limit)}"
                    for name, value in sorted(attrs.items())
                ]
            )
        if self.options.print_result_types and op.results:
            types = ", ".join(_truncate(shape_text(r.type), limit) for r in op.results)
            sections.append([f"-> {types}"])
        return _html_label(op.name, sections)

    def add_op(self, op: Operation, depth: int) -> None:
        name = self.fresh("op")
        self.node_of[id(op)] = name
        if op.regions:
            self.emit(depth, f"subgraph cluster_{name} {{")
            self.emit(depth + 1, f"label={quote(op.name)};")
            self.emit(depth + 1, 'style="rounded"; color="gray50";')
            self.emit(depth + 1, f"{name} [label={self.op_label(op)}];")
            for region in op.regions:
                self.add_region(region, depth + 1)
            self.emit(depth, "}")
        else:
            self.emit(depth, f"{name} [label={self.op_label(op)}];")

    def add_region(self, region: Region, depth: int) -> None:
        name = self.fresh("region")
        self.emit(depth, f"subgraph cluster_{name} {{")
        self.emit(depth + 1, 'label=""; style="dashed"; color="gray70";')
        for block in region.blocks:
            self.add_block(block, depth + 1)
        self.emit(depth, "}")

    def add_block(self, block: Block, depth: int) -> None:
        name = self.fresh("block")
        self.emit(depth, f"subgraph cluster_{name} {{")
        self.emit(depth + 1, 'label=""; style="invis";')
        for arg in block.args:
            arg_name = self.fresh("arg")
            self.node_of[id(arg)] = arg_name
            label = f"arg{arg.index}"
            if self.options.print_result_types:
                label += f" : {_truncate(shape_text(arg.type), self.options.max_label_len)}"
            self.emit(
                depth + 1,
                f'{arg_name} [label={quote(label)}, shape="ellipse", style="filled", '
                'fillcolor="#e8f4e8"];',
            )
        for op in block.ops:
            self.add_op(op, depth + 1)
        self.emit(depth, "}")

    def add_edges(self, root: Operation) -> None:
        opts = self.options
        for op in root.walk():
            if id(op) not in self.node_of:
                continue
            if opts.print_data_flow_edges:
                for index, operand in enumerate(op.operands):
                    source = self.source_of(operand)
                    if source is None:
                        continue
                    label = shape_text(operand.type)
                    self.edges.append(
                        f"{source} -> {self.node_of[id(op)]} [label={quote(label)}"
                        f', style="solid"]  // operand {index}'
                    )
            if opts.print_control_flow_edges:
                for successor in op.successors:
                    first = successor.first_op
                    if first is not None and id(first) in self.node_of:
                        self.edges.append(
                            f"{self.node_of[id(op)]} -> {self.node_of[id(first)]} "
                            '[style="dashed", color="gray40"]'
                        )
                following = op.next_op
                if following is not None and id(following) in self.node_of:
                    self.edges.append(
                        f"{self.node_of[id(op)]} -> {self.node_of[id(following)]} "
                        '[style="dashed", color="gray40"]'
                    )

    def source_of(self, value: SSAValue) -> str | None:
        if isinstance(value, OpResult):
            return self.node_of.get(id(value.op))
        if isinstance(value, BlockArgument):
            return self.node_of.get(id(value))
        return None


def module_to_dot(module: Operation, options: ViewOptions | None = None, name: str = "G") -> str:
    """DOT text for `module` (any op: its regions are drawn, the op itself is not)."""
    graph = _OpGraph(options or ViewOptions())
    graph.emit(0, f"digraph {quote(name)} {{")
    graph.emit(
        1,
        'compound=true; fontname="Helvetica"; '
        'node [shape="box", style="rounded", fontname="Helvetica", fontsize=10];',
    )
    graph.emit(1, 'edge [fontname="Helvetica", fontsize=9];')
    for region in module.regions:
        for block in region.blocks:
            for arg in block.args:
                graph.node_of[id(arg)] = graph.fresh("arg")
                graph.emit(1, f'{graph.node_of[id(arg)]} [label="arg{arg.index}"];')
            for op in block.ops:
                graph.add_op(op, 1)
    graph.add_edges(module)
    graph.lines.extend("  " + e for e in graph.edges)
    graph.emit(0, "}")
    return "\n".join(graph.lines) + "\n"


# ----------------------------------------------------------------------------------------------
# The fused executor graph of a build
# ----------------------------------------------------------------------------------------------

_OP_IN_IR = re.compile(r"=\s*\"?([A-Za-z_][\w$]*)\.([\w.$]+)")
_HIDDEN_OPS = {("nnvm", "constant"), ("nnvm", "param"), ("arith", "constant")}


def fused_op_names(graph: ExecutorGraph, kernel: str) -> list[str]:
    """The ops a fused kernel runs, in order, read off its IR in the graph (the name without the
    `fused_` prefix and hash where the graph carries no IR)."""
    text = (graph.extra.get("kernel_ir") or {}).get(kernel)
    if text:
        names = [
            op if dialect == "nnvm" else f"{dialect}.{op}"
            for dialect, op in _OP_IN_IR.findall(text)
            if (dialect, op) not in _HIDDEN_OPS and dialect != "func"
        ]
        if names:
            return names
    bare = re.sub(r"_[0-9a-f]{6,}$", "", kernel)
    return [bare.removeprefix("fused_")]


def _info_text(info: TensorInfo) -> str:
    import numpy as np

    short = {
        "float32": "f32",
        "float64": "f64",
        "float16": "f16",
        "int64": "i64",
        "int32": "i32",
        "int8": "i8",
        "uint8": "u8",
        "bool": "i1",
    }
    dtype = short.get(str(np.dtype(info.dtype)), info.dtype)
    return "x".join([*map(str, info.shape), dtype]) if info.shape else dtype


def _ref_key(ref: Ref) -> tuple:
    if ref.kind == "arena":
        return ("arena", ref.offset)
    if ref.kind in ("param", "constant"):
        return (ref.kind, ref.name)
    return (ref.kind, ref.index)


def _wrap_ops(names: list[str], width: int = 28) -> str:
    """`conv2d + add + relu`, wrapped onto lines of about `width` characters."""
    lines, line = [], ""
    for k, name in enumerate(names):
        piece = name if k == 0 else f" + {name}"
        if line and len(line) + len(piece) > width:
            lines.append(line + " +")
            piece = name
            line = ""
        line += piece
    lines.append(line)
    return "\n".join(lines)


def executor_graph_to_dot(graph: ExecutorGraph, title: str = "") -> str:
    """DOT text for the fused graph of a build: kernel calls as boxes labelled with the ops they
    fuse, inputs (green), params and constants (grey, small), outputs (orange), and every
    tensor passed between them as an edge labelled with its shape."""
    out = [f"digraph {quote(title or 'fused')} {{"]
    out.append('  rankdir="TB"; nodesep=0.3; ranksep=0.35;')
    if title:
        out.append(f'  label={quote(title)}; labelloc="t"; fontname="Helvetica"; fontsize=14;')
    out.append('  node [fontname="Helvetica", fontsize=11];')
    out.append('  edge [fontname="Helvetica", fontsize=9, color="gray30"];')
    producer: dict[tuple, str] = {}
    for k, inp in enumerate(graph.inputs):
        label = str(inp["name"]) + "\n" + _info_text(TensorInfo(list(inp["shape"]), inp["dtype"]))
        out.append(
            f"  input{k} [label={quote(label)}, "
            'shape="ellipse", style="filled", fillcolor="#c8e6c9", color="#2e7d32"];'
        )
        producer[("input", k)] = f"input{k}"
    sources: dict[tuple, str] = {}

    def source_node(ref: Ref, info: TensorInfo) -> str | None:
        key = _ref_key(ref)
        if key in producer:
            return producer[key]
        if ref.kind in ("param", "constant"):
            if key not in sources:
                name = f"{ref.kind}{len(sources)}"
                what = _truncate(ref.name, 32) if ref.kind == "param" else "constant"
                out.append(
                    f"  {name} [label={quote(what + chr(10) + _info_text(info))}, "
                    'shape="note", style="filled", fillcolor="#eeeeee", color="gray60", '
                    'fontsize=8, fontcolor="gray25"];'
                )
                sources[key] = name
            return sources[key]
        return None

    for k, node in enumerate(graph.nodes):
        name = f"kernel{k}"
        label = _wrap_ops(fused_op_names(graph, node.kernel))
        if node.device:
            label += f"\non {node.device}"
        fill = "#fff3c4" if node.device else "#d6e4f5"
        border = "#b28704" if node.device else "#1f4e8c"
        out.append(
            f'  {name} [label={quote(label)}, tooltip={quote(node.kernel)}, shape="box", '
            f'style="rounded,filled", fillcolor="{fill}", color="{border}"];'
        )
        for ref, info in zip(node.inputs, node.input_info, strict=True):
            source = source_node(ref, info)
            if source is None:
                continue
            style = (
                ', color="gray60", fontcolor="gray40"' if ref.kind in ("param", "constant") else ""
            )
            edge_label = "" if ref.kind in ("param", "constant") else _info_text(info)
            out.append(f"  {source} -> {name} [label={quote(edge_label)}{style}];")
        for ref in node.outputs:
            producer[_ref_key(ref)] = name
    # graph outputs: written by a kernel (an `output` ref) or copied from elsewhere
    for k, info in enumerate(graph.outputs):
        out.append(
            f"  output{k} [label={quote(f'output {k}' + chr(10) + _info_text(info))}, "
            'shape="ellipse", style="filled", fillcolor="#ffe0b2", color="#e65100"];'
        )
    copied = {c.output: c.source for c in graph.copies}
    for k, info in enumerate(graph.outputs):
        if k in copied:
            source = source_node(copied[k], info)
        else:
            source = producer.get(("output", k))
        if source is not None:
            out.append(f"  {source} -> output{k} [label={quote(_info_text(info))}];")
    out.append("}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------

INSTALL_HINT = "install graphviz (apt-get install graphviz)"


def dot_program() -> str:
    """The path of Graphviz's `dot`, or a UserError saying how to install it."""
    path = shutil.which("dot")
    if path is None:
        raise UserError(f"Graphviz's `dot` is not on PATH; {INSTALL_HINT}")
    return path


def render(dot_text: str, fmt: str = "svg", timeout: float = 60.0) -> bytes:
    """`dot -T<fmt>` of `dot_text`: the rendered bytes, or a UserError."""
    try:
        proc = subprocess.run(
            [dot_program(), f"-T{fmt}"],
            input=dot_text.encode(),
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise UserError(f"`dot -T{fmt}` took longer than {timeout:.0f} s") from None
    except OSError as err:
        raise UserError(f"cannot run `dot`: {err.strerror}; {INSTALL_HINT}") from None
    if proc.returncode != 0 or not proc.stdout:
        detail = " ".join(proc.stderr.decode(errors="replace").split())[:300]
        raise UserError(f"`dot -T{fmt}` failed (exit {proc.returncode}): {detail}")
    return proc.stdout
