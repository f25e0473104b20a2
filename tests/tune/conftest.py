"""Shared models and tasks for the tuning tests: small, so a batch builds and times in seconds."""

from __future__ import annotations

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
