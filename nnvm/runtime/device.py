"""Device targets' runtimes seen from C: a DeviceRuntime (Python) behind the five callbacks of
`nnvm_device_api` (targets/cpu/nnvm_runtime.h), and the same copies and launch for the debug
runtime's kernel-by-kernel runs."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from nnvm.support.target import DeviceRuntime

ALLOC = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)
RELEASE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64)
COPY_TO = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
)
COPY_FROM = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
)
LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_int
)


class DeviceAPI(ctypes.Structure):
    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("alloc", ALLOC),
        ("release", RELEASE),
        ("copy_to_device", COPY_TO),
        ("copy_from_device", COPY_FROM),
        ("launch", LAUNCH),
    ]


def _view(address: int, nbytes: int) -> memoryview:
    return memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")


class BoundDevice:
    """A DeviceRuntime as an `nnvm_device_api` struct. An exception in a callback becomes a
    non-zero status (C reports which call failed) and is kept in `error` for the message."""

    def __init__(self, name: str, runtime: DeviceRuntime):
        self.name = name
        self.runtime = runtime
        self.error = ""
        rt = runtime

        def guarded(fn, failed):
            def call(*args):
                try:
                    return fn(*args)
                except Exception as err:  # reported through the C status, never lost
                    self.error = f"{type(err).__name__}: {err}"
                    return failed

            return call

        self._callbacks = (
            ALLOC(guarded(lambda _c, n: rt.alloc(n), 0)),
            RELEASE(guarded(lambda _c, h: rt.free(h), None)),
            COPY_TO(guarded(lambda _c, h, src, n: rt.copy_to_device(h, _view(src, n)) or 0, 1)),
            COPY_FROM(guarded(lambda _c, dst, h, n: rt.copy_from_device(_view(dst, n), h) or 0, 1)),
            LAUNCH(guarded(lambda _c, k, bufs, count: rt.launch(k.decode(), bufs[:count]) or 0, 1)),
        )
        self.api = DeviceAPI(None, *self._callbacks)


def run_on_device(
    runtime: DeviceRuntime, kernel: str, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]
) -> None:
    """One device kernel from host arrays: copy in, launch, copy out, free (the debug runtime)."""
    handles = [runtime.alloc(max(a.nbytes, 1)) for a in (*ins, *outs)]
    try:
        for h, a in zip(handles, ins, strict=False):
            runtime.copy_to_device(h, memoryview(np.ascontiguousarray(a)).cast("B"))
        runtime.launch(kernel, handles)
        for h, a in zip(handles[len(ins) :], outs, strict=True):
            runtime.copy_from_device(memoryview(a).cast("B"), h)
    finally:
        for h in handles:
            runtime.free(h)
