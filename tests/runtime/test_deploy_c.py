"""C deployment as docs/deploy-c.md describes it: the example program examples/deploy_c/main.c
compiled with `cc` against exported model libraries, run with no Python. Two different models in
one program each compute their own results; a library built for CPU features the (simulated)
CPU lacks is refused by nnvm_create with a message naming them; the rpath layout runs from any
working directory; the library exports only the C API."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

import nnvm.compiler
from nnvm.frontend import from_onnx
from nnvm.runtime import load_module
from nnvm.targets.cpu.link import EXPORTED
from nnvm.targets.cpu.target import missing_features, parse_target
from nnvm.testing.onnx_models import mlp, single_op

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deploy_c" / "main.c"
PORTABLE = "llvm -mcpu=x86-64-v3"
V3 = sorted(parse_target(PORTABLE).required)
LESSER_CPU = "sse3,ssse3,sse4.1,sse4.2,popcnt,cx16,sahf,avx"  # an x86-64-v2 CPU with AVX


def _mlp_model():
    model = mlp(sizes=(16, 8, 4), seed=3)

    def expected(x: np.ndarray) -> np.ndarray:
        w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        h = np.maximum(x @ w["fc0.weight"].T + w["fc0.bias"], 0)
        return h @ w["fc1.weight"].T + w["fc1.bias"]

    return model, expected, (1, 16)


def _matmul_model():
    model = single_op(helper.make_node("MatMul", ["x", "w"], ["y"]), [3, 8], {"w": [8, 5]}, seed=7)
    w = numpy_helper.to_array(model.graph.initializer[0])
    return model, (lambda x: x @ w), (3, 8)


def _export(model, target: str, folder: Path, name: str) -> tuple[Path, Path]:
    module, params = from_onnx(model)
    graph, lib, params = nnvm.compiler.build(module, target=target, params=params)
    folder.mkdir(parents=True, exist_ok=True)
    so = folder / f"lib{name}.so"
    lib.export_library(so)
    lib.export_header(folder / "nnvm_runtime.h")
    blob = folder / f"{name}.params"
    blob.write_bytes(nnvm.compiler.save_param_dict(params, graph.model_hash))
    return so, blob


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """Two models exported into lib/: A (an MLP, built for the portable x86-64-v3 target) and
    B (a MatMul, for this host); their inputs and expected outputs."""
    if missing_features(set(V3)):
        pytest.skip("this host is not x86-64-v3")
    root = tmp_path_factory.mktemp("deploy")
    (mlp_model, mlp_expected, mlp_shape), (mm_model, mm_expected, mm_shape) = (
        _mlp_model(),
        _matmul_model(),
    )
    a = _export(mlp_model, PORTABLE, root / "lib", "mlp")
    b = _export(mm_model, "llvm", root / "lib", "matmul")
    rng = np.random.default_rng(0)
    xa = rng.standard_normal(mlp_shape).astype(np.float32)
    xb = rng.standard_normal(mm_shape).astype(np.float32)
    xa.tofile(root / "a.bin")
    xb.tofile(root / "b.bin")
    return {
        "root": root,
        "a": a,
        "b": b,
        "inputs": (root / "a.bin", root / "b.bin"),
        "expected": (mlp_expected(xa), mm_expected(xb)),
    }


def _cc(*args: str | Path, cwd: Path) -> None:
    cmd = ["cc", "-O2", "-Wall", "-Werror", *map(str, args), "-ldl"]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


def _run(program: Path, *args: str | Path, cwd: Path, env: dict | None = None):
    return subprocess.run(
        [str(program), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def _outputs(stdout: str) -> dict[tuple[int, int], np.ndarray]:
    """`output <model> <index> <dtype> <dims>: values` lines as float32 arrays."""
    found = {}
    for line in stdout.splitlines():
        head, _, values = line.partition(":")
        word, model, index, dtype, dims = head.split()
        assert word == "output" and dtype == "0", line
        shape = [int(d) for d in dims.split("x")]
        found[(int(model), int(index))] = np.array(values.split(), np.float32).reshape(shape)
    return found


@pytest.fixture(scope="module")
def program(deployed):
    """main.c built as the docs say: bin/main linked with lib/libmlp.so, rpath $ORIGIN/../lib."""
    root = deployed["root"]
    (root / "bin").mkdir(exist_ok=True)
    _cc(EXAMPLE, "-Ilib", "-Llib", "-lmlp", "-Wl,-rpath,$ORIGIN/../lib", "-o", "bin/main", cwd=root)
    return root / "bin" / "main"


def test_the_library_exports_only_the_c_api(deployed):
    proc = subprocess.run(
        ["nm", "-D", "--defined-only", str(deployed["a"][0])], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip("needs nm")
    names = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    fixed = {n for n in EXPORTED if not n.endswith("*")}
    assert names - fixed <= {n for n in names if n.startswith(("nnvm_blob_", "nnvm_trace_"))}
    assert {"nnvm_create", "nnvm_run", "nnvm_kernel", "nnvm_build_target"} <= names
    assert not [n for n in names if n.startswith("fused_") or n.startswith("nnvm_graph_")]
    dyn = subprocess.run(["readelf", "-d", str(deployed["a"][0])], capture_output=True, text=True)
    if dyn.returncode == 0:
        assert "Library soname: [libmlp.so]" in dyn.stdout


def test_two_models_in_one_program_compute_their_own_results(deployed, program):
    """Model A is linked into the program (its symbols are global); B is opened with dlopen.
    Both libraries define the same internal names (nnvm_graph_run, the tables): each must run
    its own, not A's."""
    root = deployed["root"]
    (_, a_params), (b_lib, b_params) = deployed["a"], deployed["b"]
    xa, xb = deployed["inputs"]
    proc = _run(program, a_params, xa, "--load", b_lib, b_params, xb, cwd=root)
    assert proc.returncode == 0, proc.stderr
    got = _outputs(proc.stdout)
    assert sorted(got) == [(0, 0), (1, 0)]
    np.testing.assert_allclose(got[(0, 0)], deployed["expected"][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[(1, 0)], deployed["expected"][1], rtol=1e-4, atol=1e-5)


def test_params_of_the_other_model_are_refused_clearly(deployed, program):
    proc = _run(program, deployed["b"][1], cwd=deployed["root"])
    assert proc.returncode == 1
    assert "params blob belongs to model" in proc.stderr


def test_a_lesser_cpu_is_refused_with_the_missing_features(deployed, program):
    root = deployed["root"]
    a_params, xa = deployed["a"][1], deployed["inputs"][0]
    refused = _run(program, a_params, xa, cwd=root, env={"NNVM_CPU_FEATURES_OVERRIDE": LESSER_CPU})
    assert refused.returncode == 1 and refused.stdout == ""
    assert "built for CPU 'x86-64-v3'" in refused.stderr, refused.stderr
    missing = refused.stderr.split("lacks: ")[1].split(";")[0].split(", ")
    assert {"avx2", "fma", "bmi2", "f16c"} <= set(missing) and "avx" not in missing
    enough = _run(program, a_params, xa, cwd=root, env={"NNVM_CPU_FEATURES_OVERRIDE": ",".join(V3)})
    assert enough.returncode == 0, enough.stderr
    plain = _run(program, a_params, xa, cwd=root)  # the real CPU: this host is x86-64-v3
    assert plain.returncode == 0, plain.stderr
    np.testing.assert_allclose(_outputs(plain.stdout)[(0, 0)], deployed["expected"][0], rtol=1e-4)


def test_the_python_loader_sees_the_same_refusal(deployed, monkeypatch):
    lib = load_module(deployed["a"][0])
    blob = deployed["a"][1].read_bytes()
    monkeypatch.setenv("NNVM_CPU_FEATURES_OVERRIDE", LESSER_CPU)
    assert lib.lib.nnvm_create(blob, len(blob)) is None
    assert "lacks: " in lib.last_error() and "avx2" in lib.last_error()
    monkeypatch.delenv("NNVM_CPU_FEATURES_OVERRIDE")
    handle = lib.lib.nnvm_create(blob, len(blob))
    assert handle and lib.last_error() == ""
    lib.lib.nnvm_destroy(handle)


def test_the_program_runs_from_any_directory_linked_by_name_or_by_path(deployed, program):
    root = deployed["root"]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    a_params, xa = deployed["a"][1], deployed["inputs"][0]
    by_name = _run(program, a_params, xa, cwd=elsewhere)
    assert by_name.returncode == 0, by_name.stderr
    # linked by the library's path: the SONAME, not that path, is what the program records
    _cc(EXAMPLE, "-Ilib", "lib/libmlp.so", "-Wl,-rpath,$ORIGIN/../lib", "-o", "bin/main2", cwd=root)
    by_path = _run(root / "bin" / "main2", a_params, xa, cwd=elsewhere)
    assert by_path.returncode == 0, by_path.stderr
    np.testing.assert_array_equal(
        _outputs(by_path.stdout)[(0, 0)], _outputs(by_name.stdout)[(0, 0)]
    )
    np.testing.assert_allclose(
        _outputs(by_name.stdout)[(0, 0)], deployed["expected"][0], rtol=1e-4, atol=1e-5
    )


def test_bad_command_lines_are_clear_errors(deployed, program):
    root = deployed["root"]
    a_params = deployed["a"][1]
    proc = _run(program, a_params, "--load", deployed["b"][0], cwd=root)
    assert proc.returncode == 2 and "--load needs LIB.so MODEL.params" in proc.stderr
    proc = _run(program, a_params, root / "b.bin", cwd=root)  # B's input: the wrong size
    assert proc.returncode == 1 and "needs 64 bytes" in proc.stderr
    proc = _run(program, root / "missing.params", cwd=root)
    assert proc.returncode == 1 and "cannot read" in proc.stderr
