"""Heterogeneous builds on the Target seam, with the test-only device target `testdev` (CPU
kernels behind the device API, its own buffers): a model split across host and device gives
the host-only results through the C entry point and the debug runtime; bad targets are errors."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.support.plugins import load_plugin_module
from nnvm.support.target import parse_target
from nnvm.testing import host_device, onnx_models


@pytest.fixture(autouse=True)
def testdev(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))
    load_plugin_module("nnvm.testing.host_device")


def _run(graph, lib, params, inputs, debug=False):
    m = graph_runtime.create(graph, lib, nnvm.cpu(0), debug=debug)
    m.set_input(**params)
    m.run(**inputs)
    return [m.get_output(k) for k in range(m.get_num_outputs())], m


@pytest.mark.parametrize(
    "model_name,accept",
    [("mlp", "relu"), ("resnet_like", "conv"), ("transformer_encoder", "")],
)
def test_split_across_host_and_device_matches(model_name: str, accept: str) -> None:
    model = getattr(onnx_models, model_name)()
    inputs = onnx_models.random_inputs(model, seed=5)
    module, params = from_onnx(model)
    spec = f"testdev -accept={accept}" if accept else "testdev -reject=add"
    graph, lib, p = build(module, target="llvm", params=params, devices=[spec])
    on_device = [n for n in graph.nodes if n.device]
    assert on_device and len(on_device) < len(graph.nodes), "the model must really be split"
    assert graph.devices == [parse_target(spec).description]
    before = dict(host_device.STATS)
    got, _ = _run(graph, lib, p, inputs)
    assert host_device.STATS["launches"] - before["launches"] == len(on_device)
    assert host_device.STATS["bytes_in"] > before["bytes_in"]
    host_graph, host_lib, host_p = build(module, target="llvm", params=params)
    want, _ = _run(host_graph, host_lib, host_p, inputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w, o in zip(got, want, session.run(None, inputs), strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, o, rtol=1e-3, atol=1e-4)
    debug_out, dm = _run(graph, lib, p, inputs, debug=True)
    for g, w in zip(debug_out, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert dm.check() is None


def test_params_cross_to_the_device_once() -> None:
    model = onnx_models.mlp()
    inputs = onnx_models.random_inputs(model, seed=1)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["testdev -accept=relu"])
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(**inputs)
    first = host_device.STATS["bytes_in"]
    m.run(**inputs)
    second = host_device.STATS["bytes_in"] - first
    m.run(**inputs)
    assert host_device.STATS["bytes_in"] - first == 2 * second
    weights = sum(np.asarray(v).nbytes for v in p.values())
    assert second < weights, "weights must not be copied on every run"


def test_device_that_accepts_nothing_leaves_the_host_alone() -> None:
    module, params = from_onnx(onnx_models.mlp())
    graph, _, _ = build(module, params=params, devices=["testdev -accept=nothing_matches"])
    assert graph.devices == [] and not any(n.device for n in graph.nodes)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"target": "quantum"}, "unknown target 'quantum'"),
        ({"target": "testdev"}, "is a device target"),
        ({"devices": ["llvm"]}, "is a host target"),
        ({"devices": ["testdev -bogus"]}, "unknown testdev option"),
        ({"target": "llvm -mcpu=notacpu"}, "unknown CPU 'notacpu'"),
        ({"passes": {"after:nonsense": ["cse"]}}, "unknown insertion point"),
        ({"passes": {"end": ["no-such-pass"]}}, "unknown pass 'no-such-pass'"),
    ],
)
def test_bad_targets_and_passes_are_user_errors(kwargs, message: str) -> None:
    module, params = from_onnx(onnx_models.mlp())
    with pytest.raises(UserError, match=message):
        build(module, params=params, **kwargs)


def test_native_is_the_host() -> None:
    assert parse_target("llvm -mcpu=native") == parse_target("llvm")


def test_user_passes_run_at_their_points() -> None:
    from nnvm.compiler.build import graph_passes

    host = parse_target("llvm")
    names = [p.name for p in graph_passes(3, host, {"start": ["cse,dce"], "after:fuse": ["dce"]})]
    assert names[:2] == ["cse", "dce"]
    assert names[names.index("fuse") + 1] == "dce"
    layout = next(p for p in graph_passes(3, host) if p.name == "alter-layout")
    assert layout.block == host.vector_bits // 32


def test_unbound_device_is_an_error_from_c() -> None:
    import ctypes

    from nnvm.support.params import save_params

    model = onnx_models.mlp()
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["testdev -accept=relu"])
    blob = save_params(p, graph.model_hash)
    handle = lib.lib.nnvm_create(blob, len(blob))
    assert handle
    try:
        x = np.zeros(graph.inputs[0]["shape"], np.float32)
        out = np.zeros(graph.outputs[0].shape, np.float32)
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        outs = (ctypes.c_void_p * 1)(out.ctypes.data)
        assert lib.lib.nnvm_run(handle, ins, outs) != 0
        assert "is not bound" in lib.last_error()
    finally:
        lib.lib.nnvm_destroy(handle)


def test_device_compiler_refusing_a_kernel_is_a_user_error() -> None:
    module, params = from_onnx(onnx_models.mlp())
    with pytest.raises(UserError, match="device target 'testdev' failed on kernel fused_.*relu"):
        build(module, params=params, devices=["testdev -accept=relu -fail=relu"])


def _compile_cli(tmp_path, *args: str):
    """nnvm-compile on the MLP with the testdev plugin loaded."""
    import subprocess
    import sys

    import onnx

    path = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(), path)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nnvm.tools.compile",
            str(path),
            "-o",
            str(tmp_path / "out"),
            "--load-plugin",
            "nnvm.testing.host_device",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--target", "quantum"], "unknown target 'quantum'"),
        (["--device", "llvm"], "is a host target"),
        (["--device", "testdev -fail=dense"], "failed on kernel"),
        (["--load-plugin", "no_such_module_xyz"], "no_such_module_xyz"),
    ],
)
def test_compile_cli_target_errors_exit_1(tmp_path, args, message: str) -> None:
    proc = _compile_cli(tmp_path, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists(), "no partial output on an error"


def test_compile_cli_places_kernels_on_a_device(tmp_path) -> None:
    proc = _compile_cli(tmp_path, "--device", "testdev -accept=relu", "--run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(2 on testdev -accept=relu)" in proc.stdout and "OK" in proc.stdout


def test_extra_link_libraries_reach_the_linker() -> None:
    module, params = from_onnx(onnx_models.mlp())
    graph, lib, _ = build(module, params=params, libraries=["m"])
    assert lib.model_hash == graph.model_hash
    with pytest.raises(UserError, match="nnvm_no_such_library"):
        build(module, params=params, libraries=["nnvm_no_such_library"])
