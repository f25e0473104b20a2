"""Shared fixtures of the accelerator tests: a small float model with convs and denses, and
its shift-requantized graph (what `build(..., devices=["accel"])` offloads)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnvm.frontend import from_onnx
from nnvm.quantize import quantize
from nnvm.testing import onnx_models


def convs_model(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """Conv 3x3 (bias) -> Relu -> Conv 1x1 stride 2 (no bias) -> Relu -> Conv 3x3 stride 2
    pad 1 (bias) -> GAP -> Flatten -> Gemm -> Relu -> Gemm: odd channel counts (not whole 16-blocks),
    batch > 1, and a dense between two others."""
    rng = np.random.default_rng(seed)

    def init(name, shape, scale=0.2):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name
        )

    inits = [
        init("w1", (24, 5, 3, 3)),
        init("b1", (24,), 0.1),
        init("w2", (20, 24, 1, 1)),
        init("w3", (33, 20, 3, 3)),
        init("b3", (33,), 0.1),
        init("g1", (40, 33)),
        init("gb1", (40,), 0.1),
        init("g2", (7, 40)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c3"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "g1", "gb1"], ["d1"], transB=1),
        helper.make_node("Relu", ["d1"], ["r3"]),
        helper.make_node("Gemm", ["r3", "g2"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 5, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def quantized():
    model = convs_model()
    module, params = from_onnx(model)
    cal = [onnx_models.random_inputs(model, seed=50 + k) for k in range(4)]
    qm, qp, _ = quantize(module, params, cal, requant="shift", skip_first=False)
    return model, qm, qp
