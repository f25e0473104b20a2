"""Conv1d, activation, Conv1d as torch exports SqueezeBERT's feed-forward (a grouped pointwise
Conv1d each side of an erf GELU). The importer runs a 1-D conv as reshape, conv2d, reshape, so
while alter-layout ran the GELU sat on the 3-D view, and only sink-reshapes (after it) put it
between the two blocked convs: it ran as a kernel of its own, a layout transform out and one
back in, at 15% of the copy roof. alter-layout's second run in the O3 pipeline sinks the
transforms through it, so the GELU is the first conv's epilogue. The build matches
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime


def _conv1d_gelu_conv1d(batch: int, channels: int, length: int, groups: int):
    rng = np.random.default_rng(0)
    hidden = 4 * channels
    w1 = (rng.standard_normal((hidden, channels // groups, 1)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((channels, hidden // groups, 1)) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    for name, value in (("sqrt2", 2**0.5), ("one", 1.0), ("half", 0.5)):
        inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], group=groups),
        helper.make_node("Div", ["c1", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["half", "e1"], ["h"]),
        helper.make_node("Mul", ["c1", "h"], ["g"]),
        helper.make_node("Conv", ["g", "w2"], ["y"], group=groups),
    ]
    graph = helper.make_graph(
        nodes,
        "ffn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, channels, length])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("groups", [1, 4])
def test_gelu_joins_the_first_conv(tmp_path, monkeypatch, groups):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = _conv1d_gelu_conv1d(2, 64, 30, groups)
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params)
    kernels = [node.kernel for node in graph.nodes]
    assert any("conv2d" in k and "erf" in k for k in kernels), kernels
    assert not any("erf" in k and "layout_transform" in k for k in kernels), kernels
    x = np.random.default_rng(1).standard_normal((2, 64, 30)).astype(np.float32)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(x=x)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)
