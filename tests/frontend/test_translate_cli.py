"""nnvm-translate --import-onnx as a user runs it: a subprocess, files on disk, exit codes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from nnvm.support.params import load_params_file
from nnvm.testing.onnx_models import mlp

TRANSLATE = shutil.which("nnvm-translate")
COMMAND = [TRANSLATE] if TRANSLATE else [sys.executable, "-m", "nnvm.tools.translate"]


def _run(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *map(str, args)], capture_output=True, text=True, timeout=120)


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


def test_import_writes_ir_and_params_beside_it(tmp_path: Path) -> None:
    model = tmp_path / "mlp.onnx"
    onnx.save(mlp(), model)
    out = tmp_path / "mlp.mlir"
    proc = _run("--import-onnx", model, "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "func.func @main" in text and "nnvm.dense" in text
    assert 'nnvm.param "fc0.weight"' in text
    params = load_params_file(tmp_path / "mlp.params")
    assert params["fc0.weight"].shape == (32, 64)
    assert "dense<" not in text  # weights stay out of the IR


def test_ir_round_trips_through_nnvm_opt(tmp_path: Path) -> None:
    """The printed IR parses back (nnvm-opt reads it with its params)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser

    from nnvm.dialects.nnvm import NNVM
    from nnvm.reference import run_reference

    model = tmp_path / "m.onnx"
    onnx.save(mlp(), model)
    assert _run("--import-onnx", model, "-o", tmp_path / "m.mlir").returncode == 0
    ctx = Context()
    for d in (Builtin, Func, NNVM):
        ctx.load_dialect(d)
    module = Parser(ctx, (tmp_path / "m.mlir").read_text()).parse_module()
    module.verify()
    x = np.ones((1, 64), np.float32)
    (y,) = run_reference(module, load_params_file(tmp_path / "m.params"), {"input": x})
    assert y.shape == (1, 10)


def _symbolic_model(path: Path) -> None:
    x = helper.make_tensor_value_info("data", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["data"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_shape_flag_fills_symbolic_dims(tmp_path: Path) -> None:
    model = tmp_path / "sym.onnx"
    _symbolic_model(model)
    out = tmp_path / "sym.mlir"
    proc = _run("--import-onnx", model, "-o", out, "--shape", "data=3,4")
    assert proc.returncode == 0, proc.stderr
    assert "tensor<3x4xf32>" in out.read_text()


@pytest.mark.parametrize(
    "make, args, message",
    [
        (lambda p: p.write_bytes(b"\x08\x07garbage\xff\xff"), [], "not a valid ONNX model"),
        (lambda p: p.write_text(""), [], "not a valid ONNX model"),
        (_symbolic_model, [], "input 'data'"),
        (_symbolic_model, ["--shape", "data=1,x"], "dimensions must be integers"),
        (_symbolic_model, ["--shape", "nope=1,4"], "'nope', which is not a graph input"),
        (_symbolic_model, ["--shape", "data=1,5"], "inconsistent"),
    ],
)
def test_bad_input_exits_1_without_traceback_or_output(tmp_path: Path, make, args, message) -> None:
    model = tmp_path / "bad.onnx"
    make(model)
    out = tmp_path / "bad.mlir"
    proc = _run("--import-onnx", model, "-o", out, *args)
    assert proc.returncode == 1
    _no_traceback(proc)
    assert "error:" in proc.stderr and message in proc.stderr, proc.stderr
    assert not out.exists()
    assert not (tmp_path / "bad.params").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.onnx"]


def test_missing_file_and_usage_errors_exit_1(tmp_path: Path) -> None:
    proc = _run("--import-onnx", tmp_path / "absent.onnx", "-o", tmp_path / "o.mlir")
    assert proc.returncode == 1 and "no such file" in proc.stderr
    _no_traceback(proc)
    proc = _run(tmp_path / "absent.onnx")  # no mode flag
    assert proc.returncode == 1 and "error:" in proc.stderr
    _no_traceback(proc)
    assert list(tmp_path.iterdir()) == []


def test_unsupported_ops_are_listed(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("RandomUniformLike", ["a"], ["b"], name="first"),
        helper.make_node("Det", ["x"], ["c"], name="second"),
        helper.make_node("Add", ["b", "c"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = tmp_path / "u.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    proc = _run("--import-onnx", model, "-o", tmp_path / "u.mlir")
    assert proc.returncode == 1
    _no_traceback(proc)
    assert (
        "'first' (RandomUniformLike, opset 17)" in proc.stderr
        and "'second' (Det, opset 17)" in proc.stderr
    )
