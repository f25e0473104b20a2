"""Regression tests for the two segfaults on valid use (the reliability issue, defects 1 and 2):
a conv over a tall, narrow image (its whole-image buffer went on the stack), and one module
shared by threads while its params are replaced."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.testing import onnx_models


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _conv_model(height: int, width: int, channels: int = 64):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((channels, channels, 3, 3)).astype(np.float32) * 0.05
    b = rng.standard_normal(channels).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node],
        "tall",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, height, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels, height, width])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check_conv(height: int, dump=None) -> None:
    model = _conv_model(height, 4)
    x = np.random.default_rng(1).standard_normal((1, 64, height, 4)).astype(np.float32)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, dump_ir=dump)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(x=x)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(m.get_output(0), want.run(None, {"x": x})[0], rtol=1e-3, atol=1e-3)


def test_conv_on_a_tall_narrow_image_runs() -> None:
    """1x64x65536x4 (64 MB; 16384 rows crashed with AVX-512, 65536 with AVX2): the short-row
    conv schedule no longer computes the whole image into one stack buffer."""
    _check_conv(65536)


def test_big_compute_at_buffers_go_to_the_heap(monkeypatch, tmp_path) -> None:
    """The loop emitter's own guard: the whole-image schedule forced on a tall image puts its
    megabytes-big buffer on the heap (inside the parallel loop, one per thread), and is right."""
    import nnvm.targets.cpu.schedules.conv2d as conv2d

    monkeypatch.setenv("NNVM_CACHE_DIR", "off")  # the schedule changes, the kernel IR does not
    monkeypatch.setattr(conv2d, "SMALL_IMAGE_BYTES", 1 << 40)
    _check_conv(65536, dump=tmp_path)
    loops = [f.read_text() for f in tmp_path.glob("kernels/*/*lower-te-to-loops.mlir")]
    assert any("memref.alloc" in text and "memref.dealloc" in text for text in loops)


def _hammer(seconds: float, debug: bool = False) -> None:
    model = onnx_models.mlp(batch=4)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0), debug=debug)
    m.set_input(**p)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(4):
        x = rng.standard_normal((4, 64)).astype(np.float32)
        cases.append((x, session.run(None, {"input": x})[0]))
    failures: list[str] = []
    stop = time.monotonic() + seconds
    runs = [0, 0]

    def runner(k: int) -> None:
        while time.monotonic() < stop and not failures:
            x, want = cases[(runs[k] + k) % len(cases)]
            m.run(input=x)
            got = m.get_output(0)
            if not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                failures.append(f"thread {k}, run {runs[k]}: wrong output")
            runs[k] += 1

    def setter() -> None:
        while time.monotonic() < stop and not failures:
            m.set_input(**p)  # the same values: results must not change, nothing freed under a run

    threads = [threading.Thread(target=runner, args=(k,)) for k in (0, 1)]
    threads.append(threading.Thread(target=setter))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert min(runs) > 0


def test_two_threads_share_one_module_while_params_change() -> None:
    _hammer(2.0)


def test_debug_module_shared_by_threads() -> None:
    _hammer(1.0, debug=True)


@pytest.mark.slow
def test_two_threads_hammer_one_module_for_ten_seconds() -> None:
    _hammer(10.0)


@pytest.mark.parametrize("debug", [False, True])
def test_runtime_misuse_is_a_user_error(debug: bool) -> None:
    """run() without an input, get_output into a buffer of another shape or dtype (defect 10)."""
    from nnvm.support.errors import UserError

    module, params = from_onnx(onnx_models.mlp())
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0), debug=debug)
    m.set_input(**p)
    with pytest.raises(UserError, match="inputs not set: input"):
        m.run()
    m.run(input=np.zeros((1, 64), np.float32))
    for bad in (np.zeros((2, 10), np.float32), np.zeros((1, 10), np.float64), [0.0] * 10):
        with pytest.raises(UserError, match=r"out must be float32\[1, 10\]"):
            m.get_output(0, out=bad)
    out = np.empty((1, 10), np.float32)
    assert m.get_output(0, out=out) is out


def test_an_input_this_machine_cannot_hold_is_a_user_error() -> None:
    """2^37 floats (512 GiB): creating the module's buffers names the input and its size
    (defect 10: a bare MemoryError)."""
    from onnx import TensorProto, helper

    from nnvm.support.errors import UserError

    n = 1 << 37
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "huge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
    )
    module, params = from_onnx(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    )
    g, lib, p = build(module, params=params)
    m = graph_runtime.create(g, lib, nnvm.cpu(0))
    with pytest.raises(UserError, match=r"cannot allocate input 'x' of float32\[137438953472\]"):
        m.get_output(0)
