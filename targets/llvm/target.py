"""CPU targets: the `target="llvm -mcpu=... -mattr=..."` string, LLVM target machines, features.

The default is the host: its CPU name and *all* its features, since llvmlite's default target
machine is generic x86-64 and lowers `llvm.fma.v8f32` to `fmaf` calls (llvmlite-ceilings.md,
pitfall 3). A portable build names a CPU, e.g. `llvm -mcpu=x86-64-v3`, and the features it
implies are recorded so a library can refuse to load on a host that lacks them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import cache

import llvmlite.binding as llvm

from nnvm.support.errors import UserError

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
class CPUTarget:
    """What to compile for: triple, CPU name, feature string and optimisation level."""

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

    No `-mcpu`, or `-mcpu=host`, means the host CPU with all its features; `-mattr` then adds
    or removes features. A named CPU starts from the features that CPU level implies (for the
    x86-64 psABI levels; for other names only `-mattr` is known and recorded).
    """
    if isinstance(spec, CPUTarget):
        return spec
    if spec is None or not spec.strip():
        return host_target()
    words = shlex.split(spec)
    if words[0] not in ("llvm", "cpu"):
        raise UserError(f"unknown target kind {words[0]!r} in {spec!r}; expected 'llvm ...'")
    cpu = "host"
    mattr: list[str] = []
    triple: str | None = None
    opt = 3
    for w in words[1:]:
        if w.startswith("-mcpu="):
            cpu = w.split("=", 1)[1]
        elif w.startswith("-mattr="):
            mattr += _split_features(w.split("=", 1)[1])
        elif w.startswith("-mtriple="):
            triple = w.split("=", 1)[1]
        elif w in ("-O0", "-O1", "-O2", "-O3"):
            opt = int(w[2])
        elif w.startswith("-opt-level="):
            opt = int(w.split("=", 1)[1])
        else:
            raise UserError(f"unknown target option {w!r} in {spec!r}")
    initialize()
    if triple is None:
        triple = llvm.get_process_triple()
    if cpu == "host":
        base = host_target(opt)
        required = set(base.required)
        features = base.features
        cpu_name = base.cpu
    else:
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
