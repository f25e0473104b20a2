"""A channels-last MLP block as torch exports ConvNeXt's (Linear on [1, H, W, C]: a flattening
to [H*W, C] for each matmul, the bias and GELU on the [1, H, W, C] view): sink-reshapes moves the
bias and GELU across the reshape (it keeps the trailing C), so they are the matmul's epilogue,
not a kernel of their own making a round trip through memory (ConvNeXt-T 1.04 -> 0.90x
onnxruntime). The build matches onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime


def _mlp_block(h: int, w: int, c: int) -> tuple:
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((c, 4 * c)) / np.sqrt(c)).astype(np.float32)
    b1 = rng.standard_normal(4 * c).astype(np.float32)
    w2 = (rng.standard_normal((4 * c, c)) / np.sqrt(4 * c)).astype(np.float32)
    b2 = rng.standard_normal(c).astype(np.float32)
    inits = [
        numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))
    ]
    inits.append(numpy_helper.from_array(np.array([h * w, c], np.int64), "flat"))
    inits.append(numpy_helper.from_array(np.array([1, h, w, 4 * c], np.int64), "view4"))
    inits.append(numpy_helper.from_array(np.array([h * w, 4 * c], np.int64), "flat4"))
    inits.append(numpy_helper.from_array(np.array([1, h, w, c], np.int64), "view"))
    for name, value in (("sqrt2", 2**0.5), ("one", 1.0), ("half", 0.5)):
        inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["xf"]),
        helper.make_node("MatMul", ["xf", "w1"], ["m1"]),
        helper.make_node("Reshape", ["m1", "view4"], ["m1v"]),
        helper.make_node("Add", ["m1v", "b1"], ["a1"]),
        helper.make_node("Div", ["a1", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["a1", "e1"], ["g0"]),
        helper.make_node("Mul", ["g0", "half"], ["g"]),
        helper.make_node("Reshape", ["g", "flat4"], ["gf"]),
        helper.make_node("MatMul", ["gf", "w2"], ["m2"]),
        helper.make_node("Reshape", ["m2", "view"], ["m2v"]),
        helper.make_node("Add", ["m2v", "b2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, h, w, c])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, h, w, c])],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_bias_and_gelu_join_the_matmul(tmp_path, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = _mlp_block(7, 9, 32)
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params)
    kernels = [node.kernel for node in graph.nodes]
    # two matmul kernels with their epilogues (GELU in the first), and the copy of the
    # returned view into the caller's buffer
    assert len(kernels) == 3 and kernels[2].startswith("fused_reshape_"), kernels
    assert "matmul" in kernels[0] and "erf" in kernels[0], kernels
    assert kernels[1].startswith("fused_matmul_add_"), kernels
    x = np.random.default_rng(1).standard_normal((1, 7, 9, 32)).astype(np.float32)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(x=x)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)
