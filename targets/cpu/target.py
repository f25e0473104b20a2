"""The CPU target (`llvm -mcpu=... -mattr=...`): host detection, LLVM target machines, features,
and the Target seam's CPU side (kernel pipeline, x86 default schedules, link, load).

The default is the host: its CPU name and *all* its features, since llvmlite's default target
machine is generic x86-64 and lowers `llvm.fma.v8f32` to `fmaf` calls (docs/reference/llvmlite-ceilings.md,
pitfall 3). A portable build names a CPU, e.g. `llvm -mcpu=x86-64-v3`, and the features it
implies are recorded so a library can refuse to load on a host that lacks them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import llvmlite.binding as llvm

from nnvm.support.errors import UserError
from nnvm.support.target import Capabilities, Target

# Features implied by the x86-64 psABI micro-architecture levels, in LLVM's feature names.
_X86_64 = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_X86_64_V2 = (*_X86_64, "cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3", "crc32")
_X86_64_V3 = (
    *_X86_64_V2,
    "avx",
    "avx2",
    "bmi",
    "bmi2",
    "f16c",
    "fma",
    "lzcnt",
    "movbe",
    "xsave",
)
_X86_64_V4 = (*_X86_64_V3, "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
CPU_LEVEL_FEATURES: dict[str, tuple[str, ...]] = {
    "x86-64": _X86_64,
    "x86-64-v2": _X86_64_V2,
    "x86-64-v3": _X86_64_V3,
    "x86-64-v4": _X86_64_V4,
}


LANE_PERMUTES = {16: "llvm.x86.avx512.permvar.sf.512", 8: "llvm.x86.avx2.permps"}
"""x86's f32 lane permutes by a vector of indices (vpermps), by lane count."""

MATMUL_PANEL = 32
"""Column-panel width of a packed matmul operand (two AVX-512 or four AVX2 f32 vectors)."""


@cache
def initialize() -> None:
    """Register LLVM's native target once (llvm.initialize() itself raises in llvmlite 0.50)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@cache
def host_cpu_name() -> str:
    initialize()
    return llvm.get_host_cpu_name()


def host_features() -> dict[str, bool]:
    """The host's CPU features by LLVM name (True where present)."""
    initialize()
    return dict(llvm.get_host_cpu_features())


@dataclass(frozen=True)
class CPUTarget(Target):
    """What to compile for: triple, CPU name, feature string and optimisation level."""

    kind: ClassVar[str] = "llvm"
    aliases: ClassVar[tuple[str, ...]] = ("cpu",)
    is_host: ClassVar[bool] = True
    scratch_functions: ClassVar[str] = "nnvm_scratch_alloc,nnvm_scratch_free"
    """What kernels take and give back their heap scratch with: the kernel runtime's allocator,
    which keeps large buffers for the next call (targets/cpu/nnvm_scratch.c)."""

    triple: str
    cpu: str
    features: str
    opt_level: int = 3
    required: frozenset[str] = field(default_factory=frozenset)
    """Features the generated code may use; a host lacking any of them must not run it."""

    @property
    def description(self) -> str:
        """One line recorded in libraries: `cpu=...;triple=...;features=+a,+b`."""
        feats = ",".join(f"+{f}" for f in sorted(self.required))
        return f"cpu={self.cpu};triple={self.triple};features={feats}"

    @property
    def vector_bits(self) -> int:
        """Width of the widest float vector registers the code may use: the default schedules
        size register tiles and channel blocks by it."""
        return 512 if "avx512f" in self.required else 256

    def target_machine(self, *, jit: bool = False, pic: bool = False) -> llvm.TargetMachine:
        """An LLVM target machine; `pic` for objects that go into shared libraries."""
        initialize()
        tgt = llvm.Target.from_triple(self.triple)
        if pic:
            return tgt.create_target_machine(
                cpu=self.cpu,
                features=self.features,
                opt=self.opt_level,
                reloc="pic",
                codemodel="default",
            )
        return tgt.create_target_machine(
            cpu=self.cpu, features=self.features, opt=self.opt_level, jit=jit
        )

    # -- the Target seam ----------------------------------------------------------------------

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> CPUTarget:
        return _parse_options(spec, options)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            "cpu", vector_bits=self.vector_bits, threads=True, panel=MATMUL_PANEL, tensorize=True
        )

    def tensor_intrinsics(self) -> dict[str, Any]:
        """The byte dot product (vpdpbusd with VNNI, shifts and multiplies without)."""
        from nnvm.targets.cpu.dot_bytes import NAME, dot_bytes_intrinsic

        return {NAME: dot_bytes_intrinsic(self.vector_bits // 32, self.required)}

    def lane_permutes(self) -> dict[int, str]:
        """vpermps over 16 lanes (AVX-512) and 8 (AVX2)."""
        found = {16: "avx512f", 8: "avx2"}
        return {n: LANE_PERMUTES[n] for n, feature in found.items() if feature in self.required}

    def pass_options(self, pass_name: str) -> dict[str, Any]:
        if pass_name == "alter-layout":  # NCHWc channel blocks of one f32 vector
            lanes = max(self.vector_bits // 32, 1)
            return {"block": lanes, "panel": MATMUL_PANEL, "dot_lanes": lanes}
        return {}

    def graph_passes(self) -> dict[str, list[Any]]:
        """int8 dense in integers (byte dot products) before alter-layout packs its weights."""
        from nnvm.passes.integer_products import IntegerProductsPass

        return {"before:alter-layout": [IntegerProductsPass()]}

    def kernel_passes(self) -> list[Any]:
        from nnvm.lowering.te_to_loops.lower_te_to_loops import LowerTEToLoops
        from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
        from nnvm.lowering.to_te.lower_to_te import LowerToTE
        from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass
        from nnvm.passes.fold_reciprocal_multiply import FoldReciprocalMultiplyPass
        from nnvm.passes.hoist_loop_invariant_accesses import HoistLoopInvariantAccessesPass
        from nnvm.passes.multiply_by_reciprocal import MultiplyByReciprocalPass

        return [
            LowerToTE(target=self),
            ApplyDefaultSchedulePass(target=self),
            LowerTEToLoops(target=self),
            HoistLoopInvariantAccessesPass(),  # register tiles in SSA, not left to LLVM's LICM
            FoldReciprocalMultiplyPass(),  # x * (1 / d) -> x / d: a SiLU's one division
            MultiplyByReciprocalPass(),  # x / c -> x * (1 / c): GELU's x / sqrt(2)
            # with the thread pool's parallel loops (registered by nnvm.universe); exp scaled
            # by vscalefps where there is one (efficientnet-b0 0.94x, gpt2-4l 0.93x); ReLU and
            # Clip as one vmaxps/vminps each
            ConvertToLLVM(
                ldexp=self.vector_bits >= 512,
                x86_minmax=self.vector_bits >= 512,
                scratch=self.scratch_functions,
            ),
        ]

    def default_schedule(self, fn: Any, min_parallel_work: int | None = None) -> Any:
        from nnvm.targets.cpu.schedules import MIN_PARALLEL_WORK, default_schedule

        work = MIN_PARALLEL_WORK if min_parallel_work is None else min_parallel_work
        return default_schedule(fn, self.vector_bits, work if self.capabilities.threads else None)

    def configured_schedule(self, fn: Any, config: Any) -> Any:
        from nnvm.targets.cpu.schedules import MIN_PARALLEL_WORK, configured_schedule

        work = MIN_PARALLEL_WORK if self.capabilities.threads else None
        return configured_schedule(fn, config, self.vector_bits, work)

    def emit_kernel(self, module: Any, name: str) -> bytes:
        from nnvm.targets.llvm.compile import emit_object

        return emit_object(module, self, target_record=False)

    def link(
        self,
        graph: Any,
        objects: list[bytes],
        out: Path,
        blobs: dict[str, bytes],
        libraries: Sequence[str] = (),
    ) -> Path:
        from nnvm.targets.cpu.link import link_model_library

        return link_model_library(graph, objects, out, self, blobs, libraries)

    def load(self, path: Path) -> Any:
        from nnvm.targets.llvm.compile import load_library

        return load_library(path)


def _split_features(text: str) -> list[str]:
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if item[0] not in "+-":
            item = "+" + item
        out.append(item)
    return out


def host_target(opt_level: int = 3) -> CPUTarget:
    """The machine we run on, with every feature it has."""
    initialize()
    feats = llvm.get_host_cpu_features()
    enabled = frozenset(k for k, v in feats.items() if v)
    return CPUTarget(
        triple=llvm.get_process_triple(),
        cpu=host_cpu_name(),
        features=feats.flatten(),
        opt_level=opt_level,
        required=enabled,
    )


def parse_target(spec: str | CPUTarget | None = None) -> CPUTarget:
    """Parse `llvm [-mcpu=NAME] [-mattr=+a,-b] [-mtriple=T] [-O0..3]` (TVM's target syntax).

    No `-mcpu`, `-mcpu=host` or `-mcpu=native` means the host CPU with all its features;
    `-mattr` then adds or removes features. A named CPU starts from the features that CPU
    level implies (for the x86-64 psABI levels; for other names only `-mattr` is known and
    recorded); a name LLVM does not know is a UserError.
    """
    if isinstance(spec, CPUTarget):
        return spec
    from nnvm.support.target import parse_target as parse_any

    found = parse_any(spec)
    if not isinstance(found, CPUTarget):
        raise UserError(f"{spec!r} is not a CPU target")
    return found


def _parse_options(spec: str, options: list[str]) -> CPUTarget:
    cpu = "host"
    mattr: list[str] = []
    triple: str | None = None
    opt = 3
    for w in options:
        if w.startswith("-mcpu="):
            cpu = w.split("=", 1)[1]
        elif w.startswith("-mattr="):
            mattr += _split_features(w.split("=", 1)[1])
        elif w.startswith("-mtriple="):
            triple = w.split("=", 1)[1]
        elif w in ("-O0", "-O1", "-O2", "-O3"):
            opt = int(w[2])
        elif w.startswith("-opt-level="):
            value = w.split("=", 1)[1]
            if value not in ("0", "1", "2", "3"):
                raise UserError(f"bad optimisation level {w!r} in {spec!r}: 0 to 3")
            opt = int(value)
        else:
            raise UserError(f"unknown target option {w!r} in {spec!r}")
    initialize()
    if triple is None:
        triple = llvm.get_process_triple()
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError:
        raise UserError(f"unknown target triple {triple!r} in {spec!r}") from None
    if cpu in ("host", "native"):
        base = host_target(opt)
        required = set(base.required)
        features = base.features
        cpu_name = base.cpu
    else:
        if not known_cpu(cpu, triple):
            raise UserError(
                f"unknown CPU {cpu!r} in {spec!r}: LLVM does not know it for {triple} "
                "(use -mcpu=host, an x86-64 level such as x86-64-v3, or a name like skylake)"
            )
        required = set(CPU_LEVEL_FEATURES.get(cpu, ()))
        features = ",".join(f"+{f}" for f in sorted(required))
        cpu_name = cpu
    for f in mattr:
        name = f[1:]
        if f[0] == "+":
            required.add(name)
        else:
            required.discard(name)
    if mattr:
        features = ",".join(x for x in (features, ",".join(mattr)) if x)
    return CPUTarget(
        triple=triple, cpu=cpu_name, features=features, opt_level=opt, required=frozenset(required)
    )


@cache
def known_cpu(name: str, triple: str) -> bool:
    """Does LLVM know this CPU name? (it only warns on stderr, then generates generic code)"""
    initialize()
    target = llvm.Target.from_triple(triple)
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            target.create_target_machine(cpu=name)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        return b"not a recognized processor" not in err.read()


def missing_features(required: frozenset[str] | set[str], host: dict[str, bool] | None = None):
    """Required features this host does not have, sorted."""
    have = host_features() if host is None else host
    return sorted(f for f in required if not have.get(f, False))


def parse_description(text: str) -> dict[str, str]:
    """Inverse of `CPUTarget.description`."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out
