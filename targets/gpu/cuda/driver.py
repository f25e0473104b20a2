"""The CUDA driver API through ctypes: the few calls a model needs (context, module, memory,
launch, events). libcuda.so.1 is opened on the first `CudaDriver.get()`, never at import; every
failing call is a UserError naming the call and its CUresult."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence

from nnvm.support.errors import UserError

CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
LOG_BYTES = 16384


class CudaDriver:
    """One process-wide handle on libcuda and the primary context of each device used."""

    _instance: CudaDriver | None = None
    _lock = threading.Lock()

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.contexts: dict[int, ctypes.c_void_p] = {}
        self.check("cuInit", lib.cuInit(0))

    @classmethod
    def get(cls) -> CudaDriver:
        with cls._lock:
            if cls._instance is None:
                try:
                    lib = ctypes.CDLL("libcuda.so.1")
                except OSError as err:
                    raise UserError(
                        f"no CUDA driver on this machine (libcuda.so.1: {err}); build for "
                        "target 'cuda' here, run on a machine with an NVIDIA GPU"
                    ) from None
                cls._instance = cls(lib)
            return cls._instance

    def error_name(self, code: int) -> str:
        name = ctypes.c_char_p()
        if self.lib.cuGetErrorName(code, ctypes.byref(name)) != 0 or not name.value:
            return f"CUresult {code}"
        return name.value.decode()

    def check(self, call: str, code: int, detail: str = "") -> None:
        if code != 0:
            more = f": {detail}" if detail else ""
            raise UserError(f"CUDA {call} failed with {self.error_name(code)}{more}")

    # -- devices and contexts ---------------------------------------------------------------

    def device_count(self) -> int:
        n = ctypes.c_int()
        self.check("cuDeviceGetCount", self.lib.cuDeviceGetCount(ctypes.byref(n)))
        return n.value

    def use(self, ordinal: int = 0) -> None:
        """Make device `ordinal`'s primary context current on this thread."""
        ctx = self.contexts.get(ordinal)
        if ctx is None:
            if not 0 <= ordinal < self.device_count():
                raise UserError(
                    f"no CUDA device {ordinal} (this machine has {self.device_count()})"
                )
            dev = ctypes.c_int()
            self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(dev), ordinal))
            ctx = ctypes.c_void_p()
            self.check(
                "cuDevicePrimaryCtxRetain",
                self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
            )
            self.contexts[ordinal] = ctx
        self.check("cuCtxSetCurrent", self.lib.cuCtxSetCurrent(ctx))

    def device_name(self, ordinal: int = 0) -> str:
        buf = ctypes.create_string_buffer(256)
        dev = ctypes.c_int()
        self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(dev), ordinal))
        self.check("cuDeviceGetName", self.lib.cuDeviceGetName(buf, 256, dev))
        return buf.value.decode()

    def attribute(self, attr: int, ordinal: int = 0) -> int:
        dev = ctypes.c_int()
        self.check("cuDeviceGet", self.lib.cuDeviceGet(ctypes.byref(dev), ordinal))
        value = ctypes.c_int()
        self.check(
            "cuDeviceGetAttribute",
            self.lib.cuDeviceGetAttribute(ctypes.byref(value), attr, dev),
        )
        return value.value

    def synchronize(self) -> None:
        self.check("cuCtxSynchronize", self.lib.cuCtxSynchronize())

    # -- modules ----------------------------------------------------------------------------

    def load_module(self, ptx: str) -> ctypes.c_void_p:
        """JIT-compile PTX in the current context; the JIT's log is in the error."""
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(LOG_BYTES)
        options = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), LOG_BYTES)
        image = ptx.encode() + b"\0"
        code = self.lib.cuModuleLoadDataEx(ctypes.byref(module), image, 2, options, values)
        self.check("cuModuleLoadDataEx", code, log.value.decode(errors="replace").strip())
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        code = self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode())
        self.check("cuModuleGetFunction", code, name)
        return fn

    # -- memory -----------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        code = self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1)))
        self.check("cuMemAlloc", code, f"{nbytes} bytes")
        return ptr.value

    def free(self, ptr: int) -> None:
        self.check("cuMemFree", self.lib.cuMemFree_v2(ctypes.c_uint64(ptr)))

    def copy_to_device(self, ptr: int, host: memoryview) -> None:
        code = self.lib.cuMemcpyHtoD_v2(
            ctypes.c_uint64(ptr), ctypes.c_void_p(_address(host)), ctypes.c_size_t(host.nbytes)
        )
        self.check("cuMemcpyHtoD", code)

    def copy_from_device(self, host: memoryview, ptr: int) -> None:
        code = self.lib.cuMemcpyDtoH_v2(
            ctypes.c_void_p(_address(host)), ctypes.c_uint64(ptr), ctypes.c_size_t(host.nbytes)
        )
        self.check("cuMemcpyDtoH", code)

    def copy_on_device(self, dst: int, src: int, nbytes: int) -> None:
        code = self.lib.cuMemcpyDtoD_v2(
            ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes)
        )
        self.check("cuMemcpyDtoD", code)

    # -- launches and timing ----------------------------------------------------------------

    def launch(
        self,
        fn: ctypes.c_void_p,
        grid: Sequence[int],
        block: Sequence[int],
        pointers: Sequence[int],
    ) -> None:
        """One kernel over device pointers (each parameter a 64-bit pointer)."""
        params, _keep = kernel_params(pointers)
        code = self.lib.cuLaunchKernel(
            fn,
            *[ctypes.c_uint(int(n)) for n in (*grid, *block)],
            ctypes.c_uint(0),
            ctypes.c_void_p(0),
            params,
            ctypes.c_void_p(0),
        )
        self.check("cuLaunchKernel", code, f"grid {tuple(grid)}, block {tuple(block)}")

    def event(self) -> ctypes.c_void_p:
        ev = ctypes.c_void_p()
        self.check("cuEventCreate", self.lib.cuEventCreate(ctypes.byref(ev), 0))
        return ev

    def record(self, ev: ctypes.c_void_p) -> None:
        self.check("cuEventRecord", self.lib.cuEventRecord(ev, ctypes.c_void_p(0)))

    def elapsed_ms(self, start: ctypes.c_void_p, end: ctypes.c_void_p) -> float:
        self.check("cuEventSynchronize", self.lib.cuEventSynchronize(end))
        ms = ctypes.c_float()
        elapsed = getattr(self.lib, "cuEventElapsedTime_v2", None) or self.lib.cuEventElapsedTime
        self.check("cuEventElapsedTime", elapsed(ctypes.byref(ms), start, end))
        return ms.value


def kernel_params(pointers: Sequence[int]) -> tuple[ctypes.Array, list[ctypes.c_uint64]]:
    """cuLaunchKernel's `void **kernelParams`: one pointer per parameter to its 64-bit value
    (the values are returned too: they must outlive the call)."""
    values = [ctypes.c_uint64(p) for p in pointers]
    params = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
    return params, values


def _address(view: memoryview) -> int:
    """The address of a C-contiguous buffer."""
    import numpy as np

    return np.frombuffer(view, np.uint8).ctypes.data


__all__ = ["CudaDriver", "kernel_params"]
