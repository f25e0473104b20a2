"""The five test models (nnvm.testing.onnx_models: mlp, ResNet-, MobileNet-style, transformer
encoder, LSTM) and the five bench models built with devices=["opencl"] run every kernel on the
OpenCL device (PoCL in CI) and match the CPU-only build; nnvm.opencl(0) selects those kernels, a device the library
was not built for is a UserError."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from opencl_harness import requires_opencl

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models

pytestmark = requires_opencl
BENCH_MODELS = Path(__file__).resolve().parents[2] / "bench" / "models.py"


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _outputs(graph, lib, params, inputs, device=None, debug=False):
    m = graph_runtime.create(graph, lib, device, debug=debug)
    m.set_input(**params)
    m.run(**inputs)
    return [m.get_output(k) for k in range(m.get_num_outputs())]


def _matches_cpu(model, inputs):  # noqa: ANN001, ANN202
    """Build with every kernel on OpenCL, run, compare with the CPU build's outputs; returns
    the OpenCL build and the CPU outputs."""
    module, params = from_onnx(model)
    graph, lib, p = build(module, target="llvm", params=params, devices=["opencl"])
    assert all(n.device == "opencl" for n in graph.nodes), "every kernel placed on the GPU"
    got = _outputs(graph, lib, p, inputs, nnvm.opencl(0))
    host_graph, host_lib, host_p = build(module, target="llvm", params=params)
    want = _outputs(host_graph, host_lib, host_p, inputs, nnvm.cpu(0))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
    return graph, lib, p, want


@pytest.mark.parametrize(
    "model_name", ["mlp", "resnet_like", "mobilenet_like", "transformer_encoder", "lstm_model"]
)
def test_model_on_opencl_matches_cpu(model_name: str) -> None:
    model = getattr(onnx_models, model_name)()
    inputs = onnx_models.random_inputs(model, seed=3)
    graph, lib, p, want = _matches_cpu(model, inputs)
    assert graph.devices == ["opencl"]
    debug = _outputs(graph, lib, p, inputs, nnvm.gpu(0), debug=True)  # kernel by kernel
    for g, w in zip(debug, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("model_name", ["mlp", "resnet18", "mobilenetv2", "bert2", "lstm"])
def test_bench_model_on_opencl_matches_cpu(model_name: str) -> None:
    """The five bench models (bench/models.py) at their bench sizes, every kernel on OpenCL
    with the default (shared-memory) templates, against the CPU build."""
    spec = importlib.util.spec_from_file_location("bench_models", BENCH_MODELS)
    assert spec is not None and spec.loader is not None
    bench_models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_models)
    model = bench_models.MODELS[model_name]()
    _matches_cpu(model, onnx_models.random_inputs(model, seed=0))


def test_device_without_kernels_is_an_error() -> None:
    model = onnx_models.mlp()
    module, params = from_onnx(model)
    graph, lib, _ = build(module, target="llvm", params=params)
    with pytest.raises(UserError, match="no kernels built for it"):
        graph_runtime.create(graph, lib, nnvm.opencl(0))
    graph, lib, _ = build(module, target="llvm", params=params, devices=["opencl"])
    with pytest.raises(UserError, match="no kernels built for it"):
        graph_runtime.create(graph, lib, nnvm.cuda(0))
    with pytest.raises(UserError, match="no kernels built for it"):
        graph_runtime.create(graph, lib, nnvm.opencl(1))


def test_exported_library_carries_the_opencl_kernels(tmp_path) -> None:
    """export_library packs the OpenCL C and launch plans beside the host code: a library
    loaded in place of the build's runs on nnvm.opencl(0) with the same results."""
    model = onnx_models.mlp()
    inputs = onnx_models.random_inputs(model, seed=4)
    module, params = from_onnx(model)
    graph, lib, p = build(module, target="llvm", params=params, devices=["opencl"])
    lib.export_library(str(tmp_path / "model.so"))
    (tmp_path / "graph.json").write_text(graph.to_json())
    loaded = nnvm.runtime.load_module(str(tmp_path / "model.so"))
    got = _outputs(str(tmp_path / "graph.json"), loaded, p, inputs, nnvm.opencl(0))
    want = _outputs(graph, lib, p, inputs, nnvm.opencl(0))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
