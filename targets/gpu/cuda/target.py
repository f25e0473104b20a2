"""`target="cuda -arch=sm_90 [-device=N] [-tiles=registers] [-emulate]"` (alias `nvptx`; sm_80 and the other ARCHES
accepted): the GPU family's kernels lowered by convert-gpu-to-llvm and emitted as PTX, each
kernel's blob its launch plan and PTX; the runtime drives the CUDA driver API, or with
`-emulate` runs the same kernels on the host (host_emulator.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.gpu.cuda.ptx import ARCHES
from nnvm.targets.gpu.target import GpuTarget

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class CudaTarget(GpuTarget):
    kind: ClassVar[str] = "cuda"
    aliases: ClassVar[tuple[str, ...]] = ("nvptx",)
    kernel_format: ClassVar[str] = "cuda-ptx"

    arch: str = DEFAULT_ARCH
    device: int = 0
    emulate: bool = False
    """Run the kernels on the host CPU, thread after thread (host_emulator.py): for tests."""

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> CudaTarget:
        arch, device, emulate, tiles = DEFAULT_ARCH, 0, False, "shared"
        for w in options:
            key, _, value = w.partition("=")
            if w == "-emulate":
                emulate = True
            elif key == "-tiles":
                tiles = cls.parse_tiles(value, spec)
            elif key in ("-arch", "-mcpu") and value:
                if value not in ARCHES:
                    raise UserError(
                        f"unknown CUDA architecture {value!r} in {spec!r} (known: {', '.join(ARCHES)})"
                    )
                arch = value
            elif key == "-device" and value.isdigit():
                device = int(value)
            else:
                raise UserError(
                    f"unknown cuda target option {w!r} in {spec!r} (known: -arch=sm_XX, -device=N, "
                    "-emulate, -tiles=shared|registers)"
                )
        return cls(arch=arch, device=device, emulate=emulate, tiles=tiles)

    @property
    def description(self) -> str:
        device = f" -device={self.device}" if self.device else ""
        emulate = " -emulate" if self.emulate else ""
        return f"cuda -arch={self.arch}{device}{self.tiles_option()}{emulate}"

    def kernel_passes(self) -> list[Any]:
        from nnvm.lowering.gpu_to_llvm.convert_gpu_to_llvm import ConvertGpuToLLVM

        return [*super().kernel_passes(), ConvertGpuToLLVM()]

    def emit_kernel(self, module: Any, name: str) -> bytes:
        """The kernel's blob: its launch plan and the PTX of its gpu.module (encode_blob)."""
        from nnvm.targets.gpu.cuda.blob import encode_blob
        from nnvm.targets.gpu.cuda.ptx import device_ir_text, emit_ptx
        from nnvm.targets.gpu.launch_plan import Launch, launch_plan

        plan = launch_plan(module, name)
        if not any(isinstance(s, Launch) for s in plan.steps):
            return encode_blob(plan, "", self.arch)
        ptx = emit_ptx(module, self.arch)
        nvvm_ir = device_ir_text(module) if self.emulate else None
        return encode_blob(plan, ptx, self.arch, nvvm_ir)

    def runtime(self, lib: Any) -> DeviceRuntime:
        if self.emulate:
            from nnvm.targets.gpu.cuda.host_emulator import EmulatedCudaRuntime

            return EmulatedCudaRuntime(lib)
        from nnvm.targets.gpu.cuda.runtime import CudaRuntime

        return CudaRuntime(lib, self.device)


__all__ = ["CudaTarget"]
