"""Op-pattern kinds: how an op may fuse with its neighbours (TVM's TOpPattern, as a trait)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from xdsl.ir import Operation
from xdsl.traits import OpTrait


class OpPatternKind(IntEnum):
    """Ordered like TVM's: a larger kind is harder to fuse into."""

    ELEMWISE = 0
    """Each output element depends on the input element at the same index."""
    BROADCAST = 1
    """Like elemwise, but inputs may be broadcast along some axes."""
    INJECTIVE = 2
    """Each output element reads one input element at some computed index."""
    COMM_REDUCE = 3
    """A commutative reduction over some axes."""
    OUT_ELEMWISE_FUSABLE = 4
    """A complex op (conv2d, dense) whose output loop can absorb elementwise epilogues."""
    OPAQUE = 8
    """Not fusable at all."""

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")


@dataclass(frozen=True)
class OpPattern(OpTrait):
    """Attach a fusion pattern kind to an op class."""

    kind: OpPatternKind


def pattern_kind(op: Operation) -> OpPatternKind:
    """The fusion pattern kind of any op; ops without the trait are opaque."""
    trait = op.get_trait(OpPattern)
    return trait.kind if trait is not None else OpPatternKind.OPAQUE
