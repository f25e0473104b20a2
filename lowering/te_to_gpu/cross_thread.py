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

from xdsl.dialects import arith, gpu
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te import exprs
from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.stage_tree import IterVar
from nnvm.lowering.te_to_gpu.memory_scopes import WORKGROUP, entry_alloca
from nnvm.lowering.te_to_loops.emitter import Nest, Scope, Val, View
from nnvm.lowering.te_to_loops.loop_bodies import buffer_indices, real_indices
from nnvm.lowering.te_to_loops.loop_nests import LoopNestEmitter
from nnvm.support.diagnostics import DiagnosticError


class CrossThreadReductions(LoopNestEmitter):
    """A mixin of the GPU kernel generator (which owns `barriers`, `shared_bytes`,
    `max_shared_bytes` and the bound thread extents `_thread_dims`)."""

    barriers: dict[Operation, Operation]
    shared_bytes: int
    max_shared_bytes: int
    _thread_dims: dict[str, int]

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
        row: SSAValue | None = None
        rows = 1
        for d in "xyz":
            if d == dim or d not in self._thread_dims:
                continue
            t = self.add1(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(d))))
            scaled = t if rows == 1 else self.add1(arith.MuliOp(t, self.index(rows)))
            row = scaled if row is None else self.add1(arith.AddiOp(row, scaled))
            rows *= self._thread_dims[d]
        nbytes = rows * static * max(element_bits(elt) // 8, 1)
        self.shared_bytes += nbytes
        if self.shared_bytes > self.max_shared_bytes:
            raise DiagnosticError(
                where,
                f"te.bind: the cross-thread reduction over '{leaf.name}' needs {nbytes} bytes "
                f"of shared memory, bringing this kernel's to {self.shared_bytes}, over the "
                f"{self.max_shared_bytes} the target allows per block",
            )
        slots = entry_alloca(scope, elt, [rows, static], WORKGROUP, f"{leaf.name}.red")
        r = Val(self.index(0) if row is None else row)
        mine = [r, Val(tid)]
        self._barrier(where)  # the slots' last readers (an enclosing loop's) are done
        self.store(slots, mine, self.load(private, zeros))
        self._barrier(where)
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
            self._barrier(where)
            stride //= 2

        def finish() -> None:
            _, buf = buffer_indices(self, nest, vals)
            acc = self.load(nest.view.buffer, buf)
            total = self.load(slots, [r, self.cval(0)])
            combined = self.add1(exprs.combine(kind, acc.ssa, total.ssa))
            self.store(nest.view.buffer, buf, Val(combined))

        self.emit_if(self.add1(arith.CmpiOp(tid, self.index(0), "eq")), finish)

    def _barrier(self, where: Operation | None) -> None:
        self.barriers[self.add(gpu.BarrierOp())] = where  # type: ignore[assignment]
