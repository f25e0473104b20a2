"""Cross-thread reductions: a reduction axis bound to a thread index (`te.bind "S" k.i to
"threadIdx.x"`, TVM's allreduce) lowers to one reduction per block.

Each thread accumulates its share of the reduction in a private register (the loops inside the
bound axis: thread t takes the elements whose bound index is t), writes it to a shared buffer
of one slot per thread, and the block combines the slots as a tree in shared memory (halving
strides, a barrier after each step); thread 0 then combines the block's result into the
stage's accumulator, which every thread initialised before the first barrier. Threads past a
masked tail contribute the reduction's identity. A spatial axis inside the bound reduction
would need one tree per element: a located error (reorder the spatial axes outside it)."""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from nnvm.dialects.te import exprs
from nnvm.dialects.te.stage_tree import IterVar
from nnvm.lowering.te_to_gpu.memory_scopes import ScopedStages, entry_alloca
from nnvm.lowering.te_to_loops.emitter import Nest, Scope, Val, View
from nnvm.lowering.te_to_loops.loop_bodies import buffer_indices, real_indices
from nnvm.support.diagnostics import DiagnosticError


class CrossThreadReductions(ScopedStages):
    """Cross-thread reductions of the GPU kernel generator, on the shared-memory machinery of
    ScopedStages (its barriers, shared buffers and bound thread indices)."""

    def emit_cross_thread(
        self,
        leaf: IterVar,
        dim: str,
        tid: SSAValue,
        static: int,
        ub: SSAValue | None,
        body: Callable[[Val], None],
        nest: Nest,
        scope: Scope,
        vals: dict[IterVar, Val],
    ) -> None:
        where = leaf.annotated_by
        kind = nest.compute.reduce_kind
        leaves = list(nest.stage.leaves)
        inside = leaves[leaves.index(leaf) + 1 :]
        spatial = [v for v in inside if not v.reduce and nest.ext.get(v, 1) > 1]
        if kind is None or spatial:
            axis = spatial[0].name if spatial else ""
            raise DiagnosticError(
                where,
                f"te.bind: the reduction axis '{leaf.name}' is bound to a thread index, but "
                + (
                    f"the spatial axis '{axis}' is inside it (reorder the spatial axes outside "
                    "the bound reduction axis)"
                    if spatial
                    else "its stage is not a reduction"
                ),
            )
        elt = nest.elt
        rank = len(nest.stage.spatial_root)
        zeros = [self.cval(0)] * rank
        ident = self.add1(exprs.constant(exprs.identity_value(kind, elt), elt))

        # the thread's partial result, over the loops inside the bound axis
        private = entry_alloca(scope, elt, [1] * rank, None, f"{leaf.name}.part")
        self.store(private, zeros, Val(ident))
        saved = nest.view
        nest.view = View(private, [r.ssa for r in real_indices(self, nest, vals)])
        try:
            if ub is None:
                body(Val(tid))
            else:
                self.emit_if(self.add1(arith.CmpiOp(tid, ub, "slt")), lambda: body(Val(tid)))
        finally:
            nest.view = saved

        # one slot per thread of the block: the other thread dimensions select a row
        row, rows = self.linear_thread_index(skip=dim)
        what = f"te.bind: the cross-thread reduction over '{leaf.name}' ({rows}x{static} {elt}"
        slots = self.shared_buffer(scope, elt, [rows, static], f"{leaf.name}.red", where, what)
        r = Val(row)
        mine = [r, Val(tid)]
        self.emit_barrier(where)  # the slots' last readers (an enclosing loop's) are done
        self.store(slots, mine, self.load(private, zeros))
        self.emit_barrier(where)
        stride = 1 << max(math.ceil(math.log2(static)) - 1, 0) if static > 1 else 0
        while stride >= 1:
            active = self.add1(arith.CmpiOp(tid, self.index(stride), "slt"))
            partner = self.add1(arith.AddiOp(tid, self.index(stride)))
            if 2 * stride > static:  # the upper half is incomplete
                inside_ = self.add1(arith.CmpiOp(partner, self.index(static), "slt"))
                active = self.add1(arith.AndIOp(active, inside_))

            def step(partner: SSAValue = partner) -> None:
                a = self.load(slots, mine)
                b = self.load(slots, [r, Val(partner)])
                self.store(slots, mine, Val(self.add1(exprs.combine(kind, a.ssa, b.ssa))))

            self.emit_if(active, step)
            self.emit_barrier(where)
            stride //= 2

        def finish() -> None:
            _, buf = buffer_indices(self, nest, vals)
            acc = self.load(nest.view.buffer, buf)
            total = self.load(slots, [r, self.cval(0)])
            combined = self.add1(exprs.combine(kind, acc.ssa, total.ssa))
            self.store(nest.view.buffer, buf, Val(combined))

        self.emit_if(self.add1(arith.CmpiOp(tid, self.index(0), "eq")), finish)
