"""Loop nests of a compute stage: its leaf loops outermost first (for, parallel, unrolled or
vectorized), the original axes recomputed inside them, tails and region boundaries guarded."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region, SSAValue

from nnvm.dialects.hint import PrefetchOp
from nnvm.dialects.te.analysis import depends_on
from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.ops import ReadOp
from nnvm.dialects.te.schedule import PrefetchOp as PrefetchPrimitive
from nnvm.dialects.te.stage_tree import IterVar, Split, Stage
from nnvm.lowering.te_to_loops.compute_at import AttachedRegion, attached_region
from nnvm.lowering.te_to_loops.emitter import (
    INDEX,
    Constraint,
    Nest,
    NotVectorizable,
    Scope,
    Val,
    hint,
)
from nnvm.lowering.te_to_loops.formulas import FormulaEval, view_indices
from nnvm.lowering.te_to_loops.loop_bodies import emit_init, emit_update, real_indices
from nnvm.lowering.te_to_loops.tensorize import TensorizeEmitter, intrinsic_name
from nnvm.support.diagnostics import DiagnosticError

GUARDED_UNROLL_LIMIT = 32
"""An unrolled loop whose bound is only known at run time (a split tail) is unrolled anyway,
each iteration guarded, up to this many iterations (a register tile's rows)."""


class LoopNestEmitter(TensorizeEmitter):
    """Emits the loop nest of one compute stage, with the stages computed at its loops inside."""

    version_computed_tiles = True
    """Emit a reduction computed at a loop with a tail twice, for a full tile and for the tail
    (`versioned`). Not on a GPU: the test would differ between a block's threads, which must
    all reach the barriers of its shared stages."""

    def emit_compute(self, stage: Stage, scope: Scope, region: AttachedRegion | None) -> None:
        """The nest of `stage`, over its whole shape or (computed at a consumer) over `region`.
        A split whose factor does not divide its axis, and a region that may cross the tensor's
        edge, become constraints: loop bounds where possible, else guards."""
        compute = stage.compute
        assert compute is not None
        spatial = stage.spatial_root
        actual = {v: (region[d][1] if region else v.extent) for d, v in enumerate(spatial)}
        ext = stage.leaf_extents(actual)
        offsets: list[SSAValue | None] = [r[0] for r in region] if region else [None] * len(spatial)
        constraints: list[Constraint] = []
        for rel in stage.relations:
            if isinstance(rel, Split) and ext[rel.outer] * ext[rel.inner] > ext[rel.parent]:
                constraints.append(Constraint(rel.parent, None, ext[rel.parent]))
        for tail in stage.tails:
            constraints.append(Constraint(tail.parent, None, tail.parent.extent))
        if region:
            for d, (off, _, (low, high)) in enumerate(region):
                full = stage.shape[d]
                if high:
                    constraints.append(Constraint(spatial[d], off, full))
                if low:
                    constraints.append(Constraint(spatial[d], off, full, lower=True))
        attached: dict[IterVar, list[Stage]] = {}
        for other in self.state.stages:
            if other.attach == "at" and other.attach_stage is stage:
                assert other.attach_var is not None
                attached.setdefault(other.attach_var, []).append(other)
        nest = Nest(
            stage,
            compute,
            ext,
            offsets,
            constraints,
            scope.views[stage],
            compute.element_type,
            attached,
        )
        leaves = list(stage.leaves)
        first_reduce = next((k for k, v in enumerate(leaves) if v.reduce), None)
        tails = _region_tails(nest, leaves, first_reduce) if self.version_computed_tiles else []
        if not tails:
            self.emit_level(nest, scope, leaves, 0, {}, frozenset(), "main", first_reduce)
            return
        # Inside the consumer's version of a tile starting where this region starts (see
        # `versioned`), whether the region is whole is known: the tile's depth loop then holds
        # no test for a tail, whatever LLVM folds. Not versioned here otherwise: the versions
        # would meet again before the consumer's copy-out, with the register assignment
        # problem `versioned` avoids (EfficientNet's 1x1 conv to 9 blocks in pairs: 0.36 ->
        # 0.45 ms).
        known = {id(c): self._known_full(c, nest.ext[c.var]) for c in tails}
        whole = frozenset(i for i, full in known.items() if full)
        with self._in_tail(i for i, full in known.items() if full is False):
            self.emit_level(nest, scope, leaves, 0, {}, whole, "main", first_reduce)

    def emit_level(
        self,
        nest: Nest,
        scope: Scope,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        mode: str,
        first_reduce: int | None,
    ) -> None:
        """The loop of `leaves[k]` and everything inside it ("init" mode: the accumulator's).

        A reduction's accumulator is initialised just outside its first reduction loop, over
        the spatial loops inside it. A split tail bounds the inner loop by `min(factor, extent -
        outer * factor)` once its outer value is known; when the loops are ordered so that this
        is impossible, the body is guarded instead."""
        if k == len(leaves):
            if mode == "main":
                emit_update(self, nest, scope, vals)
            else:
                emit_init(self, nest, vals)
            return
        leaf = leaves[k]
        if mode == "main" and first_reduce == k and nest.compute.reduce_kind is not None:
            init_leaves = [v for v in leaves[k:] if not v.reduce]
            self.emit_level(nest, scope, init_leaves, 0, dict(vals), handled, "init", None)
        static = nest.ext[leaf]
        bounds: list[SSAValue] = []
        covered: set[int] = set()
        for c in nest.constraints:
            if id(c) in handled or c.lower:
                continue
            ub = self._upper_bound(nest, c, leaf, vals)
            if ub is not None:
                bounds.append(ub)
                covered.add(id(c))
        ub_dyn: SSAValue | None = None
        if bounds:
            ub_dyn = self.index(static)
            for b in bounds:
                ub_dyn = self.add1(arith.MinSIOp(ub_dyn, b))
        handled2 = handled | covered

        def inner(value: Val, handled_now: frozenset[int] = handled2) -> None:
            vals2 = dict(vals)
            vals2[leaf] = value
            new = [leaf, *self.derive(nest, vals2)]
            guards = [c for c in nest.constraints if id(c) not in handled_now and c.var in new]
            handled3 = handled_now | {id(c) for c in guards}

            def rest(done: frozenset[int] = handled3) -> None:
                scope2 = scope
                if mode == "main":
                    for p in nest.attached.get(leaf, []):
                        scope2 = self.emit_attached(p, nest, scope2, leaves, k, vals2)
                    if leaf.prefetch:
                        self.emit_prefetches(nest, scope2, leaves, k, vals2)
                self.emit_level(nest, scope2, leaves, k + 1, vals2, done, mode, first_reduce)

            self.guarded(guards, vals2, lambda: self.versioned(nest, leaf, vals2, handled3, rest))

        ann = leaf.annotation
        last = k == len(leaves) - 1
        if intrinsic_name(ann) is not None:
            if mode == "main":
                self.emit_tensorized(nest, scope, leaves, k, vals)
                return
            ann = "vectorize"  # the accumulator's initialisation over the tile
        if static == 1 and ub_dyn is None and ann != "parallel":
            inner(self.cval(0))
        elif ann == "vectorize" and last:
            # a tail of a tensor axis may run as one masked vector: its missing lanes are
            # positions past the tensor. Not one of a reduction's rfactor lanes (a reduce
            # axis bounds it), which the stage after combines.
            masked = all(not c.var.reduce for c in nest.constraints if id(c) in covered)
            self.emit_vector_leaf(nest, leaf, static, ub_dyn, vals, handled2, inner, masked)
        elif ann == "unroll" and ub_dyn is None and static <= 512:
            for c in range(static):
                inner(self.cval(c))
        elif ann == "unroll" and static <= GUARDED_UNROLL_LIMIT:
            # a tile that may be at a tail: still unrolled, so the tile's buffers keep constant
            # indices (and stay in registers) on every tile; a full one runs unguarded, the
            # tail with each iteration under `c < bound`
            assert ub_dyn is not None
            bound = ub_dyn

            def unguarded() -> None:
                for c in range(static):
                    inner(self.cval(c))

            def guarded_each() -> None:
                for c in range(static):
                    test = self.add1(arith.CmpiOp(self.index(c), bound, "slt"))
                    self.emit_if(test, lambda c=c: inner(self.cval(c)))

            if covered & self.known_tails:  # in a versioned loop's tail branch: not full
                guarded_each()
            else:
                is_full = self.add1(arith.CmpiOp(ub_dyn, self.index(static), "eq"))
                self.emit_if(is_full, unguarded, guarded_each)
        elif ann is not None and ann.startswith("bind(") and mode == "main":
            self.emit_bound(leaf, static, ub_dyn, inner, nest, scope, vals)
        elif ann == "parallel" and mode == "main" and not scope.in_parallel:
            self.emit_parallel(
                leaf,
                ub_dyn or self.index(static),
                scope,
                nest,
                leaves,
                k,
                vals,
                handled2,
                first_reduce,
            )
        else:
            self.emit_for(
                leaf, self.index(0), ub_dyn or self.index(static), 1, lambda iv: inner(Val(iv))
            )

    def emit_bound(
        self,
        leaf: IterVar,
        static: int,
        ub: SSAValue | None,
        body: Callable[[Val], None],
        nest: Nest,
        scope: Scope,
        vals: dict[IterVar, Val],
    ) -> None:
        """A loop bound to a GPU thread index: a serial loop here; the GPU lowering (which
        alone accepts `te.bind`) replaces it by the thread's index under a bound check (a
        bound reduction axis by a cross-thread reduction)."""
        self.emit_for(leaf, self.index(0), ub or self.index(static), 1, lambda iv: body(Val(iv)))

    def emit_parallel(
        self,
        leaf: IterVar,
        ub: SSAValue,
        scope: Scope,
        nest: Nest,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        first_reduce: int | None,
    ) -> None:
        """`scf.parallel` over `leaf`; stages computed inside it get their buffers in its body,
        one per thread."""
        block = Block(arg_types=[INDEX])
        block.args[0].name_hint = hint(leaf.name)
        inner_scope = Scope(scope.views, block, True)
        with self.at(block):
            vals2 = dict(vals)
            vals2[leaf] = Val(block.args[0])
            new = [leaf, *self.derive(nest, vals2)]
            guards = [c for c in nest.constraints if id(c) not in handled and c.var in new]
            handled3 = handled | {id(c) for c in guards}

            def rest() -> None:
                scope2 = inner_scope
                for p in nest.attached.get(leaf, []):
                    scope2 = self.emit_attached(p, nest, scope2, leaves, k, vals2)
                self.emit_level(nest, scope2, leaves, k + 1, vals2, handled3, "main", first_reduce)

            self.guarded(guards, vals2, rest)
            for mem in inner_scope.heap:
                self.add(memref.DeallocOp.get(mem))
            self.add(scf.ReduceOp())
        self.add(scf.ParallelOp([self.index(0)], [ub], [self.index(1)], Region(block)))

    @contextmanager
    def _in_tail(self, ids: Iterable[int]) -> Iterator[None]:
        """While a tail is emitted: the constraints `ids` are known to cut the tile short."""
        new = set(ids) - self.known_tails
        self.known_tails.update(new)
        try:
            yield
        finally:
            self.known_tails.difference_update(new)

    @contextmanager
    def _knowing(self, fact: tuple[SSAValue, int, int] | None, full: bool) -> Iterator[None]:
        """While a versioned tile's branch is emitted: whether the tile of `size` starting at
        `value * size` fits below `upper` (fact = (value, size, upper))."""
        if fact is None:
            yield
            return
        self.tile_facts[fact] = full
        try:
            yield
        finally:
            del self.tile_facts[fact]

    def _known_full(self, c: Constraint, size: int) -> bool | None:
        """Whether region edge `c` (offset + value < upper, the value below `size`) is known to
        hold for the whole region: its offset is `x * size` for a tile the enclosing version
        decided on (the same test, so the same answer); None when not known."""
        off = c.offset
        if off is None or not isinstance(off.owner, arith.MuliOp):
            return None
        x, factor = off.owner.lhs, self.const_of(Val(off.owner.rhs))
        if factor != size:
            return None
        return self.tile_facts.get((x, size, c.upper))

    def versioned(
        self,
        nest: Nest,
        leaf: IterVar,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        body: Callable[[frozenset[int]], None],
    ) -> None:
        """`body(handled)`, or, when `leaf` is the outer half of a split whose inner half is
        an unrolled tile with a tail, `if full: body(tail handled) else: body(handled)`: the
        loops between (a depth loop over the tile) then see a full tile without guards, and
        LLVM keeps its accumulators in registers across them (a guard in the depth loop would
        make each accumulator access conditional, so they would stay in memory). The tail
        branch knows its tile is short, so the tile there is emitted guarded only.

        The same when a reduction is computed at `leaf` (a conv's register tile at its
        epilogue's column tiles): the tile and its copy-out are emitted once for a full tile
        and once for the tail, and never meet. Versioned only inside the tile's depth loop, the two tiles
        met there at every step and again at the copy-out, and LLVM gave both one register
        assignment: 28 accumulators rotated through registers every step, with a spill (a
        1x1 conv 16 -> 64 at 99 columns, 2 x 14 tiles and a one-column tail: 0.164 ms, 0.107
        at 98 columns; now 0.111)."""
        for c in nest.constraints:
            if id(c) in handled or c.lower:
                continue
            rel = next((r for r in _splits(nest.stage) if r.parent is c.var), None)
            if rel is None or rel.outer is not leaf:
                continue
            tile = rel.inner.annotation == "unroll" and nest.ext[rel.inner] <= GUARDED_UNROLL_LIMIT
            if not tile and not (self.version_computed_tiles and _accumulates_at(nest, leaf)):
                continue
            bound = self._upper_bound(nest, c, rel.inner, vals)
            if bound is None:
                continue
            size = nest.ext[rel.inner]
            full = self.add1(arith.CmpiOp(bound, self.index(size), "sge"))
            # what each branch knows of tiles that start at leaf * size (a stage computed here)
            fact = (vals[leaf].ssa, size, c.upper) if c.offset is None else None

            def whole(c: Constraint = c, fact=fact) -> None:
                with self._knowing(fact, True):
                    body(handled | {id(c)})

            def tail(c: Constraint = c, fact=fact) -> None:
                with self._in_tail([id(c)]), self._knowing(fact, False):
                    body(handled)

            self.emit_if(full, whole, tail)
            return
        body(handled)

    def guarded(
        self, guards: list[Constraint], vals: dict[IterVar, Val], body: Callable[[], None]
    ) -> None:
        """`body` under an `scf.if` that checks the constraints, or directly when there are none."""
        if not guards:
            body()
            return
        cond: SSAValue | None = None
        for c in guards:
            v = vals[c.var]
            if v.kind != "u":
                raise NotVectorizable
            x = v.ssa if c.offset is None else self.add1(arith.AddiOp(v.ssa, c.offset))
            if c.lower:
                test = self.add1(arith.CmpiOp(x, self.index(0), "sge"))
            else:
                test = self.add1(arith.CmpiOp(x, self.index(c.upper), "slt"))
            cond = test if cond is None else self.add1(arith.AndIOp(cond, test))
        assert cond is not None
        self.emit_if(cond, body)

    def _upper_bound(
        self, nest: Nest, c: Constraint, leaf: IterVar, vals: dict[IterVar, Val]
    ) -> SSAValue | None:
        """The loop bound that makes constraint c hold, when c only waits for this leaf."""
        if c.var is leaf:
            known: SSAValue | None = None
        else:
            rel = next(
                (r for r in _splits(nest.stage) if r.parent is c.var),
                None,
            )
            if rel is None or rel.inner is not leaf or rel.outer not in vals:
                return None
            outer = vals[rel.outer]
            if outer.kind != "u":
                return None
            known = self.add1(arith.MuliOp(outer.ssa, self.index(nest.ext[rel.inner])))
        bound = self.index(c.upper)
        if c.offset is not None:
            bound = self.add1(arith.SubiOp(bound, c.offset))
        if known is not None:
            bound = self.add1(arith.SubiOp(bound, known))
        return bound

    def emit_prefetches(
        self, nest: Nest, scope: Scope, leaves: list[IterVar], k: int, vals: dict[IterVar, Val]
    ) -> None:
        """te.prefetch at leaves[k]: for each read of the tensor in the formula, a
        `hint.prefetch` of the element it reads `offset` iterations of the loop later, the
        loops inside at 0, and one more for each other cache line the loops inside read
        there (`_prefetch_points`: a 32-float row of a matmul panel is two lines, a conv tile
        of two channel blocks reads two weight rows). A read whose index is not one scalar (a
        vector lane index) or a tensor not in memory here (inlined) gets none."""
        leaf = leaves[k]
        compute = nest.compute
        for tensor, offset, prim in leaf.prefetch:
            view = scope.views.get(tensor)
            if view is None:
                continue
            target = self.prefetch_iteration(nest, leaves, k, vals, offset, prim)
            for op in compute.block.ops:
                if not isinstance(op, ReadOp) or op.tensor is not tensor.value:
                    continue
                points, lines = _prefetch_points(nest, leaves[k + 1 :], op)
                for inner in points:
                    # the leaves' values (this one advanced, the inner ones at the point);
                    # the axes derived from them are derived again
                    ahead = {v: vals[v] for v in leaves[:k]}
                    ahead[leaf] = target
                    for v in leaves[k + 1 :]:
                        ahead[v] = self.cval(inner.get(v, 0))
                    self.derive(nest, ahead)
                    args = real_indices(self, nest, ahead) + [
                        ahead[v] for v in nest.stage.reduce_root
                    ]
                    formula = FormulaEval(self, compute, args, scope)
                    try:
                        idx = [formula.eval(i) for i in op.indices]
                    except NotVectorizable:
                        continue
                    if any(i.kind != "u" for i in idx):
                        continue
                    buf = view_indices(self, idx, view.offsets)
                    for line in lines:  # the vector's further lines: the same address on
                        last = self.iadd(buf[-1], self.cval(line)) if line else buf[-1]
                        self.add(PrefetchOp(view.buffer, [i.ssa for i in [*buf[:-1], last]]))

    def prefetch_iteration(
        self,
        nest: Nest,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
        offset: int,
        prim: PrefetchPrimitive,
    ) -> Val:
        """The iteration of leaves[k] whose reads a te.prefetch there fetches: `offset`
        ahead, or with `spread i.o` (extent T) offset + (i * extent + iteration) / T, so the
        iterations of i.o share the fetch of the next `offset` iterations."""
        leaf = leaves[k]
        spread = prim.spread
        if spread is None:
            return self.iadd(vals[leaf], self.cval(offset))
        shared = next((v for v in leaves[:k] if v.name == spread.data), None)
        if shared is None:
            raise DiagnosticError(
                prim, f"te.prefetch: the spread loop {spread.data} is not outside {leaf.name}"
            )
        tiles = nest.ext.get(shared, shared.extent)
        position = self.iadd(self.imul(vals[shared], nest.ext.get(leaf, leaf.extent)), vals[leaf])
        return self.iadd(self.idiv(position, tiles), self.cval(offset))

    def derive(self, nest: Nest, vals: dict[IterVar, Val]) -> list[IterVar]:
        """Give values to every axis that follows from the known ones (split: outer * factor +
        inner; fuse: div and mod); returns the new ones."""
        return nest.stage.derive(
            vals,
            nest.ext,
            lambda o, i, e: self.iadd(self.imul(o, e), i),
            lambda f, e: (self.idiv(f, e), self.irem(f, e)),
        )

    def emit_attached(
        self,
        producer: Stage,
        nest: Nest,
        scope: Scope,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
    ) -> Scope:
        """Emit `producer` inside the consumer's loop `leaves[k]`; returns the scope in which
        the consumer reads the producer's local buffer."""
        region, view = attached_region(self, producer, nest, scope, leaves, k, vals)
        scope2 = scope.with_view(producer, view)
        self.emit_compute(producer, scope2, region)
        return scope2


def _region_tails(nest: Nest, leaves: list[IterVar], first_reduce: int | None) -> list[Constraint]:
    """The edges of a region (a stage computed at a consumer's tile) that bound an unrolled
    register-tile loop inside the stage's reduction loops."""
    if first_reduce is None:
        return []
    return [
        c
        for c in nest.constraints
        if not c.lower
        and c.offset is not None
        and c.var in leaves
        and leaves.index(c.var) > first_reduce
        and c.var.annotation == "unroll"
        and 1 < nest.ext[c.var] <= GUARDED_UNROLL_LIMIT
    ]


def _accumulates_at(nest: Nest, leaf: IterVar) -> bool:
    """A reduction (a register tile of accumulators) is computed at `leaf` of the nest."""
    return any(
        p.compute is not None and p.compute.reduce_kind is not None
        for p in nest.attached.get(leaf, [])
    )


def _splits(stage: Stage) -> list[Split]:
    """The stage's splits and its tail bounds (both: parent = outer * |inner| + inner)."""
    return [r for r in stage.relations if isinstance(r, Split)] + stage.tails


PREFETCH_LINE_BYTES = 64
MAX_PREFETCH_POINTS = 8
"""Prefetches one te.prefetch puts in a loop body at most (a tile's distinct cache lines)."""
PREFETCH_WORK = 8
"""Vector operations of the loop body per prefetch it issues, at least (BERT's 8 x 32 tile: 16
multiply-adds, both lines of its panel row)."""


def _prefetch_points(
    nest: Nest, inner: list[IterVar], read: ReadOp
) -> tuple[list[dict[IterVar, int]], list[int]]:
    """Where `read` touches cache lines in the loops inside a prefetch's loop: the points
    (values of those loops) of each iteration of a short unrolled loop the read depends on
    other than along its last index (the channel blocks of a conv tile: a weight row each),
    the point with every loop at 0 first; and the offsets along the last index of each line
    a vectorized loop along it spans (a matmul panel's 32-float row: 0 and 16), added to the
    address (a displacement, no index arithmetic)."""
    args = list(nest.compute.block.args)
    roots = nest.stage.root
    t = read.tensor.type
    size = max(element_bits(t.element_type) // 8, 1) if isinstance(t, TensorType) else 4
    per_line = max(PREFETCH_LINE_BYTES // size, 1)
    points: list[dict[IterVar, int]] = [{}]
    lines = [0]
    work = 1  # vector operations an iteration of the prefetch's loop does
    for v in inner:
        extent = nest.ext.get(v, v.extent)
        work *= -(-extent // per_line) if v.annotation == "vectorize" else extent
        if extent <= 1 or v.annotation not in ("vectorize", "unroll"):
            continue
        probe = {u: 0 for u in nest.stage.leaves}
        probe[v] = 1
        nest.stage.derive(probe, nest.ext, lambda o, i, e: o * e + i, lambda f, e: (f // e, f % e))
        moved = [args[j] for j, r in enumerate(roots) if probe.get(r, 0) and j < len(args)]
        on_last = bool(read.indices) and any(depends_on(read.indices[-1], a) for a in moved)
        on_any = any(depends_on(i, a) for i in read.indices for a in moved)
        if v.annotation == "vectorize" and on_last and len(lines) == 1:
            lines = list(range(0, extent, per_line))
        elif v.annotation == "unroll" and on_any and not on_last and extent <= 4:
            points = [{**p, v: x} for p in points for x in range(extent)]
    # a prefetch for at least PREFETCH_WORK vector operations of an iteration: an LSTM
    # step's 1 x 128 tile (8 multiply-adds a row, its weights in L2) ran 1.35x slower with
    # a prefetch for each of its row's 8 lines, 1.07x with two
    budget = min(max(work // PREFETCH_WORK, 1), MAX_PREFETCH_POINTS)
    lines = lines[:budget]
    return points[: max(budget // len(lines), 1)], lines
