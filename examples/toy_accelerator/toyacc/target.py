"""The `toyacc` device target: it accepts fused kernels the offload pass can move entirely,
lowers them to toyacc IR, ships that IR as the kernel's program, and runs it on the simulator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from nnvm.support.errors import UserError
from nnvm.support.ir_text import ir_text
from nnvm.support.target import Capabilities, DeviceRuntime, Target
from toyacc.offload import ToyAccOffload, offloadable


@dataclass(frozen=True)
class ToyAccTarget(Target):
    kind: ClassVar[str] = "toyacc"
    kernel_format: ClassVar[str] = "toyacc-ir"

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> ToyAccTarget:
        if options:
            raise UserError(f"toyacc takes no options, got {options} in {spec!r}")
        return cls()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities("accel", memory_scopes=("global", "acc"))

    @property
    def description(self) -> str:
        return "toyacc"

    def pass_options(self, pass_name: str) -> dict[str, Any]:
        # the host packs constant matmul weights into column panels for its register tiles;
        # toyacc's GEMM reads them [K, N] as they are
        return {"panel": 0} if pass_name == "alter-layout" else {}

    def accepts(self, fn: Any) -> str | None:
        return offloadable(fn)

    def kernel_passes(self) -> list[Any]:
        return [ToyAccOffload()]

    def emit_kernel(self, module: Any, name: str) -> bytes:
        left = {op.name for op in module.walk() if op.name.startswith("nnvm.")}
        if left:
            raise UserError(f"toyacc cannot run {', '.join(sorted(left))}")
        return ir_text(module).encode()

    def runtime(self, lib: Any) -> DeviceRuntime:
        from toyacc.simulator import Simulator

        return Simulator(lib)
