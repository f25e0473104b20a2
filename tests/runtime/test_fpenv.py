"""Kernels run with denormal floats flushed to zero (targets/cpu/nnvm_fpenv.h), in a run and in
the debug runtime's kernel-by-kernel calls, and the caller's floating-point environment is
its own again afterwards. A masked softmax's exp(-100) is a denormal; multiplying by it took
a microcode assist per operation (a Swin window-attention matmul ran 40x slower)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from onnx import TensorProto, helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime

pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"),
    reason="the flush-to-zero mode is set through x86's MXCSR only",
)

TINY = np.float32(3e-44)  # a denormal: below 2^-126


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _matmul_module():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 49, 49])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 49, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 49, 32])
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "g", [a, b], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    module, params = from_onnx(model)
    return build(module, params=params)


def _denormal_survives_here() -> bool:
    """Does numpy, on this thread, still make a denormal (no flush-to-zero left behind)?"""
    return bool(np.float32(1e-30) * np.float32(1e-10) != 0)


@pytest.mark.parametrize("debug", [False, True])
def test_denormals_flush_in_kernels_and_not_after(debug: bool) -> None:
    assert _denormal_survives_here()
    graph, lib, params = _matmul_module()
    m = graph_runtime.create(graph, lib, nnvm.cpu(0), debug=debug)
    m.set_input(**params)
    a = np.full((4, 49, 49), TINY, dtype=np.float32)
    a[:, :, 0] = 1.0  # one normal column: the product is b's first row, plus nothing
    b = np.random.default_rng(0).standard_normal((4, 49, 32)).astype(np.float32)
    m.run(a=a, b=b)
    y = m.get_output(0)
    want = np.matmul(a, b)  # numpy keeps the denormal terms: they change nothing a float holds
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-30)
    only_tiny = np.full((4, 49, 49), TINY, dtype=np.float32)
    m.run(a=only_tiny, b=np.ones((4, 49, 32), np.float32))
    assert not np.any(m.get_output(0)), "denormal products were not flushed to zero"
    assert _denormal_survives_here(), "the run left flush-to-zero set on the calling thread"
