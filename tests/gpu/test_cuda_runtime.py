"""CudaRuntime (the driver-API runtime) replaying launch plans, without a GPU: a fake driver
keeps 'device' memory on the host and runs each cuLaunchKernel through the host emulator's grid
loop for that kernel (a kernel with barriers, such as the shared-tile convs: its block's threads as
host threads), so a whole model goes through the real runtime's allocation, constant upload,
launch and copy code and must match the CPU target."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.targets.gpu.cuda.host_emulator import load_emulated
from nnvm.targets.gpu.cuda.runtime import CudaRuntime
from nnvm.targets.gpu.cuda.target import CudaTarget
from nnvm.testing import onnx_models


class FakeDriver:
    """CudaDriver's interface over host memory; launches run the emulated grid loops."""

    def __init__(self, lib, kernels):
        self.grids = {}
        self.loaded = [load_emulated(lib.blob(name), name) for name in kernels]  # keeps the JIT
        self.emulated = {}
        for k in self.loaded:
            self.grids.update(k.grids)
            self.emulated.update(dict.fromkeys(k.grids, k))
        self.memory: dict[int, np.ndarray] = {}
        self.calls: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.calls[what] = self.calls.get(what, 0) + 1

    def use(self, ordinal: int = 0) -> None:
        assert ordinal == 0

    def alloc(self, nbytes: int) -> int:
        self._count("alloc")
        buf = np.zeros(max(nbytes, 1), np.uint8)
        self.memory[buf.ctypes.data] = buf
        return buf.ctypes.data

    def free(self, ptr: int) -> None:
        self._count("free")
        del self.memory[ptr]

    def copy_to_device(self, ptr: int, host: memoryview) -> None:
        self._count("htod")
        self.memory[ptr][: host.nbytes] = np.frombuffer(host, np.uint8)

    def copy_from_device(self, host: memoryview, ptr: int) -> None:
        self._count("dtoh")
        np.frombuffer(host, np.uint8)[...] = self.memory[ptr][: host.nbytes]

    def copy_on_device(self, dst: int, src: int, nbytes: int) -> None:
        self._count("dtod")
        ctypes.memmove(dst, src, nbytes)

    def load_module(self, ptx: str):
        self._count("module")
        assert ".entry" in ptx
        return ptx

    def function(self, module, name: str):
        assert f".entry {name}(" in module
        return name

    def launch(self, fn, grid, block, pointers) -> None:
        self._count("launch")
        for p in pointers:
            assert p in self.memory, "a launch with a pointer the device never allocated"
        threads = self.emulated[fn].threads
        if threads is not None:  # a kernel with barriers (shared tiles): a host thread per thread
            threads.launch(self.grids[fn], fn, grid, block, list(pointers))
            return
        dims = np.array([*grid, *block], np.int32)
        self.grids[fn](*pointers, dims.ctypes.data)

    def synchronize(self) -> None:
        self._count("sync")


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


@pytest.mark.parametrize("model_name", ["mlp", "resnet_like"])
def test_the_driver_runtime_replays_plans(model_name: str, monkeypatch) -> None:
    model = getattr(onnx_models, model_name)()
    inputs = onnx_models.random_inputs(model, seed=2)
    module, params = from_onnx(model)
    graph, lib, p = build(module, params=params, devices=["cuda -emulate"])
    kernels = sorted({n.kernel for n in graph.nodes if n.device})
    drivers: list[FakeDriver] = []

    def runtime(self, lib):
        drivers.append(FakeDriver(lib, kernels))
        return CudaRuntime(lib, self.device, drivers[-1])

    monkeypatch.setattr(CudaTarget, "runtime", runtime)
    m = graph_runtime.create(graph, lib, nnvm.cuda(0))
    m.set_input(**p)
    m.run(**inputs)
    got = m.get_output(0)
    m.run(**inputs)
    host_graph, host_lib, host_p = build(module, params=params)
    h = graph_runtime.create(host_graph, host_lib)
    h.set_input(**host_p)
    h.run(**inputs)
    np.testing.assert_allclose(got, h.get_output(0), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(m.get_output(0), got, rtol=0, atol=0)
    calls = drivers[0].calls
    assert calls["module"] == len(kernels), "each kernel's PTX is loaded once"
    assert calls["sync"] == 2 * len(graph.nodes), "one synchronization per fused kernel and run"
    assert calls["launch"] >= 2 * len(graph.nodes)
