"""Blocks of a RegNetY / ResNeXt style (nnvm.testing.onnx_models.grouped_block: a 1x1 conv, a
grouped 3x3 conv in groups of 8 or 4, squeeze-excite, a 1x1 conv and a residual add) built at
O3 match onnxruntime: the grouped convs run in full channel blocks spanning groups
(alter-layout's narrow groups), the 40 channels padded to 48 (the padding a group of its
own), at stride 1 and 2."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.testing.onnx_models import grouped_block, random_inputs


@pytest.mark.parametrize(
    ("width", "group", "stride"), [(40, 8, 1), (48, 8, 2), (32, 4, 1)],
    ids=["regnet-padded", "regnet-stride-2", "resnext-4"],
)  # fmt: skip
def test_narrow_groups_match_onnxruntime(tmp_path, monkeypatch, width, group, stride):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = grouped_block(width=width, group=group, stride=stride)
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params, opt_level=3)
    irs = [graph.extra["kernel_ir"][node.kernel] for node in graph.nodes]
    grouped = [ir for ir in irs if "groups = " in ir and "nnvm.conv2d" in ir]
    assert grouped and all(f'kernel_layout = "OIHW{group}i' in ir for ir in grouped)
    feeds = random_inputs(model, seed=1)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**feeds)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)
