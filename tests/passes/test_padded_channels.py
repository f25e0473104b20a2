"""Channels that no vector-wide block divides (20, 36, 33 here; MnasNet's 24, 40, 72, 120,
ShuffleNet's 58, SqueezeNet's 1000 classes) are padded to whole blocks by alter-layout, as
onnxruntime's NCHWc convs do, instead of half-width blocks, NCHW direct convs or matmuls.
A MobileNet-style graph over such channels (stem, hard-swish, depthwise, squeeze-excite,
residual, max pool, a classifier, a concat and a log that go back to NCHW) built at O3 matches
onnxruntime, and its convs run blocked with padding."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime


def _model() -> tuple:
    rng = np.random.default_rng(0)
    inits = []

    def param(name: str, *shape: int) -> str:
        scale = 1.0 / np.sqrt(np.prod(shape[1:])) if len(shape) > 1 else 0.5
        inits.append(
            numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
        )
        return name

    def conv(x: str, y: str, o: int, c: int, k: int, **attrs: object) -> helper.NodeProto:
        return helper.make_node(
            "Conv",
            [x, param(f"{y}_w", o, c, k, k), param(f"{y}_b", o)],
            [y],
            kernel_shape=[k, k],
            **attrs,
        )

    nodes = [
        conv("x", "c1", 20, 3, 3, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c1"], ["h1"]),
        conv("h1", "c2", 36, 20, 1),
        helper.make_node("Relu", ["c2"], ["r2"]),
        conv("r2", "dw", 36, 1, 3, pads=[1, 1, 1, 1], group=36),
        helper.make_node("Clip", ["dw", "lo", "hi"], ["dwc"]),
        helper.make_node("GlobalAveragePool", ["dwc"], ["gp"]),
        conv("gp", "s1", 12, 36, 1),
        helper.make_node("Relu", ["s1"], ["s1r"]),
        conv("s1r", "s2", 36, 12, 1),
        helper.make_node("HardSigmoid", ["s2"], ["s2h"]),
        helper.make_node("Mul", ["dwc", "s2h"], ["se"]),
        conv("se", "p", 20, 36, 1),
        helper.make_node("Add", ["p", "h1"], ["res"]),
        helper.make_node("MaxPool", ["res"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        conv("mp", "cls", 33, 20, 1),
        helper.make_node("GlobalAveragePool", ["cls"], ["cg"]),
        helper.make_node("Flatten", ["cg"], ["logits"]),
        helper.make_node("Concat", ["res", "h1"], ["cat"], axis=1),
        helper.make_node("Sigmoid", ["cat"], ["sig"]),
        helper.make_node("Log", ["sig"], ["logsig"]),
    ]
    inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "lo"))
    inits.append(numpy_helper.from_array(np.array(6.0, np.float32), "hi"))
    graph = helper.make_graph(
        nodes,
        "padded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 17, 19])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("logsig", TensorProto.FLOAT, None),
        ],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_padded_channels_match_onnxruntime(tmp_path, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = _model()
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params, opt_level=3)
    irs = [graph.extra["kernel_ir"][node.kernel] for node in graph.nodes]
    convs = [ir for ir in irs if "nnvm.conv2d" in ir]
    # every conv (the stem too: its out_layout) computes in a blocked layout; the 1x1 convs
    # over 20, 36 and 33 channels stay convs (only the squeeze to 12 channels, fewer than an
    # AVX-512 block, may run as a matmul)
    assert len(convs) >= 6 and all(re.search(r'layout = "NCHW\d+c"', ir) for ir in convs)
    assert any("logical = [1, 20," in ir for ir in irs)  # a padded result, cropped to 20
    x = np.random.default_rng(1).standard_normal((1, 3, 17, 19)).astype(np.float32)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(x=x)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    for k, w in enumerate(want):
        np.testing.assert_allclose(m.get_output(k), w, rtol=1e-4, atol=1e-4)
