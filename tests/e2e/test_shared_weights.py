"""A weight shared by several layers (ALBERT's encoder, a tied embedding) is stored once.

torch exports each layer's use of a shared linear weight as its own Transpose of the one
initializer. Folded at import and packed at build one copy per use, ALBERT (6 uses of 200M
parameters) built 4.8 GB of params from an 0.8 GB model and the bench ran out of 24 GiB.
Both the importer's folds and fold-constants now compute the same thing once."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime

LAYERS = 4
HIDDEN = 64


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _shared_layers(rows: int):
    """LAYERS times x = tanh(x @ W^T + b) with one W and b, each layer transposing W itself."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    b = rng.standard_normal(HIDDEN).astype(np.float32) * 0.1
    nodes, x = [], "x"
    for k in range(LAYERS):
        nodes += [
            helper.make_node("Transpose", ["w"], [f"wt{k}"], perm=[1, 0]),
            helper.make_node("MatMul", [x, f"wt{k}"], [f"m{k}"]),
            helper.make_node("Add", [f"m{k}", "b"], [f"a{k}"]),
            helper.make_node("Tanh", [f"a{k}"], [f"h{k}"]),
        ]
        x = f"h{k}"
    graph = helper.make_graph(
        nodes,
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, HIDDEN])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [rows, HIDDEN])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("rows", [1, 16])  # a GEMV's packed panels; a matmul's
def test_shared_weight_is_one_param_and_runs_right(rows) -> None:
    model = _shared_layers(rows)
    module, params = from_onnx(model)
    weights = [v for v in params.values() if v.size == HIDDEN * HIDDEN]
    assert len(weights) == 1, sorted(params)
    graph, lib, built = build(module, params=params)
    weights = [v for v in built.values() if v.size >= HIDDEN * HIDDEN]
    assert len(weights) == 1, sorted(built)
    x = np.random.default_rng(1).standard_normal((rows, HIDDEN)).astype(np.float32)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**built)
    m.run(x=x)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-5)
