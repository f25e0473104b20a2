"""The CUDA device runtime: a model library's kernel blobs (launch plan + PTX) replayed on one
GPU through the driver API: its temporaries allocated once per kernel, every launch in order, one
synchronization per kernel (so a device fault is reported at the kernel that caused it)."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.gpu.cuda.blob import decode_blob
from nnvm.targets.gpu.cuda.driver import CudaDriver
from nnvm.targets.gpu.launch_plan import Launch, LaunchPlan


@dataclass
class LoadedKernel:
    plan: LaunchPlan
    functions: dict[str, ctypes.c_void_p]
    temps: list[int]
    consts: list[int]


class CudaRuntime(DeviceRuntime):
    """Device `ordinal`'s buffers and the kernels of library `lib` (anything with `.blob(name)`)."""

    def __init__(self, lib: Any, ordinal: int = 0, driver: CudaDriver | None = None):
        self.lib = lib
        self.ordinal = ordinal
        self.driver = driver or CudaDriver.get()
        self.driver.use(ordinal)
        self.kernels: dict[str, LoadedKernel] = {}
        self.buffers: set[int] = set()
        self.lock = threading.Lock()

    def alloc(self, nbytes: int) -> int:
        self.driver.use(self.ordinal)
        ptr = self.driver.alloc(nbytes)
        self.buffers.add(ptr)
        return ptr

    def free(self, handle: int) -> None:
        if handle in self.buffers:
            self.driver.use(self.ordinal)
            self.driver.free(handle)
            self.buffers.discard(handle)

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        self.driver.use(self.ordinal)
        self.driver.copy_to_device(handle, host)

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        self.driver.use(self.ordinal)
        self.driver.copy_from_device(host, handle)

    def load(self, kernel: str) -> LoadedKernel:
        found = self.kernels.get(kernel)
        if found is None:
            plan, ptx, _, _ = decode_blob(self.lib.blob(kernel))
            launches = [x for x in plan.steps if isinstance(x, Launch)]
            # a plan of copies alone ships empty PTX, which no driver loads
            module = self.driver.load_module(ptx) if launches else None
            functions = {x.kernel: self.driver.function(module, x.kernel) for x in launches}
            temps = [self.driver.alloc(n) for n in plan.temps]
            consts = []
            for data in plan.consts:
                consts.append(self.driver.alloc(len(data)))
                self.driver.copy_to_device(consts[-1], memoryview(data))
            found = self.kernels[kernel] = LoadedKernel(plan, functions, temps, consts)
        return found

    def enqueue(self, kernel: str, handles: Sequence[int]) -> None:
        """Launch every kernel of `kernel`'s plan without waiting for them."""
        self.driver.use(self.ordinal)
        k = self.load(kernel)
        if len(handles) != k.plan.n_args:
            raise UserError(f"{kernel}: {len(handles)} buffers for {k.plan.n_args} arguments")
        spaces = {"arg": handles, "temp": k.temps, "const": k.consts}
        for step in k.plan.steps:
            if isinstance(step, Launch):
                ptrs = [spaces[kind][i] for kind, i in step.args]
                self.driver.launch(k.functions[step.kernel], step.grid, step.block, ptrs)
            else:
                dst, src = (spaces[kind][i] for kind, i in (step.dst, step.src))
                self.driver.copy_on_device(dst, src, step.nbytes)

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        """Run the plan and wait for it, one run at a time: the plan's temporaries serve every
        run of this runtime (graph_runtime gives each thread its own runtime; a caller sharing
        one between threads is serialized here)."""
        with self.lock:
            self.enqueue(kernel, handles)
            try:
                self.driver.synchronize()
            except UserError as err:
                raise UserError(f"{kernel}: {err.message}") from None


__all__ = ["CudaRuntime"]
