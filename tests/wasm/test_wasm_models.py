"""The test models built with target="wasm" run under node through nnvm.js and match the CPU
target (rtol 1e-3, atol 1e-4); the module imports nothing and exports its memory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from wasm_harness import build_wasm, on_cpu, requires_wasm, run_js, run_node

from nnvm.frontend import from_onnx
from nnvm.testing import onnx_models

pytestmark = requires_wasm

FAST = ["mlp", "resnet_like", "transformer_encoder"]
SLOW = ["mobilenet_like", "lstm_model"]


@pytest.fixture(autouse=True)
def private_kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def check_model(name: str, folder: Path, target: str = "wasm") -> dict:
    model = getattr(onnx_models, name)()
    inputs = onnx_models.random_inputs(model, seed=7)
    module, params = from_onnx(model)
    built = build_wasm(module, params, folder, target)
    got, timing = run_node(built, [inputs[i["name"]] for i in built.graph.inputs], repeat=2)
    want = on_cpu(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
    return timing


@pytest.mark.parametrize("name", [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_model_matches_cpu(name: str, tmp_path: Path) -> None:
    timing = check_model(name, tmp_path)
    assert "+simd128" in timing["target"]
    assert len(timing["run_ms"]) == 2


def test_scalar_build_matches_cpu(tmp_path: Path) -> None:
    """`wasm -mattr=-simd128`: no SIMD instructions, the same results."""
    timing = check_model("mlp", tmp_path, target="wasm -mattr=-simd128")
    assert "simd128" not in timing["target"]


def test_module_imports_nothing(tmp_path: Path) -> None:
    module, params = from_onnx(onnx_models.mlp())
    built = build_wasm(module, params, tmp_path)
    proc = run_js(
        "import { readFileSync } from 'node:fs';\n"
        "const m = new WebAssembly.Module(readFileSync('model.wasm'));\n"
        "console.log(JSON.stringify({imports: WebAssembly.Module.imports(m),"
        " exports: WebAssembly.Module.exports(m).map((e) => e.name)}));\n",
        built.folder,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["imports"] == []
    assert {"memory", "nnvm_wasm_run", "nnvm_wasm_alloc"} <= set(seen["exports"])
