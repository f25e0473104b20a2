"""`GpuTarget`: what the GPU targets share on the Target seam (bind legal, three memory scopes,
the te -> gpu kernel pipeline, the GPU strategy table); OpenCL and CUDA subclass it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from nnvm.support.errors import UserError
from nnvm.support.target import Capabilities, Target

MAX_THREADS = 1024
"""Threads per block (work-group) the default schedules and the bind check allow."""
MAX_SHARED_BYTES = 48 * 1024
"""Shared (work-group local) memory per block every CUDA GPU and PoCL give without opt-in."""
TILES = ("shared", "registers")
"""The matmul / dense templates a GPU target string can pick (-tiles=...)."""
ELEMENT_TYPES = ("f32", "i1", "i8", "i16", "i32", "i64", "ui8", "index")
"""Tensor element types GPU kernels take (no f64 / f16: optional on OpenCL devices)."""


@dataclass(frozen=True)
class GpuTarget(Target):
    """A GPU: kernels are te schedules whose loops are bound to block / thread indices, lowered
    to one `gpu.module` per kernel by lower-te-to-gpu. A subclass sets `kind`,
    `kernel_format`, and implements `parse`, `description`, `emit_kernel` (the lowered module ->
    its device code: OpenCL C, PTX) and `runtime`; it may append passes to `kernel_passes()`.
    The lowered module holds one host function that only allocates temporaries and launches
    kernels (every root stage is outlined, bound or not)."""

    kind: ClassVar[str] = "gpu"
    vectors: ClassVar[bool] = False
    """te.vectorize is legal (the device code has vector types for the vector ops)."""
    unroll_steps: ClassVar[bool] = False
    """The shared-tile templates unroll the loop over a step's tile (k.i): what PoCL needs (it
    runs the code between barriers one work-item at a time and adds a barrier to every counted
    loop of such a kernel: a 256^3 matmul 6.9 ms rolled, 1.2 ms unrolled); a GPU compiler
    unrolls where it pays itself, and the CUDA emulator compiles the unrolled form slowly."""
    vector_lanes: ClassVar[int] = 4
    """Lanes per thread of the injective schedule where `vectors` is on (one 128-bit load of
    f32 per operand: float4)."""
    max_threads: int = MAX_THREADS
    max_shared_bytes: int = MAX_SHARED_BYTES
    tiles: str = "shared"
    """The matmul / dense template: operand tiles in shared memory ("shared"), or register
    tiles reading global memory ("registers"; target option `-tiles=registers`)."""

    def tiles_option(self) -> str:
        """The target-string option for a non-default `tiles` ('' for the default)."""
        return "" if self.tiles == "shared" else f" -tiles={self.tiles}"

    @staticmethod
    def parse_tiles(value: str, spec: str) -> str:
        if value not in TILES:
            raise UserError(f"unknown -tiles={value} in {spec!r} (known: {', '.join(TILES)})")
        return value

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities("gpu", bind=True, memory_scopes=("global", "shared", "local"))

    def accepts(self, fn: Any) -> str | None:
        """A fused kernel runs on the GPU when every tensor it touches has an element type a
        kernel can take (the others stay on the host)."""
        from xdsl.dialects.builtin import TensorType

        for op in fn.walk():
            for v in (*op.operands, *op.results):
                t = v.type
                if isinstance(t, TensorType) and str(t.element_type) not in ELEMENT_TYPES:
                    return f"{op.name} works on {t.element_type}, which GPU kernels do not take"
        return None

    def kernel_passes(self) -> list[Any]:
        """lower-to-te, the GPU default schedules, lower-te-to-gpu (every root stage a kernel)."""
        from nnvm.lowering.te_to_gpu.lower_te_to_gpu import LowerTEToGpu
        from nnvm.lowering.to_te.lower_to_te import LowerToTE
        from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass

        return [
            LowerToTE(target=self),
            ApplyDefaultSchedulePass(target=self),
            LowerTEToGpu(max_threads=self.max_threads, outline_all=True, target=self),
        ]

    def check_schedule(self, state: Any) -> None:
        """Besides the base checks (bind / tensorize legality, cache_read scopes): no
        thread-pool loops inside a kernel, vectors only where the subclass prints them (a
        DiagnosticError at the primitive)."""
        from nnvm.support.diagnostics import DiagnosticError

        super().check_schedule(state)
        for stage in state.stages:
            for v in stage.leaves:
                if v.annotation == "parallel":
                    raise DiagnosticError(
                        v.annotated_by,
                        f"te.parallel: target '{self.kind}' runs no thread pool inside a kernel; "
                        f"bind axis '{v.name}' to blockIdx.* or threadIdx.* instead",
                    )
                if v.annotation == "vectorize" and not self.vectors:
                    raise DiagnosticError(
                        v.annotated_by,
                        f"te.vectorize: target '{self.kind}' does not print vector ops yet; "
                        f"bind axis '{v.name}' or leave it a loop",
                    )

    def default_schedule(self, fn: Any, **knobs: Any) -> Any:
        """The GPU strategy table's schedule (targets/gpu/schedules/); knobs: block (threads
        per block of the injective and reduction schedules), shared (shared-memory matmul
        tiles; default: the target's `tiles`), lanes (vector lanes per thread of the injective
        schedule; default: `vector_lanes` where the target prints vectors, else 0)."""
        from nnvm.targets.gpu.schedules import default_schedule

        knobs.setdefault("shared", self.tiles == "shared")
        knobs.setdefault("lanes", self.vector_lanes if self.vectors else 0)
        knobs.setdefault("unroll_steps", self.unroll_steps)
        return default_schedule(fn, self, **knobs)
