"""Pictures: nnvm-opt --view-op-graph (Graphviz DOT of the IR, as mlir-opt's -view-op-graph) and
nnvm-compile --graph-svg (the fused graph of a build as SVG through `dot`). The DOT must parse
(`dot -Tsvg`), and the SVG must become a non-empty PNG through a real converter."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nnvm.support.errors import UserError
from nnvm.support.executor_graph import Copy, ExecutorGraph, Node, Ref, TensorInfo
from nnvm.support.graph_dot import (
    executor_graph_to_dot,
    fused_op_names,
    module_to_dot,
    parse_view_options,
    render,
)
from nnvm.tools.opt import run as opt_run

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="needs Graphviz's dot (apt-get install graphviz)"
)
needs_rsvg = pytest.mark.skipif(
    shutil.which("rsvg-convert") is None,
    reason="needs rsvg-convert to turn SVG into PNG (apt-get install librsvg2-bin)",
)

IR = """\
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %c = nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %b = nnvm.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %a = nnvm.add %c, %b : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %r = nnvm.clip %a {min = 0.0, max = 6.0} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %r : tensor<1x4x4x4xf32>
}
"""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _parse(text: str):
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module

    return parse_module(make_context(False), text, "in.mlir", 0)


def _edges(dot: str) -> list[str]:
    return re.findall(r"^\s*(\w+ -> \w+)", dot, re.M)


# -- the IR picture ----------------------------------------------------------------------------


def test_module_dot_has_ops_attrs_shapes_and_uses():
    dot = module_to_dot(_parse(IR))
    for name in ("nnvm.param", "nnvm.conv2d", "nnvm.add", "nnvm.clip", "func.return"):
        assert f"<b>{name}</b>" in dot
    assert "strides: array&lt;i64: 2, 2&gt;" in dot  # attributes, HTML-escaped
    assert 'label="1x3x8x8xf32"' in dot and 'label="4x1x1xf32"' in dot  # edges: value shapes
    assert len(_edges(dot)) == 6  # x, w -> conv; conv, b -> add; add -> clip; clip -> return
    assert "subgraph cluster_" in dot  # the function's region


def test_view_options_follow_mlir_opt():
    module = _parse(IR)
    full = module_to_dot(module)
    assert "value: dense&lt;[[[1.000000...<br" in full  # max-label-len=20: 17 chars + ...
    long = module_to_dot(module, parse_view_options("max-label-len=200"))
    assert "4.000000e+00" in long
    bare = module_to_dot(module, parse_view_options("print-attrs=false print-result-types=0"))
    assert "strides" not in bare and "-&gt; 1x4x4x4xf32" not in bare
    assert "-&gt; 1x4x4x4xf32" in full
    assert not _edges(module_to_dot(module, parse_view_options("{print-data-flow-edges=false}")))
    control = module_to_dot(module, parse_view_options("print-control-flow-edges=true"))
    assert control.count('style="dashed", color="gray40"') == 5  # op order in the block
    for bad, message in (
        ("max-label-len=x", "expects a number"),
        ("print-attrs=maybe", "expects true or false"),
        ("colour=1", "unknown option 'colour'"),
    ):
        with pytest.raises(UserError, match=message):
            parse_view_options(bad)


@needs_dot
def test_module_dot_parses_even_with_awkward_text():
    text = IR.replace('"w"', r'"a\"b<{|}>&c\\d"')
    dot = module_to_dot(_parse(text), name='we"ird')
    svg = render(dot, "svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "nnvm.conv2d" in svg.decode()


def test_opt_view_op_graph_writes_dot_to_stderr_and_keeps_the_ir(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    assert opt_run([str(src), "-p", "fuse", "-o", str(tmp_path / "plain.mlir")]) == 0
    capsys.readouterr()
    out = tmp_path / "viewed.mlir"
    assert opt_run([str(src), "-p", "fuse", "--view-op-graph", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert out.read_text() == (tmp_path / "plain.mlir").read_text()  # passed through unchanged
    assert err.startswith('digraph "in.mlir" {') and err.rstrip().endswith("}")
    assert "<b>func.call</b>" in err  # after the passes: the fused call


def test_opt_view_op_graph_to_a_file_with_options(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    dot = tmp_path / "g.dot"
    code = opt_run(
        [
            str(src),
            "--view-op-graph=print-attrs=false",
            "--view-op-graph-output",
            str(dot),
            "-o",
            str(tmp_path / "o.mlir"),
        ]
    )
    assert code == 0
    assert "digraph" not in capsys.readouterr().err
    text = dot.read_text()
    assert "<b>nnvm.conv2d</b>" in text and "strides" not in text


def test_opt_view_op_graph_bad_option_is_an_error(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    dot = tmp_path / "g.dot"
    code = opt_run(
        [str(src), "--view-op-graph=max-label-len=-1", "--view-op-graph-output", str(dot)]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "error: --view-op-graph: max-label-len must be >= 0" in err
    assert not dot.exists()


# -- the fused graph picture -------------------------------------------------------------------


def _handmade_graph() -> ExecutorGraph:
    """Two kernels (one on a device), a param, a constant, an output written by a kernel and
    one copied from the input, and a name that needs escaping."""
    t = TensorInfo([1, 8], "float32")
    return ExecutorGraph(
        inputs=[{"name": 'x"<in>', "shape": [1, 8], "dtype": "float32"}],
        outputs=[t, t],
        params=[{"name": "w{1}", "shape": [8, 8], "dtype": "float32"}],
        constants={"__constant0": {"value": [1.0], "shape": [1], "dtype": "float32"}},
        nodes=[
            Node(
                "fused_dense_relu_0123abcd",
                [Ref("input", 0), Ref("param", name="w{1}")],
                [Ref("arena", offset=0)],
                [t, TensorInfo([8, 8], "float32")],
                [t],
            ),
            Node(
                "fused_add_89abcdef",
                [Ref("arena", offset=0), Ref("constant", name="__constant0")],
                [Ref("output", 0)],
                [t, TensorInfo([1], "float32")],
                [t],
                device="toyacc",
            ),
        ],
        copies=[Copy(Ref("input", 0), 1)],
        arena_bytes=32,
        naive_bytes=32,
        kernels=["fused_dense_relu_0123abcd", "fused_add_89abcdef"],
        devices=["toyacc"],
    )


def test_fused_graph_dot_connects_kernels_through_the_arena():
    graph = _handmade_graph()
    dot = executor_graph_to_dot(graph, title="demo")
    assert fused_op_names(graph, "fused_dense_relu_0123abcd") == ["dense_relu"]  # no IR: name
    assert 'label="dense_relu"' in dot and 'label="add\\non toyacc"' in dot
    assert set(_edges(dot)) == {
        "input0 -> kernel0",
        "param0 -> kernel0",
        "kernel0 -> kernel1",
        "constant1 -> kernel1",
        "kernel1 -> output0",
        "input0 -> output1",
    }
    assert 'input0 [label="x\\"<in>\\n1x8xf32"' in dot
    graph.extra["kernel_ir"] = {
        "fused_dense_relu_0123abcd": "%2 = nnvm.dense %0, %1 : ...\n%3 = nnvm.relu %2 : ...",
    }
    assert fused_op_names(graph, "fused_dense_relu_0123abcd") == ["dense", "relu"]


@needs_dot
def test_fused_graph_dot_renders_to_png():
    png = render(executor_graph_to_dot(_handmade_graph(), title="demo"), "png")
    width, height = _png_size(png)
    assert width > 100 and height > 100


def _compile(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.compile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def _mlp(tmp_path: Path) -> str:
    from nnvm.testing import onnx_models

    (tmp_path / "m.onnx").write_bytes(onnx_models.mlp(sizes=(8, 4)).SerializeToString())
    return "m.onnx"


@needs_dot
@needs_rsvg
def test_compile_graph_svg_becomes_a_png(tmp_path):
    proc = _compile(_mlp(tmp_path), "-o", "out", "--graph-svg", "fused.svg", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    svg = (tmp_path / "fused.svg").read_bytes()
    root = ET.fromstring(svg)
    texts = " ".join(el.text or "" for el in root.iter() if el.tag.endswith("text"))
    assert "dense" in texts and "output 0" in texts and "m.onnx" not in texts
    assert "1x8xf32" in texts  # the input's shape on its node and edge
    assert not list(tmp_path.glob("fused.svg.tmp*"))
    png = tmp_path / "fused.png"
    subprocess.run(["rsvg-convert", "-o", str(png), str(tmp_path / "fused.svg")], check=True)
    width, height = _png_size(png.read_bytes())
    assert width > 50 and height > 100 and png.stat().st_size > 1000


def _fake_dot(folder: Path, body: str) -> None:
    folder.mkdir()
    script = folder / "dot"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_compile_graph_svg_without_dot_says_to_install_graphviz(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {**os.environ, "PATH": str(bare)}
    proc = _compile(_mlp(tmp_path), "-o", "out", "--graph-svg", "g.svg", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert (
        "error: Graphviz's `dot` is not on PATH; install graphviz (apt-get install graphviz)"
        in (proc.stderr)
    )
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "g.svg").exists() and not (tmp_path / "out").exists()


def test_compile_graph_svg_failing_dot_leaves_no_file(tmp_path):
    _fake_dot(tmp_path / "fake", 'echo "<svg partial"; echo "syntax error in line 1" >&2; exit 3')
    env = {**os.environ, "PATH": f"{tmp_path / 'fake'}{os.pathsep}{os.environ['PATH']}"}
    proc = _compile(_mlp(tmp_path), "-o", "out", "--graph-svg", "g.svg", cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "error: `dot -Tsvg` failed (exit 3): syntax error in line 1" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "g.svg").exists()
    assert not list(tmp_path.glob("g.svg*"))
