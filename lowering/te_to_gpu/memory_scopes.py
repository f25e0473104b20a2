"""Shared and local stages of a GPU kernel (`te.cache_read ... scope "shared" | "local"`).

A shared stage computed at a loop under a blockIdx-bound axis holds the region the whole block
reads per iteration of that loop: its region is inferred with the thread-bound loops relaxed over
their extents, so it depends only on block indices and serial loops. Its buffer is a
`memref.alloca` in memory space 3 (WORKGROUP; xDSL's gpu dialect has no address-space attribute
or workgroup attribution, so this integer space is ours, numbered as NVVM numbers shared
memory); the OpenCL printer makes it a `__local` array and convert-gpu-to-llvm an `addrspace(3)`
global. The block's threads copy it together (thread t copies elements t, t + threads, ...;
elements past the tensor's edge are skipped) between two `gpu.barrier`s: the one before keeps
the previous iteration's readers from seeing the buffer overwritten, the one after makes the
copy visible. A local stage is the thread's private buffer (the emitter's per-thread scratch)."""

from __future__ import annotations

import math

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.schedule import CacheReadOp
from nnvm.dialects.te.stage_tree import IterVar, Split, Stage
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.te_to_loops.bounds import (
    DimRegion,
    Form,
    Linear,
    formula_accesses,
    infer_region,
    root_forms,
)
from nnvm.lowering.te_to_loops.compute_at import attached_region, materialize
from nnvm.lowering.te_to_loops.emitter import (
    ALIGNMENT,
    INDEX,
    Constraint,
    Nest,
    Scope,
    Val,
    View,
    hint,
)
from nnvm.lowering.te_to_loops.loop_bodies import emit_update
from nnvm.lowering.te_to_loops.loop_nests import LoopNestEmitter
from nnvm.support.diagnostics import DiagnosticError

WORKGROUP_SPACE = 3
"""The memref memory space of a block's shared buffer (NVVM's shared address space)."""
WORKGROUP = IntegerAttr(WORKGROUP_SPACE, i64)
MAX_SHARED_BYTES = 48 * 1024
"""Shared memory per block without opt-in (every CUDA GPU; OpenCL's guaranteed minimum is 32
KiB, PoCL gives more): the limit when the pass runs without a target."""
SCOPES = ("global", "shared", "local")


def entry_alloca(
    scope: Scope, elt: Attribute, shape: list[int], space: IntegerAttr | None, name: str
) -> SSAValue:
    """A buffer at the top of the scope's alloca block, which lower-te-to-gpu clones into each
    kernel it outlines: the thread's own, or (`space` WORKGROUP) the block's."""
    if space is None:
        alloca = memref.AllocaOp.get(elt, ALIGNMENT, shape)
    else:
        alloca = memref.AllocaOp.get(elt, ALIGNMENT, shape, memory_space=space)
    alloca.results[0].name_hint = hint(name)
    first = scope.alloca_block.first_op
    if first is None:
        scope.alloca_block.add_op(alloca)
    else:
        scope.alloca_block.insert_op_before(alloca, first)
    return alloca.results[0]


def scoped_stages(state: ScheduleState) -> dict[str, tuple[str, CacheReadOp]]:
    """Stage name -> (scope, its cache_read) for every cache_read with a scope; a shared or
    local stage must be computed at a loop (a located error otherwise)."""
    found: dict[str, tuple[str, CacheReadOp]] = {}
    for sched in state.schedule_ops:
        for prim in sched.primitives:
            if isinstance(prim, CacheReadOp) and prim.scope_name is not None:
                found[prim.result.data] = (prim.scope_name, prim)
    for name, (scope, prim) in found.items():
        if scope not in SCOPES:
            raise DiagnosticError(
                prim,
                f"te.cache_read: unknown memory scope '{scope}' (GPU kernels have "
                f"{', '.join(SCOPES)})",
            )
        stage = state.by_name.get(name)
        if scope != "global" and stage is not None and stage.attach != "at":
            where = "a loop under a blockIdx-bound axis" if scope == "shared" else "a thread's loop"
            raise DiagnosticError(
                prim,
                f"te.cache_read: the {scope} stage '{name}' must be computed at {where} "
                "(te.compute_at); computed at the root it would be a global buffer",
            )
    return found


def _expand(form: Linear, forms: dict[SSAValue, Linear]) -> Linear:
    """`form` with each SSA offset that has a known linear form replaced by it."""
    out = Linear({}, form.const)
    for key, coef in form.terms.items():
        sub = forms.get(key) if isinstance(key, SSAValue) else None
        out = out.add((Linear.of(key) if sub is None else sub).scale(coef))
    return out


def _under(stage: Stage, kind: str) -> bool:
    """Whether a loop bound to `kind` ('blockIdx' | 'threadIdx') encloses the point `stage` is
    computed at (the loops of its consumers up to it; a bound loop of extent 1 emits no
    index, so the emission's depth cannot tell)."""
    consumer, var = stage.attach_stage, stage.attach_var
    while consumer is not None and var is not None:
        leaves = consumer.leaves
        k = leaves.index(var) if var in leaves else len(leaves) - 1
        if any((v.annotation or "").startswith(f"bind({kind}.") for v in leaves[: k + 1]):
            return True
        if consumer.attach != "at":
            return False
        consumer, var = consumer.attach_stage, consumer.attach_var
    return False


class ScopedStages(LoopNestEmitter):
    """Emission of shared and local stages (a mixin of the GPU kernel generator, which calls
    `init_scopes`, `start_kernel` per kernel and `enter_bound` / `leave_bound` around bound
    loops)."""

    def init_scopes(self, scopes: dict[str, tuple[str, CacheReadOp]], limit: int) -> None:
        self.scopes = scopes
        self.max_shared_bytes = limit
        self.barriers: dict[Operation, Operation] = {}
        """Each barrier emitted, by the primitive it synchronizes (the cache_read of a shared
        copy, the bind of a cross-thread reduction; for check_uniform)."""
        self.start_kernel()

    def start_kernel(self) -> None:
        self._masked: list[IterVar] = []
        self._thread_ext: dict[IterVar, int] = {}
        self._thread_dims: dict[str, int] = {}
        self._forms: dict[SSAValue, Linear] = {}
        self._known: dict[IterVar, Val] = {}
        self._ranges: dict[IterVar, int] = {}
        self._shared: dict[Stage, tuple[SSAValue, list[int]]] = {}
        self._double_after: set[Operation] = set()
        self.shared_bytes = 0

    def enter_bound(self, leaf: IterVar, where: tuple[str, str], extent: int, masked: bool) -> None:
        if where[0] == "blockIdx":
            return
        self._thread_ext[leaf] = extent
        self._thread_dims[where[1]] = extent
        if masked:
            self._masked.append(leaf)

    def leave_bound(self, leaf: IterVar, where: tuple[str, str], masked: bool) -> None:
        if where[0] == "blockIdx":
            return
        if masked:
            self._masked.remove(leaf)

    def emit_barrier(self, prim: Operation) -> Operation:
        """A `gpu.barrier`, recorded with the primitive it synchronizes (for check_uniform)."""
        barrier = self.add(gpu.BarrierOp())
        self.barriers[barrier] = prim
        return barrier

    def linear_thread_index(self, skip: str | None = None) -> tuple[SSAValue, int]:
        """The block's bound thread indices (all but dimension `skip`) as one index, x
        fastest, and how many values it takes (index 0 of 1 when there are none)."""
        index: SSAValue | None = None
        count = 1
        for d in "xyz":
            if d == skip or d not in self._thread_dims:
                continue
            t = self.add1(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum(d))))
            t.name_hint = f"tid_{d}"
            scaled = t if count == 1 else self.add1(arith.MuliOp(t, self.index(count)))
            index = scaled if index is None else self.add1(arith.AddiOp(index, scaled))
            count *= self._thread_dims[d]
        return (self.index(0) if index is None else index), count

    def shared_buffer(
        self, scope: Scope, elt: Attribute, shape: list[int], name: str, where: Operation, what: str
    ) -> SSAValue:
        """A workgroup buffer of the kernel, counted against the target's shared memory per
        block; over it, a located error at `where` that starts with `what`."""
        nbytes = math.prod(shape) * max(element_bits(elt) // 8, 1)
        self.shared_bytes += nbytes
        if self.shared_bytes > self.max_shared_bytes:
            raise DiagnosticError(
                where,
                f"{what}, {nbytes} bytes) brings this kernel's shared memory to "
                f"{self.shared_bytes} bytes, over the {self.max_shared_bytes} the target "
                "allows per block",
            )
        return entry_alloca(scope, elt, shape, WORKGROUP, name)

    def emit_attached(
        self,
        producer: Stage,
        nest: Nest,
        scope: Scope,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
    ) -> Scope:
        self._known.update(vals)
        self._ranges.update({v: nest.ext[v] for v in vals if v in nest.ext})
        kind, prim = self.scopes.get(producer.name, (None, None))
        if kind == "shared":
            assert prim is not None
            return self._emit_shared(prim, producer, nest, scope, leaves, k, vals)
        if kind == "local" and producer.double_buffer is not None:
            raise DiagnosticError(
                producer.double_buffer,
                f"te.double_buffer: the local stage '{producer.name}' is a thread's private "
                "buffer, which nothing else writes; only shared stages alternate two tiles",
            )
        if kind == "local" and not _under(producer, "threadIdx"):
            assert prim is not None
            raise DiagnosticError(
                prim,
                f"te.cache_read: the local stage '{producer.name}' is computed at a loop no "
                "threadIdx-bound axis encloses (a private buffer belongs to one thread)",
            )
        regions = self._regions(producer, nest, leaves, k, vals, {}, derived=True)
        region, view = attached_region(self, producer, nest, scope, leaves, k, vals)
        for r, (off, _, _) in zip(regions, region, strict=True):
            if off is not None and r.offset is not None and off not in self._forms:
                self._forms[off] = _expand(r.offset, self._forms)
        scope2 = scope.with_view(producer, view)
        self.emit_compute(producer, scope2, region)
        return scope2

    def _thread_dependent(self) -> set[IterVar]:
        """The thread-bound loops and every axis derived from one (through splits and fuses of
        any stage): what a block-wide region may not depend on."""
        found = set(self._thread_ext)
        changed = True
        while changed:
            changed = False
            for stage in self.state.stages:
                for rel in stage.relations:
                    if isinstance(rel, Split):
                        group = [rel.parent] if rel.outer in found or rel.inner in found else []
                    elif rel.fused in found or rel.outer in found or rel.inner in found:
                        group = [rel.fused, rel.outer, rel.inner]
                    else:
                        group = []
                    new = [v for v in group if v not in found]
                    if new:
                        found.update(new)
                        changed = True
        return found

    def _regions(
        self,
        producer: Stage,
        nest: Nest,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
        relax: dict[IterVar, int],
        derived: bool = False,
    ) -> list[DimRegion]:
        """The region of `producer` one iteration of `leaves[k]` reads, as linear forms over
        the loops outside (the consumer's offsets seen through to the loops that made them),
        with the loops in `relax` taken over their whole extent too. `derived`: axes derived
        from the known loops are atomic, as attached_region has them (so the forms line up
        with its offsets); else they stay sums of the loops, so relaxing a thread loop
        reaches through them."""
        consumer = nest.stage
        known = set(vals) if derived else {v for v in vals if v in consumer.leaves}
        forms_by_root = root_forms(consumer, nest.ext, known)
        args: list[Form] = []
        for d, v in enumerate(consumer.spatial_root):
            f = forms_by_root.get(v)
            off = nest.offsets[d]
            if f is not None and off is not None:
                f = _expand(Linear.of(off), self._forms).add(f)
            args.append(f)
        for v in consumer.reduce_root:
            args.append(forms_by_root.get(v))
        inlined = {
            s.value: s.compute
            for s in self.state.stages
            if s.attach == "inline" and s.compute is not None
        }
        accesses: list[list[Form]] = []
        extents = {**self._ranges, **nest.ext}
        formula_accesses(nest.compute.block, args, producer.value, inlined, accesses, extents)  # type: ignore[arg-type]
        inner = {v: nest.ext[v] for v in leaves[k + 1 :]}
        inner.update(relax)
        outer = {**self._ranges, **{v: nest.ext[v] for v in vals if v in nest.ext}}
        return infer_region(accesses, producer.shape, inner, outer)

    def _emit_shared(
        self,
        prim: CacheReadOp,
        producer: Stage,
        nest: Nest,
        scope: Scope,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
    ) -> Scope:
        name = producer.name
        if not _under(producer, "blockIdx"):
            raise DiagnosticError(
                prim,
                f"te.cache_read: the shared stage '{name}' is computed at a loop no "
                "blockIdx-bound axis encloses (a shared buffer belongs to one block)",
            )
        if self._masked:
            raise DiagnosticError(
                prim,
                f"te.cache_read: the shared stage '{name}' is computed under the masked thread "
                f"axis '{self._masked[0].name}': the threads past its tail would skip the "
                "copy's barriers (make the thread axis divide its extent)",
            )
        compute = producer.compute
        if compute is None or producer.leaves != producer.root or compute.reduce_kind:
            raise DiagnosticError(
                prim,
                f"te.cache_read: the shared stage '{name}' is copied by the block's threads "
                "together; its own axes cannot be scheduled",
            )
        regions = self._regions(producer, nest, leaves, k, vals, dict(self._thread_ext))
        per_thread = self._thread_dependent()
        known = {**self._known, **vals}
        for r in regions:
            for key in r.offset.terms if r.offset is not None else {}:
                if not isinstance(key, IterVar) or key in per_thread or key not in known:
                    raise DiagnosticError(
                        prim,
                        f"te.cache_read: the region of the shared stage '{name}' that a block "
                        "reads could not be inferred (its readers' indices are not linear in "
                        "the loops)",
                    )
        shape = [r.extent for r in regions]
        slot_iv = self._double_buffer_loop(producer, leaves[k], vals)
        if slot_iv is not None:
            shape = [2 * shape[0], *shape[1:]]  # two tiles, one above the other
        elt = producer.value.type.element_type  # type: ignore[attr-defined]
        found = self._shared.get(producer)
        if found is not None and found[1] == shape:
            buf = found[0]
        else:
            what = f"te.cache_read: the shared stage '{name}' ({'x'.join(map(str, shape))} {elt}"
            buf = self.shared_buffer(scope, elt, shape, name, prim, what)
            self._shared[producer] = (buf, shape)
        last = self.block.last_op
        if slot_iv is None and not isinstance(last, gpu.BarrierOp):
            self.emit_barrier(prim)
        offsets = [
            None if r.offset is None else materialize(self, r.offset, known) for r in regions
        ]
        view = View(buf, offsets)
        if slot_iv is not None:
            # iteration i fills tile i % 2, which iteration i - 1 did not read: every thread
            # passed iteration i - 1's barrier after its copy, so it is done with iteration
            # i - 2's reads. Only the loop's first iteration waits (a loop around it may have
            # read that tile last); copies in a row share the barrier after the last of them.
            if isinstance(last, gpu.BarrierOp) and last in self._double_after:
                self.barriers.pop(last, None)
                self.block.erase_op(last)
            else:
                first = self.add1(arith.CmpiOp(slot_iv, self.index(0), "eq"))
                self.emit_if(first, lambda: self.emit_barrier(prim))
            slot = self.add1(arith.RemUIOp(slot_iv, self.index(2)))
            shift = self.add1(arith.MuliOp(slot, self.index(shape[0] // 2)))
            top = self.index(0) if offsets[0] is None else offsets[0]
            view = View(buf, [self.add1(arith.SubiOp(top, shift)), *offsets[1:]])
        self._copy_together(producer, scope, regions, offsets, view)
        after = self.emit_barrier(prim)
        if slot_iv is not None:
            self._double_after.add(after)
        return scope.with_view(producer, view)

    def _double_buffer_loop(
        self, producer: Stage, leaf: IterVar, vals: dict[IterVar, Val]
    ) -> SSAValue | None:
        """The iteration value of the serial loop a double-buffered shared stage alternates
        over (its compute_at loop); None when the stage is not double-buffered."""
        prim = producer.double_buffer
        if prim is None:
            return None
        v = vals.get(leaf)
        if (leaf.annotation or "").startswith("bind(") or v is None or v.kind != "u":
            raise DiagnosticError(
                prim,
                f"te.double_buffer: '{producer.name}' is computed at '{leaf.name}', which is "
                "not a serial loop (its two tiles alternate between that loop's iterations)",
            )
        return v.ssa

    def _copy_together(
        self,
        producer: Stage,
        scope: Scope,
        regions: list[DimRegion],
        offsets: list[SSAValue | None],
        view: View,
    ) -> None:
        """`for e in [tid, size) step threads`: element e of the region (row-major; the
        region starts at `offsets` in the tensor) copied by the producer's formula into
        `view`, unless it lies past the tensor's edge."""
        compute = producer.compute
        assert compute is not None
        shape = [r.extent for r in regions]
        tid, stride = self.linear_thread_index()
        body = Block(arg_types=[INDEX])
        e = body.args[0]
        e.name_hint = "copy"
        roots = producer.spatial_root
        with self.at(body):
            vals: dict[IterVar, Val] = {}
            rest = Val(e)
            for d in reversed(range(len(shape))):  # e >= 0: unsigned division
                if d == 0:
                    vals[roots[d]] = rest
                else:
                    size = self.index(shape[d])
                    vals[roots[d]] = Val(self.add1(arith.RemUIOp(rest.ssa, size)))
                    rest = Val(self.add1(arith.DivUIOp(rest.ssa, size)))
            constraints = []
            for d, r in enumerate(regions):
                off = offsets[d]
                if r.guard_high:
                    constraints.append(Constraint(roots[d], off, producer.shape[d]))
                if r.guard_low:
                    constraints.append(Constraint(roots[d], off, producer.shape[d], lower=True))
            ext = {v: shape[d] for d, v in enumerate(roots)}
            pnest = Nest(
                producer, compute, ext, list(offsets), constraints, view, compute.element_type
            )
            self.guarded(constraints, vals, lambda: emit_update(self, pnest, scope, vals))
            self.add(scf.YieldOp())
        total = math.prod(shape)
        self.add(scf.ForOp(tid, self.index(total), self.index(max(stride, 1)), [], Region(body)))


def check_uniform(kernel: gpu.FuncOp, barriers: dict[Operation, Operation]) -> None:
    """Every barrier of `kernel` is reached by all of its block's threads: no `scf.if` or
    `scf.for` around it whose condition or bounds depend on the thread index (or on memory).
    A located error at the cache_read whose copy the barrier guards (or the bind of a
    cross-thread reduction) otherwise."""
    varying: set[SSAValue] = set()
    for op in kernel.walk():
        if isinstance(op, gpu.ThreadIdOp | gpu.LaneIdOp | memref.LoadOp) or any(
            v in varying for v in op.operands
        ):
            varying.update(op.results)
        if isinstance(op, scf.ForOp) and any(v in varying for v in (op.lb, op.ub, op.step)):
            varying.update(op.body.block.args)
    for barrier, prim in barriers.items():
        if barrier.parent_op() is None or not kernel.is_ancestor(barrier):
            continue
        parent = barrier.parent_op()
        while parent is not None and parent is not kernel:
            if isinstance(parent, scf.IfOp) and parent.cond in varying:
                what = "a condition"
            elif isinstance(parent, scf.ForOp) and any(
                v in varying for v in (parent.lb, parent.ub, parent.step)
            ):
                what = "a loop bound"
            else:
                parent = parent.parent_op()
                continue
            if isinstance(prim, CacheReadOp):
                raise DiagnosticError(
                    prim,
                    f"te.cache_read: the barrier of the shared stage '{prim.result.data}' is "
                    f"under {what} that differs between the block's threads, so some threads "
                    "would not reach it (compute the stage at a loop whose bounds every thread "
                    "shares)",
                )
            raise DiagnosticError(
                prim,
                f"te.bind: the barriers of the cross-thread reduction are under {what} that "
                "differs between the block's threads, so some threads would not reach them "
                "(bind the thread axes outside it without a masked tail)",
            )


def _reads_shared(ops: list[Operation]) -> bool:
    for op in ops:
        for inner in op.walk():
            if isinstance(inner, memref.LoadOp):
                space = inner.memref.type.memory_space  # type: ignore[attr-defined]
                if space == WORKGROUP:
                    return True
    return False


def merge_barriers(kernel: gpu.FuncOp) -> None:
    """Drop a barrier between two others of the same block when no shared buffer is read
    between its neighbours (two shared copies in a row: the barrier before the first already
    keeps the last step's readers from the second's stores, the one after the second makes
    both visible)."""
    for op in list(kernel.walk()):
        for region in op.regions:
            for block in region.blocks:
                barriers = [o for o in block.ops if isinstance(o, gpu.BarrierOp)]
                for before, middle, after in zip(
                    barriers, barriers[1:], barriers[2:], strict=False
                ):
                    if middle.parent is None or before.parent is None:
                        continue
                    ops = list(block.ops)
                    i, j, k = ops.index(before), ops.index(middle), ops.index(after)
                    if not _reads_shared(ops[i + 1 : j]) and not _reads_shared(ops[j + 1 : k]):
                        block.erase_op(middle)
