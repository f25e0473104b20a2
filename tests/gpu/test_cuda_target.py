"""The CUDA target on the Target seam without a GPU: its target string, its blobs and launch
plans, driver errors named by CUresult, libcuda never loaded by importing or building, and whole
models built for `cuda -emulate` (the CUDA lowering run on the host) matching the CPU."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import onnx
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.support.target import parse_target
from nnvm.targets.gpu.cuda import driver as cuda_driver
from nnvm.targets.gpu.cuda.blob import decode_blob, encode_blob
from nnvm.targets.gpu.cuda.host_emulator import host_ir
from nnvm.targets.gpu.cuda.ptxas import find_ptxas, run_ptxas
from nnvm.targets.gpu.cuda.target import CudaTarget
from nnvm.targets.gpu.launch_plan import Copy, Launch, LaunchPlan, launch_plan
from nnvm.testing import onnx_models


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


@pytest.mark.parametrize(
    ("spec", "description"),
    [
        ("cuda", "cuda -arch=sm_90"),
        ("cuda -arch=sm_90", "cuda -arch=sm_90"),
        ("cuda -arch=sm_80", "cuda -arch=sm_80"),
        ("nvptx -arch=sm_80", "cuda -arch=sm_80"),
        ("cuda -arch=sm_80 -device=1 -emulate", "cuda -arch=sm_80 -device=1 -emulate"),
    ],
)
def test_target_strings(spec: str, description: str) -> None:
    t = parse_target(spec)
    assert isinstance(t, CudaTarget)
    assert t.description == description
    assert parse_target(t.description) == t
    assert t.capabilities.device_kind == "gpu" and t.capabilities.bind
    assert not t.is_host


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cuda -arch=sm_70", "unknown CUDA architecture 'sm_70'"),
        ("cuda -arch=", "unknown cuda target option '-arch='"),
        ("cuda -fast", "unknown cuda target option '-fast'"),
    ],
)
def test_bad_target_strings(spec: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_target(spec)


def test_cuda_is_a_device_target_not_a_host() -> None:
    module, params = from_onnx(onnx_models.mlp())
    with pytest.raises(UserError, match="device target"):
        build(module, target="cuda", params=params)


def test_blob_round_trip_and_bad_blobs() -> None:
    plan = LaunchPlan(
        3,
        [64],
        [b"\x00\x01\x02"],
        [
            Launch("k", (4, 1, 1), (256, 1, 1), [("arg", 0), ("temp", 0), ("const", 0)]),
            Copy(("temp", 0), ("arg", 2), 64),
        ],
    )
    got, ptx, arch, llvm_ir = decode_blob(encode_blob(plan, ".version 8.0", "sm_80", "; ir"))
    assert (got, ptx, arch, llvm_ir) == (plan, ".version 8.0", "sm_80", "; ir")
    for bad in (b"\xff", b"{}", b'{"format": "nnvm-cuda/1", "plan": {}}'):
        with pytest.raises(UserError, match="not a CUDA kernel blob"):
            decode_blob(bad)


HOST_LOOP = """
func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = te.compute "y" [i] = %x[i] * 2.0 : (tensor<64xf32>) -> tensor<64xf32>
  te.schedule {
  }
  func.return %y : tensor<64xf32>
}
"""


def test_a_host_loop_is_a_located_error() -> None:
    """Without outline_all an unbound stage stays a host loop, which a device cannot run (the
    shared launch plan's error is not located yet)."""
    from nnvm.lowering.te_to_gpu.lower_te_to_gpu import LowerTEToGpu
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module

    ctx = make_context()
    module = parse_module(ctx, HOST_LOOP, "host.mlir")
    LowerTEToGpu().apply(ctx, module)
    with pytest.raises(UserError, match="its host function runs scf.for, which a device cannot"):
        launch_plan(module, "f")


BARRIER_KERNEL = """
define ptx_kernel void @"k"(ptr %a) {
entry:
  %t = call i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
  %go = icmp {pred} i32 %t, 0
  br i1 %go, label %sync, label %done
sync:
  call void @"llvm.nvvm.barrier0"()
  %p = getelementptr i32, ptr %a, i32 %t
  store i32 1, ptr %p
  br label %done
done:
  ret void
}
declare i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()
declare void @"llvm.nvvm.barrier0"()
"""


@pytest.mark.parametrize("pred", ["sge", "eq"])
def test_the_emulator_runs_barriers_as_threads_and_catches_divergent_ones(pred: str) -> None:
    """A kernel with a barrier runs its block's threads as host threads; a barrier only some
    threads reach (tid == 0) is a UserError, not a hang."""
    import numpy as np

    from nnvm.targets.cpu.target import host_target
    from nnvm.targets.gpu.cuda.host_emulator import BlockThreads
    from nnvm.targets.llvm.compile import compile_jit

    text, arity, threaded = host_ir(BARRIER_KERNEL.replace("{pred}", pred), host_target().triple)
    assert threaded and arity == {"k": 1}
    module = compile_jit(text, host_target())
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(module.address_of("k"))
    out = np.zeros(4, np.int32)
    threads = BlockThreads(module)
    if pred == "sge":
        threads.launch(kernel, "k", (1, 1, 1), (4, 1, 1), [out.ctypes.data])
        assert out.tolist() == [1, 1, 1, 1]
    else:
        with pytest.raises(UserError, match="not all of its 4 threads reach"):
            threads.launch(kernel, "k", (1, 1, 1), (4, 1, 1), [out.ctypes.data])


class FakeLib:
    """libcuda as far as CudaDriver's error path goes: cuMemAlloc fails."""

    def cuInit(self, flags):
        return 0

    def cuGetErrorName(self, code, out):
        out._obj.value = {2: b"CUDA_ERROR_OUT_OF_MEMORY"}.get(code)
        return 0 if code == 2 else 1

    def cuMemAlloc_v2(self, ptr, size):
        return 2

    def cuMemFree_v2(self, ptr):
        return 999

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launched = (
            [n.value for n in (gx, gy, gz, bx, by, bz)],
            [ctypes.c_uint64.from_address(params[k]).value for k in range(3)],
        )
        return 0


def test_driver_errors_name_the_call_and_the_cuda_result() -> None:
    drv = cuda_driver.CudaDriver(FakeLib())  # type: ignore[arg-type]
    with pytest.raises(
        UserError, match="CUDA cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY: 1024 bytes"
    ):
        drv.alloc(1024)
    with pytest.raises(UserError, match="CUDA cuMemFree failed with CUresult 999"):
        drv.free(16)
    drv.launch(ctypes.c_void_p(1), (4, 2, 1), (256, 1, 1), [0x7F0000001000, 0x10, 2**63])
    assert drv.lib.launched == ([4, 2, 1, 256, 1, 1], [0x7F0000001000, 0x10, 2**63])


def test_no_driver_is_a_user_error(monkeypatch) -> None:
    def missing(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(cuda_driver.CudaDriver, "_instance", None)
    monkeypatch.setattr(ctypes, "CDLL", missing)
    with pytest.raises(UserError, match=r"no CUDA driver on this machine \(libcuda.so.1"):
        cuda_driver.CudaDriver.get()


def test_importing_and_building_never_loads_libcuda(tmp_path) -> None:
    code = (
        "import nnvm, nnvm.compiler\n"
        "from nnvm.frontend import from_onnx\n"
        "from nnvm.testing import onnx_models\n"
        "m, p = from_onnx(onnx_models.mlp())\n"
        "g, lib, p = nnvm.compiler.build(m, params=p, devices=['cuda -arch=sm_80'])\n"
        "assert all(n.device for n in g.nodes)\n"
        "print('libcuda' in open('/proc/self/maps').read())\n"
    )
    env = {"NNVM_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def _outputs(graph, lib, params, inputs):
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    return [m.get_output(k) for k in range(m.get_num_outputs())]


@pytest.mark.parametrize("model_name", ["mlp", "resnet_like", "transformer_encoder", "lstm_model"])
def test_models_on_emulated_cuda_match_the_cpu(model_name: str) -> None:
    model = getattr(onnx_models, model_name)()
    inputs = onnx_models.random_inputs(model, seed=3)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    assert graph.devices == ["cuda -arch=sm_90 -emulate"]
    assert any(n.device for n in graph.nodes)
    got = _outputs(graph, lib, p, inputs)
    host_graph, host_lib, host_p = build(module, params=params)
    want = _outputs(host_graph, host_lib, host_p, inputs)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


def test_cuda_devices_and_exported_libraries(tmp_path) -> None:
    """nnvm.cuda(0) / nnvm.gpu(0) pick the library's CUDA kernels (the debug runtime too, kernel
    by kernel); an exported library carries their blobs (PTX and plans) and runs again after
    loading."""
    model = onnx_models.mlp()
    inputs = onnx_models.random_inputs(model, seed=4)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    want = _outputs(*build(module, params=params), inputs)
    for device in (nnvm.cuda(0), nnvm.gpu(0)):
        m = graph_runtime.create(graph, lib, device)
        m.set_input(**p)
        m.run(**inputs)
        np.testing.assert_allclose(m.get_output(0), want[0], rtol=1e-3, atol=1e-4)
    with pytest.raises(UserError, match="no kernels built for it"):
        graph_runtime.create(graph, lib, nnvm.cuda(1))
    debug = graph_runtime.create(graph, lib, nnvm.cuda(0), debug=True)  # kernel by kernel
    debug.set_input(**p)
    debug.run(**inputs)
    np.testing.assert_allclose(debug.get_output(0), want[0], rtol=1e-3, atol=1e-4)
    assert debug.check() is None
    path = tmp_path / "model.so"
    lib.export_library(str(path))
    loaded = nnvm.runtime.load_module(str(path))
    name = next(n.kernel for n in graph.nodes if n.device)
    assert decode_blob(loaded.blob(name))[1].startswith("//\n// Generated by LLVM NVPTX")
    got = _outputs(graph, loaded, p, inputs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-3, atol=1e-4)


def _one_node(node, inputs, output) -> onnx.ModelProto:
    graph = onnx.helper.make_graph(
        [node],
        node.op_type.lower(),
        [onnx.helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [onnx.helper.make_tensor_value_info(*output)],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_pow_on_the_device(dtype) -> None:
    """Integer Pow is computed in f64, which PTX has no pow for: device_math's square and
    multiply (the ONNX node tests' pow_types cases found it)."""
    t = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = _one_node(
        onnx.helper.make_node("Pow", ["x", "y"], ["z"]),
        [("x", t, [6]), ("y", t, [6])],
        ("z", t, [6]),
    )
    x = np.array([2, -3, 5, -1, 7, 2], dtype)
    y = np.array([10, 3, 0, 63, 2, -1], dtype)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    assert all(n.device for n in graph.nodes)
    if find_ptxas() is not None:
        run_ptxas(decode_blob(lib.blob(graph.nodes[0].kernel))[1], "sm_90")
    (got,) = _outputs(graph, lib, p, {"x": x, "y": y})
    np.testing.assert_array_equal(got, np.array([1024, -27, 1, -1, 49, 0], dtype))


def test_saturating_casts_on_the_device() -> None:
    f, i = onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
    model = _one_node(
        onnx.helper.make_node("Cast", ["x"], ["z"], to=i), [("x", f, [5])], ("z", i, [5])
    )
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    x = np.array([1.7, -2.5, 3e9, -3e9, 0.0], np.float32)
    (got,) = _outputs(graph, lib, p, {"x": x})
    np.testing.assert_array_equal(got, np.array([1, -2, 2**31 - 1, -(2**31), 0], np.int32))


def test_threads_sharing_a_cuda_module() -> None:
    """A module shared by threads (each gets its own device runtime from graph_runtime, with
    its own temporaries and loaded kernels): every thread gets its own inputs' outputs."""
    import threading

    model = onnx_models.mlp()
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    m = graph_runtime.create(graph, lib, nnvm.cuda(0))
    m.set_input(**p)
    feeds = [onnx_models.random_inputs(model, seed=s) for s in range(4)]
    want = []
    for x in feeds:
        m.run(**x)
        want.append(m.get_output(0).copy())
    wrong: list[int] = []

    def work(k: int) -> None:
        for _ in range(5):
            m.run(**feeds[k])
            if not np.array_equal(m.get_output(0), want[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
