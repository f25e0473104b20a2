"""The out-of-tree example (examples/toy_accelerator) pip-installed into a private site folder:
nnvm-opt lists and runs its pass, and build(devices=["toyacc"]) runs ONNX models on its
simulator matching onnxruntime, with nothing in nnvm's tree naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pip_site import install_copy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "toy_accelerator"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install_copy(EXAMPLE, tmp_path_factory.mktemp("toyacc"))


def _env(site: Path, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    env["NNVM_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def _opt(site, tmp_path, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.opt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(site, tmp_path),
    )


KERNEL = """
func.func private @fused_dense_bias_add_relu(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %0 = nnvm.dense %x, %w : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  %1 = nnvm.bias_add %0, %b : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = nnvm.relu %1 : (tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %2 : tensor<4x32xf32>
}
func.func private @fused_softmax(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %0 = nnvm.softmax %x : (tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %0 : tensor<4x32xf32>
}
"""


def test_nnvm_opt_lists_and_runs_the_plugin_pass(site, tmp_path) -> None:
    listed = _opt(site, tmp_path, "--list-passes")
    assert listed.returncode == 0, listed.stderr
    assert "toyacc-offload" in listed.stdout
    dialects = _opt(site, tmp_path, "--show-dialects")
    assert "toyacc" in dialects.stdout
    run = _opt(site, tmp_path, "-", "-p", "toyacc-offload", stdin=KERNEL)
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.split("@fused_softmax")
    assert "toyacc.matmul" in first and "transpose_rhs" in first and "toyacc.relu" in first
    assert "nnvm." not in first.split("@fused_dense_bias_add_relu")[1]
    assert "nnvm.softmax" in second, "a kernel toyacc cannot run entirely stays as it was"
    # its output parses back (the dialect is registered for parsing too)
    again = _opt(site, tmp_path, "-", stdin=run.stdout)
    assert again.returncode == 0, again.stderr


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np, onnxruntime as ort
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime
    from nnvm.testing import onnx_models
    from toyacc import simulator

    model = getattr(onnx_models, sys.argv[1])()
    inputs = onnx_models.random_inputs(model, seed=2)
    module, params = from_onnx(model)
    graph, lib, p = build(module, target="llvm", params=params, devices=["toyacc"])
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(**inputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for k, want in enumerate(session.run(None, inputs)):
        np.testing.assert_allclose(m.get_output(k), want, rtol=1e-3, atol=1e-4)
    print(json.dumps({"offloaded": sum(n.device == "toyacc" for n in graph.nodes),
                      "nodes": len(graph.nodes), **simulator.STATS}))
    """
)


@pytest.mark.parametrize("model", ["mlp", "transformer_encoder"])
def test_build_offloads_to_toyacc_and_matches_onnxruntime(site, tmp_path, model) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, model],
        capture_output=True,
        text=True,
        env=_env(site, tmp_path),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["offloaded"] >= 1 and stats["launches"] == stats["offloaded"]
    assert stats["gemm_tiles"] > 0
    if model == "mlp":
        assert stats["offloaded"] == stats["nodes"]
    else:  # layer norms, softmax, GELU stay on the host
        assert stats["offloaded"] < stats["nodes"]


def test_core_tree_does_not_name_the_example() -> None:
    core = [ROOT / d for d in ("nnvm", "dialects", "passes", "lowering", "targets")]
    for folder in core:
        for path in folder.rglob("*.py"):
            assert "toyacc" not in path.read_text(), f"{path} names the out-of-tree example"
