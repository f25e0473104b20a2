"""Shared models and tasks for the tuning tests: small, so a batch builds and times in seconds."""

from __future__ import annotations

import subprocess
import sys

import pytest
from onnx import helper

from nnvm.frontend import from_onnx
from nnvm.testing.onnx_models import single_op
from nnvm.tune.task import extract_tasks


def matmul_model():
    return single_op(helper.make_node("MatMul", ["x", "w"], ["y"]), [1, 20, 64], {"w": (64, 48)})


@pytest.fixture(scope="session")
def matmul_onnx():
    return matmul_model()


@pytest.fixture(scope="session")
def matmul_graph():
    return from_onnx(matmul_model())


@pytest.fixture(scope="session")
def matmul_task(matmul_graph):
    module, params = matmul_graph
    (task,) = extract_tasks(module, params)
    return task


def run_tune_cli(*args: str, **kw) -> subprocess.CompletedProcess:
    """`nnvm-tune ARGS` in a process of its own, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.tune", *args],
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )


@pytest.fixture
def tune_cli():
    return run_tune_cli


@pytest.fixture
def matmul_file(tmp_path, matmul_onnx):
    """The small matmul model saved as an ONNX file."""
    import onnx

    path = tmp_path / "mm.onnx"
    onnx.save(matmul_onnx, path)
    return path
