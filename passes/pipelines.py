"""The opt-level pipelines (the one definition), as NNVM had them: 0 nothing, 1 fuse, 2 adds
prune-conv-taps and fold-constants, 3 adds simplify-inference, fold-scale-axis and
alter-layout, in NNVM's order so that transformed weights are precomputed into params
before fusion. Every level that fuses also plans memory, which the runtime needs. Usable from nnvm-opt as `-p nnvm-O3` (or `nnvm-O0`..`nnvm-O2`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

PIPELINES: dict[int, tuple[str, ...]] = {
    0: (),
    1: ("fuse", "plan-memory"),
    2: ("prune-conv-taps", "fold-constants", "fuse", "cse", "dce", "plan-memory"),
    3: (
        "simplify-inference",
        "fold-scale-axis",
        "prune-conv-taps",
        "alter-layout",
        "sink-reshapes",
        # once more: a Conv1d is reshape, conv2d, reshape, and its activation lies between two
        # blocked convs only once the reshapes cancel (docs/design.md, "Reshapes move down")
        "alter-layout",
        "fold-constants",
        "fuse",
        "cse",
        "dce",
        "plan-memory",
    ),
}


RUNTIME_NEEDS = ("fuse{enable=false}", "plan-memory")
"""What a level that does not fuse still needs for a build: every op a kernel of its own and a
planned arena (the runtime runs kernels over planned memory)."""


def build_passes(opt_level: int) -> list[str]:
    """The graph passes a build runs at an opt level: the level's pipeline, plus what the runtime
    needs when the level does not fuse (O0)."""
    if opt_level not in PIPELINES:
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, not {opt_level}")
    names = list(PIPELINES[opt_level])
    return names if "fuse" in names else [*names, *RUNTIME_NEEDS]


def pipeline_passes(opt_level: int) -> list[ModulePass]:
    """Pass instances of the graph pipeline for an opt level (0 to 3)."""
    from xdsl.transforms import get_all_passes

    from nnvm.passes import PASSES

    if opt_level not in PIPELINES:
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, not {opt_level}")
    factories = {**get_all_passes(), **PASSES}
    return [factories[name]()() for name in PIPELINES[opt_level]]


class OptLevelPipeline(ModulePass):
    """Base of the nnvm-O<n> passes: run the graph pipeline of one opt level.

    A pipeline builder (nnvm.registry.build_pipeline) replaces it by `inner_passes()`, as
    mlir-opt expands a registered pipeline, so that timing, statistics and IR printing see each
    real pass; `apply` runs them all for a caller that holds the pseudo-pass itself."""

    LEVEL: ClassVar[int]

    def inner_passes(self) -> list[ModulePass]:
        return pipeline_passes(self.LEVEL)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in self.inner_passes():
            p.apply(ctx, op)


@dataclass(frozen=True)
class O0(OptLevelPipeline):
    """Opt level 0: no graph transformation."""

    name = "nnvm-O0"
    LEVEL: ClassVar[int] = 0


@dataclass(frozen=True)
class O1(OptLevelPipeline):
    """Opt level 1: fuse, plan-memory."""

    name = "nnvm-O1"
    LEVEL: ClassVar[int] = 1


@dataclass(frozen=True)
class O2(OptLevelPipeline):
    """Opt level 2: fold-constants, fuse, cse, dce, plan-memory."""

    name = "nnvm-O2"
    LEVEL: ClassVar[int] = 2


@dataclass(frozen=True)
class O3(OptLevelPipeline):
    """Opt level 3: simplify-inference, fold-scale-axis, alter-layout, then O2."""

    name = "nnvm-O3"
    LEVEL: ClassVar[int] = 3
