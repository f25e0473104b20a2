"""A test-only device target, `testdev`: its kernels are CPU code, but it keeps its own buffers
and is reached only through the device API (copies in, launch, copies out), so heterogeneous
builds and runtimes are tested without a GPU. Load it as a plugin (this module's TESTDEV):
`load_plugin_module("nnvm.testing.host_device")` or `nnvm-opt --load-pass-plugin=...`.

    testdev [-accept=SUBSTR,...] [-reject=SUBSTR,...] [-fail=SUBSTR,...]

places the kernels whose name (fused_<ops>_<hash>) contains one of `-accept` (default: all)
and none of `-reject`; its compiler refuses (UserError) the placed kernels named by `-fail`,
as a device compiler refuses a kernel it cannot fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from nnvm.support.errors import UserError
from nnvm.support.plugins import PLUGIN_API_VERSION, Plugin
from nnvm.support.target import Capabilities, DeviceRuntime, Target

STATS: dict[str, int] = {"launches": 0, "bytes_in": 0, "bytes_out": 0, "live_buffers": 0}
"""What every HostDeviceRuntime of this process did (tests read it)."""


@dataclass(frozen=True)
class HostDeviceTarget(Target):
    kind: ClassVar[str] = "testdev"
    accept: tuple[str, ...] = ()
    reject: tuple[str, ...] = ()
    fail: tuple[str, ...] = ()
    host: Any = field(default=None, compare=False)

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> HostDeviceTarget:
        accept: tuple[str, ...] = ()
        reject: tuple[str, ...] = ()
        fail: tuple[str, ...] = ()
        for w in options:
            key, _, value = w.partition("=")
            items = tuple(v for v in value.split(",") if v)
            if key == "-accept":
                accept = items
            elif key == "-reject":
                reject = items
            elif key == "-fail":
                fail = items
            else:
                raise UserError(f"unknown testdev option {w!r} in {spec!r}")
        from nnvm.targets.cpu.target import host_target

        return cls(accept, reject, fail, host_target())

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities("test", vector_bits=self.host.vector_bits, threads=True)

    @property
    def description(self) -> str:
        parts = ["testdev"]
        if self.accept:
            parts.append("-accept=" + ",".join(self.accept))
        if self.reject:
            parts.append("-reject=" + ",".join(self.reject))
        if self.fail:
            parts.append("-fail=" + ",".join(self.fail))
        return " ".join(parts)

    def accepts(self, fn: Any) -> str | None:
        name = fn.sym_name.data
        if self.accept and not any(a in name for a in self.accept):
            return "not among the accepted kernels"
        if any(r in name for r in self.reject):
            return "rejected by -reject"
        return None

    def kernel_passes(self) -> list[Any]:
        return self.host.kernel_passes()

    def emit_kernel(self, module: Any, name: str) -> bytes:
        if any(f in name for f in self.fail):
            raise UserError(f"testdev cannot fit {name} (-fail)")
        return self.host.emit_kernel(module, name)

    def runtime(self, lib: Any) -> DeviceRuntime:
        return HostDeviceRuntime(lib)


class HostDeviceRuntime(DeviceRuntime):
    """'Device memory' is a dict of its own arrays; a launch calls the kernel's host symbol."""

    def __init__(self, lib: Any):
        self.lib = lib
        self.buffers: dict[int, np.ndarray] = {}
        self.kernels: dict[str, Any] = {}

    def alloc(self, nbytes: int) -> int:
        from nnvm.runtime.graph_runtime import aligned_empty

        buf = aligned_empty((nbytes,), np.uint8)
        self.buffers[buf.ctypes.data] = buf
        STATS["live_buffers"] += 1
        return buf.ctypes.data

    def free(self, handle: int) -> None:
        if self.buffers.pop(handle, None) is not None:
            STATS["live_buffers"] -= 1

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        self.buffers[handle][: host.nbytes] = np.frombuffer(host, np.uint8)
        STATS["bytes_in"] += host.nbytes

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        np.frombuffer(host, np.uint8)[...] = self.buffers[handle][: host.nbytes]
        STATS["bytes_out"] += host.nbytes

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        for h in handles:
            if h not in self.buffers:
                raise UserError(f"{kernel}: {h:#x} is not a buffer of this device")
        if kernel not in self.kernels:
            self.kernels[kernel] = self.lib.get_function(kernel, len(handles))
        self.kernels[kernel](*handles)
        STATS["launches"] += 1


TESTDEV = Plugin(api_version=PLUGIN_API_VERSION, targets={"testdev": lambda: HostDeviceTarget})
