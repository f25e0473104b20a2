"""The stage tree of a te kernel: each tensor is a stage; a compute stage has loop axes, and the
relations (split, fuse) that say how its original axes follow from its leaf loops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te.ops import ComputeOp

T = TypeVar("T")


@dataclass(eq=False)
class IterVar:
    """One loop axis of a stage. `extent` is nominal (from the whole tensor); a stage computed
    at a consumer's loop iterates a smaller region and recomputes extents from its root axes."""

    name: str
    extent: int
    reduce: bool
    annotation: str | None = None
    annotated_by: Operation | None = None
    prefetch: list[tuple[Stage, int, Operation]] = field(default_factory=list)
    """(tensor, offset, the te.prefetch) for each prefetch issued in this loop's body."""

    def __repr__(self) -> str:
        return f"IterVar({self.name}:{self.extent}{'r' if self.reduce else ''})"


@dataclass(eq=False)
class Split:
    """parent = outer * |inner| + inner."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(eq=False)
class Fuse:
    """outer = fused / |inner|, inner = fused % |inner|."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


Relation = Split | Fuse


def split_extents(parent: int, factor: int | None, nparts: int | None) -> tuple[int, int]:
    """(outer, inner) extents of a split of an axis of extent `parent`."""
    if factor is not None:
        inner = factor
        return -(-parent // inner), inner
    assert nparts is not None
    inner = -(-parent // nparts)
    return -(-parent // inner) if inner else 0, inner


@dataclass(eq=False)
class Stage:
    """A tensor of the kernel and how it is computed."""

    name: str
    value: SSAValue
    op: Operation | None  # ComputeOp, ExternOp, ConstantOp; None for a placeholder
    root: list[IterVar] = field(default_factory=list)
    leaves: list[IterVar] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    tails: list[Split] = field(default_factory=list)
    """Bounds on two root axes read as one split axis (outer * |inner| + inner < the parent's
    extent): an rfactor stage of a reduction whose split factor does not divide it skips the
    tail's missing iterations by these instead of padding them with the identity (a select
    per element, which no vector loop can take)."""
    attach: str = "root"  # "root" | "inline" | "at"
    attach_stage: Stage | None = None
    attach_var: IterVar | None = None
    attached_by: Operation | None = None
    is_output: bool = False
    arg_index: int | None = None
    scope: str | None = None
    """The memory scope of the stage's buffer (te.set_scope, te.cache_read ... scope); None:
    the target's default."""
    double_buffer: Operation | None = None
    """The te.double_buffer that gave the stage two alternating buffers, if any."""

    @property
    def compute(self) -> ComputeOp | None:
        return self.op if isinstance(self.op, ComputeOp) else None

    @property
    def is_placeholder(self) -> bool:
        return self.op is None

    @property
    def shape(self) -> tuple[int, ...]:
        t = self.value.type
        assert isinstance(t, TensorType)
        return tuple(t.get_shape())

    @property
    def spatial_root(self) -> list[IterVar]:
        return [v for v in self.root if not v.reduce]

    @property
    def reduce_root(self) -> list[IterVar]:
        return [v for v in self.root if v.reduce]

    def all_vars(self) -> list[IterVar]:
        seen: list[IterVar] = list(self.root)
        for rel in self.relations:
            for v in (rel.outer, rel.inner) if isinstance(rel, Split) else (rel.fused,):
                if v not in seen:
                    seen.append(v)
        return seen

    def find(self, name: str) -> IterVar | None:
        for v in self.all_vars():
            if v.name == name:
                return v
        return None

    def derive(
        self,
        vals: dict[IterVar, T],
        ext: dict[IterVar, int],
        combine: Callable[[T, T, int], T],
        separate: Callable[[T, int], tuple[T, T]],
    ) -> list[IterVar]:
        """Give `vals` every axis that follows from the known ones through the splits and tails
        (parent = combine(outer, inner, |inner|)) and fuses ((outer, inner) =
        separate(fused, |inner|)), in any arithmetic (index ops of a loop body, integers of a
        layout check); returns the new axes."""
        new: list[IterVar] = []
        changed = True
        while changed:
            changed = False
            for rel in [*self.relations, *self.tails]:
                if isinstance(rel, Split):
                    if rel.parent in vals or rel.outer not in vals or rel.inner not in vals:
                        continue
                    vals[rel.parent] = combine(vals[rel.outer], vals[rel.inner], ext[rel.inner])
                    new.append(rel.parent)
                elif rel.fused in vals and rel.outer not in vals:
                    vals[rel.outer], vals[rel.inner] = separate(vals[rel.fused], ext[rel.inner])
                    new.extend([rel.outer, rel.inner])
                else:
                    continue
                changed = True
        return new

    def leaf_extents(self, root_extents: dict[IterVar, int] | None = None) -> dict[IterVar, int]:
        """Extents of every axis, from the root extents (default: the nominal ones)."""
        ext = {v: (root_extents or {}).get(v, v.extent) for v in self.root}
        for rel in self.relations:
            if isinstance(rel, Split):
                outer, inner = split_extents(ext[rel.parent], rel.factor, rel.nparts)
                ext[rel.outer], ext[rel.inner] = outer, inner
            else:
                ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
        return ext


def placeholder_name(index: int) -> str:
    return f"arg{index}"


def touches_reduce(rel: Relation) -> bool:
    """Whether a relation rewrites a reduction axis."""
    return (rel.parent if isinstance(rel, Split) else rel.fused).reduce
