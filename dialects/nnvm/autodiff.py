"""The contract between graph ops and the `gradient` pass: each op class owns its
vector-Jacobian product (`NNVMOp.vjp`), written against the small builder interface below.

`vjp(g, grads)` receives the cotangent of each result (a value of the result's type; zeros where a
result is unused) and returns one cotangent per operand, or None where the operand is not
differentiable (integer indices, predicates, shapes) or not needed (`g.needs(k)` is False). The
op's own operands and results are the forward values: a VJP reads them, it never recomputes them.
The builder emits ops after the forward pass; it never mutates the forward graph. The pass
(passes/gradient.py) implements the interface, accumulates fan-out and reports every op on a path
to the loss whose class has no VJP, by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from xdsl.ir import SSAValue

RECOMPUTE = "nnvm.recompute"
"""Marks an op the backward pass recomputes (checkpointing): CSE must not merge it with the
forward op it copies, or the saving is gone; fuse carries the mark onto the kernel call."""


class NoGradient(Exception):
    """An op (or one configuration of it) that has no vector-Jacobian product; the message says
    which and why."""


class VJPBuilder(Protocol):
    """What a VJP may do: emit graph ops by name and ask what is needed."""

    def op(self, name: str, *operands: SSAValue, **props: object) -> SSAValue:
        """Emit `nnvm.<name>` (result types inferred) and return its only result."""
        ...

    def ops(self, name: str, *operands: SSAValue, **props: object) -> Sequence[SSAValue]:
        """As `op`, for ops with several results."""
        ...

    def scalar(self, value: float, like: SSAValue) -> SSAValue:
        """A rank-0 constant of `like`'s element type (it broadcasts against anything)."""
        ...

    def constant(self, value: object, like: SSAValue) -> SSAValue:
        """A constant array (numpy-convertible) in `like`'s element type."""
        ...

    def sum_to(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`value` summed over the axes numpy broadcasting added or stretched to reach its shape
        from `shape` (the adjoint of broadcasting), reshaped to `shape`."""
        ...

    def needs(self, operand: int) -> bool:
        """Whether operand `operand` of the op being differentiated needs a cotangent."""
        ...


def shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(value.type.get_shape())  # type: ignore[attr-defined]
