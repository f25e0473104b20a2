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
from nnvm.targets.cpu.target import host_features
from nnvm.testing.onnx_models import grouped_block, random_inputs


@pytest.mark.parametrize(
    ("width", "group", "stride"), [(40, 8, 1), (48, 8, 2), (32, 4, 1)],
    ids=["regnet-padded", "regnet-stride-2", "resnext-4"],
)  # fmt: skip
def test_narrow_groups_match_onnxruntime(tmp_path, monkeypatch, width, group, stride):
    _check(tmp_path, monkeypatch, width, group, stride, "llvm", f'kernel_layout = "OIHW{group}i')


@pytest.mark.skipif(not host_features().get("avx2"), reason="the host has no AVX2")
@pytest.mark.parametrize("group", [4, 2])
def test_narrow_groups_in_avx2_blocks(tmp_path, monkeypatch, group):
    """An AVX2 build (8-lane blocks): groups of 4 and 2 span a block, vpermps over 8 lanes."""
    want = f'data_layout = "NCHW8c", kernel_layout = "OIHW{group}i8o"'
    _check(tmp_path, monkeypatch, 32, group, 1, "llvm -mcpu=x86-64-v3", want)


def _check(tmp_path, monkeypatch, width, group, stride, target, layout):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = grouped_block(width=width, group=group, stride=stride)
    module, params = from_onnx(model)
    graph, lib, params = build(module, target=target, params=params, opt_level=3)
    irs = [graph.extra["kernel_ir"][node.kernel] for node in graph.nodes]
    grouped = [ir for ir in irs if "groups = " in ir and "nnvm.conv2d" in ir]
    assert grouped and all(layout in ir for ir in grouped), grouped
    feeds = random_inputs(model, seed=1)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**feeds)
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)
