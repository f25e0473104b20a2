"""End to end: ONNX models built with onnx.helper compile with nnvm.compiler.build and match
onnxruntime (rtol 1e-3, atol 1e-4) at opt levels 0 and 3, through Python and through a C
program that links the exported library; the kernel cache, dump_ir and the debug runtime."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import nnvm
from nnvm.compiler import build, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime, load_module
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models

MODELS = {
    "resnet": onnx_models.resnet_like,
    "mobilenet": onnx_models.mobilenet_like,
    "transformer": onnx_models.transformer_encoder,
    "lstm": onnx_models.lstm_model,
    "mlp": onnx_models.mlp,
}


@pytest.fixture(autouse=True)
def private_kernel_cache(tmp_path_factory, monkeypatch):
    """Each test module run compiles into its own cache, so results never depend on old objects."""
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _expected(model, inputs):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def _compiled(model, opt_level: int, **kwargs):
    module, params = from_onnx(model)
    return build(module, target="llvm", params=params, opt_level=opt_level, **kwargs)


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_onnxruntime(name: str, opt_level: int) -> None:
    model = MODELS[name]()
    inputs = onnx_models.random_inputs(model, seed=3)
    graph, lib, params = _compiled(model, opt_level)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    for k, want in enumerate(_expected(model, inputs)):
        np.testing.assert_allclose(m.get_output(k), want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_and_two_threads_agree(threads: int) -> None:
    model = MODELS["resnet"]()
    inputs = onnx_models.random_inputs(model, seed=4)
    graph, lib, params = _compiled(model, 3)
    nnvm.set_num_threads(threads)
    try:
        m = graph_runtime.create(graph, lib)
        m.set_input(**params)
        m.run(**inputs)
        np.testing.assert_allclose(
            m.get_output(0), _expected(model, inputs)[0], rtol=1e-3, atol=1e-4
        )
    finally:
        nnvm.set_num_threads(2)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("name", ["resnet", "transformer"])
def test_c_program_matches_python(name: str, tmp_path: Path) -> None:
    model = MODELS[name]()
    inputs = onnx_models.random_inputs(model, seed=5)
    graph, lib, params = _compiled(model, 3)
    lib.export_library(tmp_path / "libmodel.so")
    lib.export_header(tmp_path / "nnvm_runtime.h")
    (tmp_path / "model.params").write_bytes(save_param_dict(params, graph.model_hash))
    runner = Path(__file__).with_name("run_model.c")
    subprocess.run(
        [
            "cc",
            "-O2",
            "-o",
            "run_model",
            str(runner),
            f"-I{tmp_path}",
            "-L.",
            "-lmodel",
            "-Wl,-rpath,$ORIGIN",
        ],
        cwd=tmp_path,
        check=True,
    )
    in_files = []
    for k, info in enumerate(graph.inputs):
        path = tmp_path / f"in{k}.bin"
        path.write_bytes(np.ascontiguousarray(inputs[info["name"]], dtype=info["dtype"]).tobytes())
        in_files.append(path.name)
    out_files = [f"out{k}.bin" for k in range(len(graph.outputs))]
    subprocess.run(
        ["./run_model", "model.params", *in_files, *out_files],
        cwd=tmp_path,
        check=True,
        env={"NNVM_NUM_THREADS": "2"},
    )
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.run(**inputs)
    for k, info in enumerate(graph.outputs):
        from_c = np.fromfile(tmp_path / out_files[k], dtype=info.dtype).reshape(info.shape)
        np.testing.assert_allclose(from_c, m.get_output(k), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(from_c, _expected(model, inputs)[k], rtol=1e-3, atol=1e-4)


def test_exported_library_loads_and_runs_later(tmp_path: Path) -> None:
    model = MODELS["mlp"]()
    inputs = onnx_models.random_inputs(model, seed=6)
    graph, lib, params = _compiled(model, 3)
    lib.export_library(tmp_path / "m.so")
    (tmp_path / "graph.json").write_text(graph.to_json())
    (tmp_path / "m.params").write_bytes(save_param_dict(params, graph.model_hash))
    from nnvm.compiler import load_param_dict

    again = graph_runtime.create(
        (tmp_path / "graph.json").read_text(), load_module(tmp_path / "m.so")
    )
    again.set_input(**load_param_dict((tmp_path / "m.params").read_bytes()))
    again.run(**inputs)
    np.testing.assert_allclose(
        again.get_output(0), _expected(model, inputs)[0], rtol=1e-3, atol=1e-4
    )


def test_second_build_comes_from_the_kernel_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path / "cache"))
    model = MODELS["resnet"]()
    _, lib1, _ = _compiled(model, 3)
    _, lib2, _ = _compiled(model, 3)
    assert lib1.build_times.kernels_cached == 0 and lib1.build_times.kernels_compiled > 0
    assert lib2.build_times.kernels_compiled == 0
    assert lib2.build_times.kernels_cached == lib1.build_times.kernels_compiled


def test_dump_ir_writes_every_stage(tmp_path: Path) -> None:
    graph, _, _ = _compiled(MODELS["mlp"](), 3, dump_ir=tmp_path / "ir")
    files = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert "00-input.mlir" in files and "graph.json" in files and "entry.c" in files
    assert any("fuse" in f for f in files) and any("plan-memory" in f for f in files)
    kernel = graph.kernels[0]
    stages = sorted(p.name for p in (tmp_path / "ir" / "kernels" / kernel).iterdir())
    assert [s.split("-", 1)[1] for s in stages] == [
        "lower-to-te.mlir",
        "apply-default-schedule.mlir",
        "lower-te-to-loops.mlir",
        "hoist-loop-invariant-accesses.mlir",
        "fold-reciprocal-multiply.mlir",
        "multiply-by-reciprocal.mlir",
        "convert-to-llvm.mlir",
    ]


def test_debug_runtime_profiles_and_names_a_diverging_kernel() -> None:
    model = MODELS["resnet"]()
    inputs = onnx_models.random_inputs(model, seed=7)
    graph, lib, params = _compiled(model, 3)
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0), _expected(model, inputs)[0], rtol=1e-3, atol=1e-4)
    report = m.profile(number=1)
    assert "total" in str(report) and len(report.rows) == len(graph.nodes)
    assert m.check() is None
    # Make the recorded semantics of one kernel disagree with its machine code.
    victim = next(k for k in graph.kernels if "relu" in graph.extra["kernel_ir"][k])
    graph.extra["kernel_ir"][victim] = graph.extra["kernel_ir"][victim].replace(
        "nnvm.relu", "nnvm.neg"
    )
    assert m.check() == victim


def test_mismatched_params_shape_is_a_clear_error() -> None:
    model = MODELS["mlp"]()
    module, params = from_onnx(model)
    bad = dict(params)
    name = next(iter(bad))
    bad[name] = np.zeros((1,), dtype=np.float32)
    with pytest.raises(UserError, match="params do not fit the graph"):
        build(module, params=bad)
