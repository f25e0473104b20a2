"""The OpenCL device runtime: buffers, copies and each kernel's launch plan through pyopencl
(imported only when a device is used; no OpenCL platform is a UserError that says so)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.gpu.launch_plan import Copy, LaunchPlan, read_blob


def opencl_devices() -> list[Any]:
    """Every OpenCL device of every platform, GPUs first; [] without pyopencl or a platform."""
    try:
        import pyopencl as cl
    except ImportError:
        return []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = [d for p in platforms for d in p.get_devices()]
    return sorted(found, key=lambda d: 0 if d.type & cl.device_type.GPU else 1)


class OpenCLRuntime(DeviceRuntime):
    """One OpenCL device (an in-order queue) and the programs of one model library."""

    def __init__(self, lib: Any, device: int = 0, sources: dict[str, bytes] | None = None):
        try:
            import pyopencl as cl
        except ImportError:
            raise UserError("the opencl target needs pyopencl (pip install pyopencl)") from None
        devices = opencl_devices()
        if device >= len(devices):
            raise UserError(
                f"no OpenCL device {device}: {len(devices)} found (install an OpenCL driver, "
                "e.g. pocl-opencl-icd)"
            )
        self.cl = cl
        self.lib = lib
        self.sources = sources or {}
        self.device = devices[device]
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context)
        self.buffers: dict[int, Any] = {}
        self.next_handle = 1
        self.loaded: dict[str, tuple[LaunchPlan, dict[str, Any], list[Any], list[Any]]] = {}
        self.lock = threading.Lock()  # kernel objects hold their arguments: one launch at a time

    # -- buffers ------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.buffers[handle] = self.cl.Buffer(
            self.context, self.cl.mem_flags.READ_WRITE, max(nbytes, 1)
        )
        return handle

    def free(self, handle: int) -> None:
        buf = self.buffers.pop(handle, None)
        if buf is not None:
            buf.release()

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        if host.nbytes:
            self._copy(self.buffers[handle], host)

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        """Blocking: it waits for the kernels before it on the in-order queue (launches do
        not), so a kernel's failure may surface here."""
        if host.nbytes:
            self._copy(host, self.buffers[handle])

    def _copy(self, dst: Any, src: Any) -> None:
        try:
            self.cl.enqueue_copy(self.queue, dst, src, is_blocking=True)
        except self.cl.Error as err:
            raise UserError(f"OpenCL copy failed: {err}") from None

    # -- kernels ------------------------------------------------------------------------

    def _blob(self, kernel: str) -> bytes:
        if kernel in self.sources:
            return self.sources[kernel]
        return self.lib.blob(kernel)

    def _load(self, kernel: str) -> tuple[LaunchPlan, dict[str, Any], list[Any], list[Any]]:
        """Its plan, kernel objects, constant buffers (uploaded once) and temporaries (kept
        for the next launch: launches are serialized and the queue is in order)."""
        if kernel not in self.loaded:
            code, plan = read_blob(self._blob(kernel))
            try:
                program = self.cl.Program(self.context, code).build()
            except self.cl.Error as err:
                raise UserError(f"OpenCL could not build kernel {kernel}: {err}") from None
            flags = self.cl.mem_flags.READ_ONLY | self.cl.mem_flags.COPY_HOST_PTR
            consts = [
                self.cl.Buffer(self.context, flags, hostbuf=c)
                if c
                else self.cl.Buffer(self.context, self.cl.mem_flags.READ_ONLY, 1)
                for c in plan.consts
            ]
            kernels = {k.function_name: k for k in program.all_kernels()}
            rw = self.cl.mem_flags.READ_WRITE
            temps = [self.cl.Buffer(self.context, rw, max(n, 1)) for n in plan.temps]
            self.loaded[kernel] = (plan, kernels, consts, temps)
        return self.loaded[kernel]

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        with self.lock:
            self._launch(kernel, handles)

    def _launch(self, kernel: str, handles: Sequence[int]) -> None:
        plan, kernels, consts, temps = self._load(kernel)
        if len(handles) != plan.n_args:
            raise UserError(f"kernel {kernel} takes {plan.n_args} buffers, got {len(handles)}")
        cl = self.cl
        pools = {"arg": [self.buffers[h] for h in handles], "temp": temps, "const": consts}
        try:
            for step in plan.steps:
                if isinstance(step, Copy):
                    if step.nbytes:
                        src, dst = pools[step.src[0]][step.src[1]], pools[step.dst[0]][step.dst[1]]
                        cl.enqueue_copy(self.queue, dst, src, byte_count=step.nbytes)
                    continue
                fn = kernels[step.kernel]
                fn.set_args(*[pools[kind][k] for kind, k in step.args])
                glob = tuple(g * b for g, b in zip(step.grid, step.block, strict=True))
                cl.enqueue_nd_range_kernel(self.queue, fn, glob, step.block)
        except cl.Error as err:
            raise UserError(f"OpenCL failed running kernel {kernel}: {err}") from None
