"""`target="wasm"`: the CPU lowering path (te -> loops -> llvm) for wasm32-unknown-unknown with
128-bit SIMD (`-mattr=-simd128` for a scalar build) and no threads; link() gives one `.wasm`
holding the kernels, the generated C entry point (compiled for wasm32) and an exported memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import llvmlite.binding as llvm

from nnvm.support.errors import UserError
from nnvm.support.target import Capabilities
from nnvm.targets.cpu.target import MATMUL_PANEL, CPUTarget
from nnvm.targets.wasm.kernel_ir import wasm_kernel_ir

WASM_TRIPLE = "wasm32-unknown-unknown"


@cache
def initialize_all() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@dataclass(frozen=True)
class WasmTarget(CPUTarget):
    kind: ClassVar[str] = "wasm"
    aliases: ClassVar[tuple[str, ...]] = ("wasm32",)
    is_host: ClassVar[bool] = True
    scratch_functions: ClassVar[str] = ""
    """aligned_alloc and free: nnvm_wasm.c adapts them to wasm32 (one linear memory: a freed
    buffer is not handed back to a system that would fault it in again)."""

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> WasmTarget:
        simd = True
        opt = 3
        for w in options:
            if w in ("-mattr=+simd128", "-mattr=simd128"):
                simd = True
            elif w == "-mattr=-simd128":
                simd = False
            elif w in ("-O0", "-O1", "-O2", "-O3"):
                opt = int(w[2])
            else:
                raise UserError(
                    f"unknown wasm target option {w!r} in {spec!r} (known: -mattr=+simd128, "
                    "-mattr=-simd128, -O0..-O3)"
                )
        feats = frozenset({"simd128"} if simd else ())
        return cls(
            triple=WASM_TRIPLE,
            cpu="generic",
            features="+simd128" if simd else "-simd128",
            opt_level=opt,
            required=feats,
        )

    @property
    def vector_bits(self) -> int:
        return 128 if "simd128" in self.required else 32

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities("cpu", vector_bits=self.vector_bits, threads=False, panel=MATMUL_PANEL)

    def graph_passes(self) -> dict[str, list[Any]]:
        """None: int8 graphs keep quantize-int8's exact-float form (WebAssembly SIMD has no
        byte dot product, and te.tensorize is not enabled for it)."""
        return {}

    def target_machine(self, *, jit: bool = False, pic: bool = False) -> llvm.TargetMachine:
        initialize_all()
        tgt = llvm.Target.from_triple(self.triple)
        return tgt.create_target_machine(
            cpu=self.cpu, features=self.features, opt=self.opt_level, codemodel="default"
        )

    def emit_kernel(self, module: Any, name: str) -> bytes:
        from nnvm.targets.llvm.compile import emit_object
        from nnvm.targets.llvm.translate import to_llvmlite_module

        text = str(to_llvmlite_module(module, triple=self.triple))
        return emit_object(wasm_kernel_ir(text), self, target_record=False)

    def link(
        self,
        graph: Any,
        objects: list[bytes],
        out: Path,
        blobs: dict[str, bytes],
        libraries: Sequence[str] = (),
    ) -> Path:
        from nnvm.targets.wasm.link import link_wasm_module

        if blobs or graph.devices:
            raise UserError("the wasm target runs no device kernels (build it without devices)")
        if libraries:
            raise UserError("the wasm target links no extra libraries (te.extern calls)")
        return link_wasm_module(graph, objects, out.with_suffix(".wasm"), self)

    def load(self, path: Path) -> Any:
        from nnvm.targets.wasm.link import WasmLibrary

        return WasmLibrary(Path(path))
