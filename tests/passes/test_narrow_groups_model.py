"""Blocks of a RegNetY / ResNeXt style (a 1x1 conv, a grouped 3x3 conv in groups of 8 or 4,
squeeze-excite, a 1x1 conv and a residual add) built at O3 match onnxruntime: the grouped
convs run in full channel blocks spanning groups (alter-layout's narrow groups), the 40
channels padded to 48 (the padding a group of its own), at stride 1 and 2."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime


def _block_model(width: int, group: int, stride: int):
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
            "Conv", [x, param(f"{y}_w", o, c, k, k), param(f"{y}_b", o)], [y],
            kernel_shape=[k, k], **attrs,
        )  # fmt: skip

    nodes = [
        conv("x", "a", width, 24, 1),
        helper.make_node("Relu", ["a"], ["ar"]),
        conv("ar", "g", width, group, 3, pads=[1] * 4, strides=[stride] * 2, group=width // group),
        helper.make_node("Relu", ["g"], ["gr"]),
        helper.make_node("GlobalAveragePool", ["gr"], ["sq"]),
        conv("sq", "s1", 8, width, 1),
        helper.make_node("Relu", ["s1"], ["s1r"]),
        conv("s1r", "s2", width, 8, 1),
        helper.make_node("Sigmoid", ["s2"], ["s2s"]),
        helper.make_node("Mul", ["gr", "s2s"], ["se"]),
        conv("se", "c", 24, width, 1),
        conv("x", "skip", 24, 24, 1, strides=[stride] * 2),
        helper.make_node("Add", ["c", "skip"], ["res"]),
        helper.make_node("Relu", ["res"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "narrow_groups",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 24, 15, 15])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize(
    ("width", "group", "stride"), [(40, 8, 1), (48, 8, 2), (32, 4, 1)],
    ids=["regnet-padded", "regnet-stride-2", "resnext-4"],
)  # fmt: skip
def test_narrow_groups_match_onnxruntime(tmp_path, monkeypatch, width, group, stride):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = _block_model(width, group, stride)
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params, opt_level=3)
    irs = [graph.extra["kernel_ir"][node.kernel] for node in graph.nodes]
    grouped = [ir for ir in irs if "groups = " in ir and "nnvm.conv2d" in ir]
    assert grouped and all(f'kernel_layout = "OIHW{group}i' in ir for ir in grouped)
    x = np.random.default_rng(1).standard_normal((2, 24, 15, 15)).astype(np.float32)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(x=x)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)
