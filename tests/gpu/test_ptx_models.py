"""Every kernel of a model built for `cuda -arch=sm_90` / `sm_80` (the GPU default schedules,
convert-gpu-to-llvm, NVPTX) is accepted by ptxas: the test models here (sm_80 for two of them),
the five bench models for both in the slow tier. Skipped where no ptxas is installed (PATH or
the nvidia-cuda-nvcc wheel)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.targets.gpu.cuda.blob import decode_blob
from nnvm.targets.gpu.cuda.ptxas import find_ptxas, run_ptxas
from nnvm.targets.gpu.launch_plan import Launch
from nnvm.testing import onnx_models

pytestmark = pytest.mark.skipif(
    find_ptxas() is None, reason="no ptxas (PATH or pip install nvidia-cuda-nvcc)"
)


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def check_model(model, arch: str) -> int:
    """Build `model` with every kernel it can on CUDA; ptxas each blob; the kernels checked."""
    module, params = from_onnx(model)
    graph, lib, _ = build(module, params=params, devices=[f"cuda -arch={arch}"])
    placed = [n.kernel for n in graph.nodes if n.device]
    assert len(placed) == len(graph.nodes), "every kernel of these models runs on the GPU"
    entries = 0
    for name in dict.fromkeys(placed):
        plan, ptx, got_arch, _ = decode_blob(lib.blob(name))
        assert got_arch == arch
        launched = {s.kernel for s in plan.steps if isinstance(s, Launch)}
        if launched:
            resources = run_ptxas(ptx, arch)
            assert {r.name for r in resources} == launched
            entries += len(resources)
    return entries


TEST_MODELS = ["mlp", "resnet_like", "mobilenet_like", "transformer_encoder", "lstm_model"]


@pytest.mark.parametrize(
    ("model_name", "arch"),
    [(m, "sm_90") for m in TEST_MODELS] + [("resnet_like", "sm_80"), ("lstm_model", "sm_80")],
)
def test_test_models_pass_ptxas(model_name: str, arch: str) -> None:
    assert check_model(getattr(onnx_models, model_name)(), arch) > 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("model_name", ["mlp", "resnet18", "mobilenetv2", "bert2", "lstm"])
def test_bench_models_pass_ptxas(model_name: str, arch: str) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_models", Path(__file__).resolve().parents[2] / "bench" / "models.py"
    )
    bench_models = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench_models)  # type: ignore[union-attr]
    assert check_model(bench_models.MODELS[model_name](), arch) > 0
