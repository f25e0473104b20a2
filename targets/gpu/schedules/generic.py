"""The GPU generic schedules: a root stage's spatial axes fused and split into blocks of
`block` threads (one output element per thread, a reduction a serial loop in it); a long
reduction into few outputs is spread over a block's threads (a row per block, combined as a tree
in shared memory)."""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import (
    BindOp,
    CacheWriteOp,
    ComputeAtOp,
    FuseOp,
    ReorderOp,
    SplitOp,
    VectorizeOp,
)
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler, Template

BLOCK = 256
"""Threads per block of the generic schedules."""
FEW_OUTPUTS = 2048
"""A reduction into fewer outputs than this (and whose innermost reduction axis has at least
two blocks' worth) splits each row over a block of threads: one thread per output would leave
most of a GPU idle (a softmax row, a global pool)."""


def bind(stage: str, axis: str, index: str) -> BindOp:
    """`te.bind "stage" axis to "index"`."""
    return BindOp.create(
        properties={
            "stage": StringAttr(stage),
            "axis": StringAttr(axis),
            "thread": StringAttr(index),
        }
    )


class GpuScheduler(KernelScheduler):
    """KernelScheduler's plan (inline, templates, then each remaining root stage) with GPU
    schedules: no vectors, no thread pool, bound block and thread indices."""

    def __init__(
        self,
        fn: func.FuncOp,
        templates: dict[str, Template],
        block: int = BLOCK,
        private: bool = True,
        shared: bool = True,
        lanes: int = 0,
        unroll_steps: bool = False,
    ):
        super().__init__(fn, templates=templates)
        self.block = block
        self.private = private
        """Reductions accumulate in a private register (a cache_write computed at the
        thread), not in their output buffer."""
        self.shared = shared
        """Templates may stage operand tiles in shared memory (else their register-only
        versions)."""
        self.vector_width = lanes
        """Vector lanes per thread of the injective schedule (0: one element per thread)."""
        self.unroll_steps = unroll_steps
        """Shared-tile templates unroll the loop over a step's tile (GpuTarget.unroll_steps)."""

    def flat(self, name: str, axes: list[str], extents: list[int]) -> str | None:
        """Fuse `axes` into one and spread it over blocks of `self.block` threads (the last
        block masked); returns the threadIdx.x axis. Nothing bound when there are no axes (a
        one-thread kernel): None."""
        if not axes:
            return None
        total = math.prod(extents)
        axis = axes[0]
        if len(axes) > 1:
            axis = f"{name}.flat"
            self.prims.append(FuseOp.make(name, axes, axis))
        if total <= self.block:
            self.prims.append(bind(name, axis, "threadIdx.x"))
            return axis
        outer, inner = f"{axis}.b", f"{axis}.t"
        self.prims.append(SplitOp.make(name, axis, self.block, None, outer, inner))
        self.prims.append(bind(name, outer, "blockIdx.x"))
        self.prims.append(bind(name, inner, "threadIdx.x"))
        return inner

    def injective(self, name: str, op: ComputeOp) -> None:
        """One element per thread; with `lanes` (and an innermost axis of at least two
        vectors), `lanes` neighbours along the innermost axis per thread as one vector (vector
        loads and stores; the axis' tail masked lane by lane; a loop body the lanes cannot
        run together, such as a transposed read, a loop of scalars)."""
        axes, shape = list(op.spatial_names), list(op.shape)
        if not self.vector_width or not axes or shape[-1] < 2 * self.vector_width:
            self.flat(name, axes, shape)
            return
        last, vec = axes[-1], f"{axes[-1]}.v"
        self.prims.append(SplitOp.make(name, last, self.vector_width, None, f"{last}.o", vec))
        chunks = -(-shape[-1] // self.vector_width)
        self.flat(name, [*axes[:-1], f"{last}.o"], [*shape[:-1], chunks])
        self.prims.append(VectorizeOp.make(name, vec))

    def reduction(self, name: str, op: ComputeOp) -> None:
        spatial, shape = list(op.spatial_names), list(op.shape)
        if math.prod(shape) < FEW_OUTPUTS and op.reduce_shape[-1] >= 2 * self.block:
            self.across_threads(name, op)
            return
        if not self.private or not spatial:
            self.flat(name, spatial, shape)
            return
        acc = f"{name}.acc"
        self.prims.append(CacheWriteOp.make(name, acc))
        thread = self.flat(name, spatial, shape)
        self.prims.append(ComputeAtOp.make(acc, name, thread))

    def across_threads(self, name: str, op: ComputeOp) -> None:
        """Row per block: the outputs (fused) on blockIdx.x, the innermost reduction axis split
        by the block size with its inner part bound to threadIdx.x, outside the rest of the
        reduction, so each thread accumulates a strided share of the row (neighbours read
        neighbouring elements) and the block combines the shares as a tree in shared memory
        (a cross-thread reduction: one kernel)."""
        k = op.reduce_names[-1]
        p = self.prims
        p.append(SplitOp.make(name, k, self.block, None, f"{k}.o", f"{k}.i"))
        spatial = list(op.spatial_names)
        row: list[str] = []
        if spatial:
            row = [spatial[0]]
            if len(spatial) > 1:
                row = [f"{name}.row"]
                p.append(FuseOp.make(name, spatial, row[0]))
            p.append(bind(name, row[0], "blockIdx.x"))
        rest = [*op.reduce_names[:-1], f"{k}.o"]
        p.append(ReorderOp.make(name, [*row, f"{k}.i", *rest]))
        p.append(bind(name, f"{k}.i", "threadIdx.x"))
