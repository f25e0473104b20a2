"""`target="opencl"` (`-device=N` picks the N-th OpenCL device, GPUs first; `-tiles=registers`
the register-only matmul template): the GPU family's kernels printed as OpenCL C, shipped with
their launch plan, run by pyopencl."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.gpu.target import GpuTarget


@dataclass(frozen=True)
class OpenCLTarget(GpuTarget):
    kind: ClassVar[str] = "opencl"
    aliases: ClassVar[tuple[str, ...]] = ("cl",)
    kernel_format: ClassVar[str] = "opencl-c"
    vectors: ClassVar[bool] = True
    unroll_steps: ClassVar[bool] = True
    device: int = 0

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> OpenCLTarget:
        device, tiles = 0, "shared"
        for w in options:
            if w.startswith("-device=") and w.split("=", 1)[1].isdigit():
                device = int(w.split("=", 1)[1])
            elif w.startswith("-tiles="):
                tiles = cls.parse_tiles(w.split("=", 1)[1], spec)
            else:
                raise UserError(
                    f"unknown opencl target option {w!r} in {spec!r} (known: -device=N, "
                    "-tiles=shared|registers)"
                )
        return cls(device=device, tiles=tiles)

    @property
    def description(self) -> str:
        device = "" if self.device == 0 else f" -device={self.device}"
        return f"opencl{device}{self.tiles_option()}"

    def emit_kernel(self, module: Any, name: str) -> bytes:
        """The module's gpu.module as OpenCL C, and its host function as a launch plan."""
        from xdsl.dialects import gpu

        from nnvm.targets.gpu.launch_plan import launch_plan, plan_blob
        from nnvm.targets.gpu.opencl.print_opencl_c import PRELUDE, print_opencl_c

        plan = launch_plan(module, name)
        kernels = [op for op in module.ops if isinstance(op, gpu.ModuleOp)]
        code = "".join(print_opencl_c(k) for k in kernels) if kernels else PRELUDE
        return plan_blob(code, plan)

    def runtime(self, lib: Any) -> DeviceRuntime:
        from nnvm.targets.gpu.opencl.runtime import OpenCLRuntime

        return OpenCLRuntime(lib, self.device)
