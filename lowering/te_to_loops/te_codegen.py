"""Loop nests from a scheduled te kernel: scf loops over memrefs, vector ops for vectorized
loops, `scf.parallel` for parallel ones, explicit buffers for intermediates.

For each stage computed at the root, its leaf loops are emitted outermost first. Inside each
loop the original axes that have become known are recomputed from the leaves (split: outer *
factor + inner; fuse: div and mod); a split whose factor does not divide its axis bounds its
inner loop by `min(factor, extent - outer * factor)`, or guards the body when the loops are
ordered so that this is impossible. A reduction's accumulator is initialised just outside its
first reduction loop, over the spatial loops inside it. A stage computed at a consumer's loop is
emitted inside that loop, over the region that one iteration reads (te_bounds.py), into a
small buffer hoisted to the function entry (or to the body of the enclosing parallel loop, so
each thread has its own). Inlined stages are evaluated where they are read.

A vectorized innermost loop is emitted once for all its lanes when its extent is small (a
register tile: one `vector<16xf32>` op per formula op), else as a loop of native-width vectors
with a scalar tail. Index values are tracked as uniform, "base + lane" (contiguous) or general;
a formula that would need gathers, lane-dependent conditions or guards falls back to a scalar
loop, so vectorizing is always correct and only sometimes fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import ComputeOp, ConstantOp, ExternOp, ReadOp, YieldOp
from nnvm.dialects.te.stages import IterVar, ScheduleState, Split, Stage
from nnvm.lowering.te_to_loops.bounds import (
    DimRegion,
    Form,
    Linear,
    formula_accesses,
    infer_region,
    root_forms,
)
from nnvm.support.diagnostics import DiagnosticError

INDEX = IndexType()
MAX_LANES = 64
"""A vectorized loop of at most this many iterations becomes one vector (LLVM splits it into
native registers); longer loops step by the native width."""
NATIVE_BITS = 256
BIG = 1 << 40
"""The known alignment of 0: a multiple of everything."""
ALIGNMENT = 64


class NotVectorizable(Exception):
    """This loop body cannot be written with contiguous vectors; emit it scalar."""


def memref_of(t: Attribute) -> MemRefType:
    assert isinstance(t, TensorType), t
    return MemRefType(t.element_type, list(t.get_shape()))


def native_lanes(elt: Attribute, vector_bits: int = NATIVE_BITS) -> int:
    bits = 32
    if exprs.is_float_type(elt):
        bits = exprs.float_width(elt)
    elif exprs.is_int_type(elt) and not exprs.is_bool_type(elt):
        bits = exprs.int_width(elt)
    return max(vector_bits // bits, 1)


# ----------------------------------------------------------------------------------------------
# Values during emission
# ----------------------------------------------------------------------------------------------


@dataclass
class Val:
    """A value of the loop body: uniform ('u'), base + lane ('l', an index; ssa is the base at
    lane 0), or a vector ('v'). `mult`: an index ssa known to be a multiple of it."""

    ssa: SSAValue
    kind: str = "u"
    mult: int = 1


def _known_multiple(v: SSAValue, depth: int = 4) -> int:
    """A number the index `v` is known to be a multiple of, from its defining ops (a tile
    offset `j.o * 32` is a multiple of 32): lets a lane index plus that offset stay aligned."""
    op = v.owner
    if depth == 0 or not isinstance(op, Operation):
        return 1
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        c = abs(int(op.value.value.data))
        return min(c, BIG) if c else BIG
    if isinstance(op, arith.MuliOp):
        a, b = (_known_multiple(o, depth - 1) for o in op.operands)
        return min(a * b, BIG)
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        return math.gcd(*(_known_multiple(o, depth - 1) for o in op.operands))
    return 1


@dataclass
class View:
    """Where a stage's values live: a buffer, and per dimension the offset of its first
    element (a stage computed at a consumer holds only the region one iteration reads)."""

    buffer: SSAValue
    offsets: list[SSAValue | None]


@dataclass
class Scope:
    views: dict[Stage, View]
    alloca_block: Block
    in_parallel: bool = False

    def with_view(self, stage: Stage, view: View) -> Scope:
        views = dict(self.views)
        views[stage] = view
        return Scope(views, self.alloca_block, self.in_parallel)


@dataclass(eq=False)
class Constraint:
    """offset + value(var) < upper (or >= 0 when lower): a tail or a region boundary."""

    var: IterVar
    offset: SSAValue | None
    upper: int
    lower: bool = False


@dataclass
class Nest:
    """One emission of a compute stage: its axis extents, offsets and constraints."""

    stage: Stage
    compute: ComputeOp
    ext: dict[IterVar, int]
    offsets: list[SSAValue | None]
    constraints: list[Constraint]
    view: View
    elt: Attribute
    attached: dict[IterVar, list[Stage]] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# The generator
# ----------------------------------------------------------------------------------------------


class KernelGenerator:
    """Replaces a scheduled te kernel function by its loop-nest implementation."""

    def __init__(self, state: ScheduleState, module: ModuleOp, vector_bits: int = NATIVE_BITS):
        self.state = state
        self.vector_bits = vector_bits
        self.module = module
        self.block: Block = Block()
        self.entry: Block = Block()
        self.lanes: int | None = None
        self._consts: dict[tuple[int, Attribute], SSAValue] = {}
        self._deallocs: list[SSAValue] = []
        self._last_const: Operation | None = None

    # -- insertion ------------------------------------------------------------------------

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def add1(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    @contextmanager
    def at(self, block: Block) -> Iterator[None]:
        saved = self.block
        self.block = block
        try:
            yield
        finally:
            self.block = saved

    def index(self, value: int) -> SSAValue:
        """An index constant, created once at the function entry."""
        key = (value, INDEX)
        if key not in self._consts:
            op = arith.ConstantOp(IntegerAttr(value, INDEX))
            op.result.name_hint = f"c{value}" if value >= 0 else f"c_{-value}"
            last = self._last_const
            if last is not None:
                self.entry.insert_op_after(op, last)
            elif self.entry.first_op is not None:
                self.entry.insert_op_before(op, self.entry.first_op)
            else:
                self.entry.add_op(op)
            self._last_const = op
            self._consts[key] = op.result
        return self._consts[key]

    def cval(self, value: int) -> Val:
        return Val(self.index(value), "u", abs(value) if value else BIG)

    # -- the kernel -----------------------------------------------------------------------

    def generate(self) -> None:
        state, fn = self.state, self.state.fn
        inputs = list(fn.function_type.inputs.data)
        outputs = state.outputs
        in_types = [memref_of(t) for t in inputs]
        out_types = [memref_of(v.type) for v in outputs]
        self.entry = Block(arg_types=[*in_types, *out_types])
        for arg, old in zip(self.entry.args, fn.body.block.args, strict=False):
            if old.name_hint:
                arg.name_hint = old.name_hint
        self.block = self.entry
        views: dict[Stage, View] = {}
        for stage in state.stages:
            if stage.arg_index is not None:
                views[stage] = View(self.entry.args[stage.arg_index], [None] * len(stage.shape))
        copies: list[tuple[Stage, SSAValue]] = []
        for k, v in enumerate(outputs):
            out = self.entry.args[len(inputs) + k]
            out.name_hint = f"out{k}" if len(outputs) > 1 else "out"
            stage = state.by_value[v]
            if stage.op is not None and not isinstance(stage.op, ConstantOp) and stage not in views:
                views[stage] = View(out, [None] * len(stage.shape))
            else:
                copies.append((stage, out))
        for stage in state.stages:
            if isinstance(stage.op, ConstantOp):
                views[stage] = View(self._global(stage.op), [None] * len(stage.shape))
        for stage in state.stages:
            materialized = stage.attach == "root" and stage.op is not None
            if materialized and stage not in views and not isinstance(stage.op, ConstantOp):
                mem = self.add1(
                    memref.AllocOp.get(stage.value.type.element_type, ALIGNMENT, stage.shape)
                )  # type: ignore[attr-defined]
                mem.name_hint = _hint(stage.name)
                views[stage] = View(mem, [None] * len(stage.shape))
                self._deallocs.append(mem)
        scope = Scope(views, self.entry)
        done_externs: set[int] = set()
        for stage in state.stages:
            if stage.attach != "root":
                continue
            if stage.compute is not None and 0 in stage.shape:
                continue  # an empty tensor: nothing to compute
            if stage.compute is not None:
                self.emit_compute(stage, scope, None)
            elif isinstance(stage.op, ExternOp) and id(stage.op) not in done_externs:
                done_externs.add(id(stage.op))
                self.emit_extern(stage.op, scope)
        for stage, out in copies:
            self.add(memref.CopyOp(scope.views[stage].buffer, out))
        for mem in self._deallocs:
            self.add(memref.DeallocOp.get(mem))
        self.add(func.ReturnOp())
        old = fn.body.block
        fn.body.detach_block(old)
        for op in reversed(list(old.ops)):
            op.drop_all_references()
        fn.body.add_block(self.entry)
        fn.function_type = func.FunctionType.from_lists([*in_types, *out_types], [])
        fn.arg_attrs = None
        fn.res_attrs = None

    def _global(self, op: ConstantOp) -> SSAValue:
        taken = {o.sym_name.data for o in self.module.ops if hasattr(o, "sym_name")}
        k = 0
        while (name := f"__te_const_{self.state.fn.sym_name.data}_{k}") in taken:
            k += 1
        t = memref_of(op.result.type)
        glob = memref.GlobalOp.get(
            StringAttr(name), t, op.value, StringAttr("private"), UnitAttr(), ALIGNMENT
        )
        self.module.body.block.insert_op_before(glob, self.state.fn)
        return self.add1(memref.GetGlobalOp(name, t))

    def emit_extern(self, op: ExternOp, scope: Scope) -> None:
        args: list[SSAValue] = []
        for v in [*op.inputs, *op.outputs]:
            stage = self.state.by_value[v]
            view = scope.views.get(stage)
            if view is None or any(o is not None for o in view.offsets):
                raise DiagnosticError(op, f"te.extern: '{stage.name}' has no whole buffer")
            args.append(view.buffer)
        callee = op.callee.root_reference.data
        if not any(
            isinstance(o, func.FuncOp) and o.sym_name.data == callee for o in self.module.ops
        ):
            decl = func.FuncOp.external(callee, [a.type for a in args], [])
            self.module.body.block.insert_op_before(decl, self.state.fn)
        self.add(func.CallOp(SymbolRefAttr(callee), args, []))

    # -- one stage ------------------------------------------------------------------------

    def emit_compute(
        self, stage: Stage, scope: Scope, region: list[tuple[SSAValue | None, int, bool]] | None
    ) -> None:
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
        if region:
            for d, (off, _, guard) in enumerate(region):
                if guard:
                    full = stage.shape[d]
                    constraints.append(Constraint(spatial[d], off, full))
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
        self.emit_level(nest, scope, leaves, 0, {}, frozenset(), "main", first_reduce)

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
        if k == len(leaves):
            if mode == "main":
                self.emit_update(nest, scope, vals)
            else:
                self.emit_init(nest, scope, vals)
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

            def rest() -> None:
                scope2 = scope
                if mode == "main":
                    for p in nest.attached.get(leaf, []):
                        scope2 = self.emit_attached(p, nest, scope2, leaves, k, vals2)
                self.emit_level(nest, scope2, leaves, k + 1, vals2, handled3, mode, first_reduce)

            self.guarded(guards, vals2, rest)

        ann = leaf.annotation
        last = k == len(leaves) - 1
        if static == 1 and ub_dyn is None and ann != "parallel":
            inner(self.cval(0))
        elif ann == "vectorize" and last:
            self.emit_vector_leaf(nest, leaf, static, ub_dyn, vals, handled2, inner)
        elif ann == "unroll" and ub_dyn is None and static <= 512:
            for c in range(static):
                inner(self.cval(c))
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

    def emit_for(
        self, leaf: IterVar, lb: SSAValue, ub: SSAValue, step: int, body: Callable[[SSAValue], None]
    ) -> None:
        block = Block(arg_types=[INDEX])
        block.args[0].name_hint = _hint(leaf.name)
        with self.at(block):
            body(block.args[0])
            self.add(scf.YieldOp())
        self.add(scf.ForOp(lb, ub, self.index(step), [], Region(block)))

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
        block = Block(arg_types=[INDEX])
        block.args[0].name_hint = _hint(leaf.name)
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
            self.add(scf.ReduceOp())
        self.add(scf.ParallelOp([self.index(0)], [ub], [self.index(1)], Region(block)))

    def guarded(
        self, guards: list[Constraint], vals: dict[IterVar, Val], body: Callable[[], None]
    ) -> None:
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
        block = Block()
        with self.at(block):
            body()
            self.add(scf.YieldOp())
        self.add(scf.IfOp(cond, [], Region(block)))

    def _upper_bound(
        self, nest: Nest, c: Constraint, leaf: IterVar, vals: dict[IterVar, Val]
    ) -> SSAValue | None:
        """The loop bound that makes constraint c hold, when c only waits for this leaf."""
        if c.var is leaf:
            known: SSAValue | None = None
        else:
            rel = next(
                (r for r in nest.stage.relations if isinstance(r, Split) and r.parent is c.var),
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

    def derive(self, nest: Nest, vals: dict[IterVar, Val]) -> list[IterVar]:
        """Give values to every axis that follows from the known ones; returns the new ones."""
        new: list[IterVar] = []
        changed = True
        while changed:
            changed = False
            for rel in nest.stage.relations:
                if isinstance(rel, Split):
                    if rel.parent in vals or rel.outer not in vals or rel.inner not in vals:
                        continue
                    scaled = self.imul(vals[rel.outer], nest.ext[rel.inner])
                    vals[rel.parent] = self.iadd(scaled, vals[rel.inner])
                    new.append(rel.parent)
                    changed = True
                else:
                    if rel.fused not in vals or rel.outer in vals:
                        continue
                    f, e = vals[rel.fused], nest.ext[rel.inner]
                    vals[rel.outer] = self.idiv(f, e)
                    vals[rel.inner] = self.irem(f, e)
                    new.extend([rel.outer, rel.inner])
                    changed = True
        return new

    # -- attached stages ------------------------------------------------------------------

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
        consumer = nest.stage
        forms_by_root = root_forms(consumer, nest.ext, set(vals))
        args: list[Form] = []
        for d, v in enumerate(consumer.spatial_root):
            f = forms_by_root.get(v)
            off = nest.offsets[d]
            if f is not None and off is not None:
                f = Linear.of(off).add(f)
            args.append(f)
        for v in consumer.reduce_root:
            args.append(forms_by_root.get(v))
        inlined = {
            s.value: s.compute
            for s in self.state.stages
            if s.attach == "inline" and s.compute is not None
        }
        accesses: list[list[Form]] = []
        block, extents = nest.compute.block, dict(nest.ext)
        formula_accesses(block, args, producer.value, inlined, accesses, extents)  # type: ignore[arg-type]
        inner = {v: nest.ext[v] for v in leaves[k + 1 :]}
        outer = {v: nest.ext[v] for v in vals}
        regions: list[DimRegion] = infer_region(accesses, producer.shape, inner, outer)
        region: list[tuple[SSAValue | None, int, bool]] = []
        for r in regions:
            off = None if r.offset is None else self.materialize(r.offset, vals)
            region.append((off, r.extent, r.needs_guard))
        if producer in scope.views:
            view = scope.views[producer]
        else:
            elt = producer.value.type.element_type  # type: ignore[attr-defined]
            shape = [r.extent for r in regions]
            alloca = memref.AllocaOp.get(elt, ALIGNMENT, shape)
            alloca.results[0].name_hint = _hint(producer.name)
            first = scope.alloca_block.first_op
            if first is None:
                scope.alloca_block.add_op(alloca)
            else:
                scope.alloca_block.insert_op_before(alloca, first)
            view = View(alloca.results[0], [off for off, _, _ in region])
        scope2 = scope.with_view(producer, view)
        self.emit_compute(producer, scope2, region)
        return scope2

    def materialize(self, form: Linear, vals: dict[IterVar, Val]) -> SSAValue:
        acc: SSAValue | None = None
        for key, coef in form.terms.items():
            if isinstance(key, IterVar):
                v = vals[key]
                if v.kind != "u":
                    raise NotVectorizable
                x = v.ssa
            else:
                x = key
            if coef != 1:
                x = self.add1(arith.MuliOp(x, self.index(coef)))
            acc = x if acc is None else self.add1(arith.AddiOp(acc, x))
        if acc is None:
            return self.index(form.const)
        if form.const:
            acc = self.add1(arith.AddiOp(acc, self.index(form.const)))
        return acc

    # -- vectorized loops -----------------------------------------------------------------

    def emit_vector_leaf(
        self,
        nest: Nest,
        leaf: IterVar,
        static: int,
        ub_dyn: SSAValue | None,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        inner: Callable[..., None],
    ) -> None:
        def scalar_loop(lb: SSAValue, ub: SSAValue) -> None:
            self.emit_for(leaf, lb, ub, 1, lambda iv: inner(Val(iv)))

        def try_vector(base: Val, lanes: int) -> bool:
            block = Block()
            saved_lanes = self.lanes
            self.lanes = lanes
            try:
                with self.at(block):
                    inner(base)
            except NotVectorizable:
                _discard(block)
                return False
            finally:
                self.lanes = saved_lanes
            for op in list(block.ops):
                op.detach()
                self.add(op)
            return True

        native = native_lanes(nest.elt, self.vector_bits)
        if ub_dyn is None:
            if static <= MAX_LANES:
                if static == 1 or not try_vector(Val(self.index(0), "l", BIG), static):
                    scalar_loop(self.index(0), self.index(static))
                return
            main = static - static % native
            block = Block(arg_types=[INDEX])
            block.args[0].name_hint = _hint(leaf.name)
            ok = False
            with self.at(block):
                ok = try_vector(Val(block.args[0], "l", native), native)
                self.add(scf.YieldOp())
            if ok:
                self.add(
                    scf.ForOp(
                        self.index(0), self.index(main), self.index(native), [], Region(block)
                    )
                )
                if main < static:
                    scalar_loop(self.index(main), self.index(static))
            else:
                _discard(block)
                scalar_loop(self.index(0), self.index(static))
            return
        if static <= MAX_LANES:
            full = self.add1(arith.CmpiOp(ub_dyn, self.index(static), "eq"))
            then_block, else_block = Block(), Block()
            with self.at(then_block):
                ok = try_vector(Val(self.index(0), "l", BIG), static)
                if not ok:
                    scalar_loop(self.index(0), self.index(static))
                self.add(scf.YieldOp())
            with self.at(else_block):
                scalar_loop(self.index(0), ub_dyn)
                self.add(scf.YieldOp())
            self.add(scf.IfOp(full, [], Region(then_block), Region(else_block)))
            return
        rem = self.add1(arith.RemSIOp(ub_dyn, self.index(native)))
        main_ub = self.add1(arith.SubiOp(ub_dyn, rem))
        block = Block(arg_types=[INDEX])
        with self.at(block):
            ok = try_vector(Val(block.args[0], "l", native), native)
            self.add(scf.YieldOp())
        if ok:
            self.add(scf.ForOp(self.index(0), main_ub, self.index(native), [], Region(block)))
            scalar_loop(main_ub, ub_dyn)
        else:
            _discard(block)
            scalar_loop(self.index(0), ub_dyn)

    # -- loop bodies ----------------------------------------------------------------------

    def _indices(self, nest: Nest, vals: dict[IterVar, Val]) -> tuple[list[Val], list[Val]]:
        """(real indices of the spatial axes, indices into the stage's buffer)."""
        real, buf = [], []
        for d, v in enumerate(nest.stage.spatial_root):
            x = vals[v]
            off = nest.offsets[d]
            r = x if off is None else self.iadd(x, Val(off, mult=_known_multiple(off)))
            real.append(r)
            voff = nest.view.offsets[d]
            buf.append(r if voff is None else self.isub(r, Val(voff, mult=_known_multiple(voff))))
        return real, buf

    def emit_init(self, nest: Nest, scope: Scope, vals: dict[IterVar, Val]) -> None:
        _, buf = self._indices(nest, vals)
        kind = nest.compute.reduce_kind
        assert kind is not None
        ident = self.add1(exprs.constant(exprs.identity_value(kind, nest.elt), nest.elt))
        self.store(nest.view.buffer, buf, Val(ident))

    def emit_update(self, nest: Nest, scope: Scope, vals: dict[IterVar, Val]) -> None:
        real, buf = self._indices(nest, vals)
        args = real + [vals[v] for v in nest.stage.reduce_root]
        formula = FormulaEval(self, nest.compute, args, scope)
        kind = nest.compute.reduce_kind
        factors = formula.product_factors() if kind == "sum" else None
        if factors is not None:
            # acc + a * b as one fused multiply-add: LLVM does not contract fmul + fadd
            acc = self.load(nest.view.buffer, buf)
            value = self.data_op(_fma, [*factors, acc])
            self.store(nest.view.buffer, buf, value)
            return
        value = formula.result()
        if kind is not None:
            acc = self.load(nest.view.buffer, buf)
            value = self.data_op(lambda a, b: exprs.combine(kind, a, b), [acc, value])
        self.store(nest.view.buffer, buf, value)

    # -- memory ---------------------------------------------------------------------------

    def load(self, buffer: SSAValue, idx: list[Val]) -> Val:
        if all(i.kind == "u" for i in idx):
            return Val(self.add1(memref.LoadOp.get(buffer, [i.ssa for i in idx])))
        if self._vector_access(buffer, idx):
            elt = buffer.type.element_type  # type: ignore[attr-defined]
            t = VectorType(elt, [self.lanes])
            return Val(self.add1(vector.LoadOp(buffer, [i.ssa for i in idx], t)), "v")
        raise NotVectorizable

    def store(self, buffer: SSAValue, idx: list[Val], value: Val) -> None:
        if all(i.kind == "u" for i in idx):
            if value.kind != "u":
                raise NotVectorizable
            self.add(memref.StoreOp.get(value.ssa, buffer, [i.ssa for i in idx]))
            return
        if self._vector_access(buffer, idx):
            v = self.to_vector(value)
            self.add(vector.StoreOp(v, buffer, [i.ssa for i in idx]))
            return
        raise NotVectorizable

    def _vector_access(self, buffer: SSAValue, idx: list[Val]) -> bool:
        """A contiguous vector access: lanes along the last index only. (Not for i1: memrefs
        hold a byte per i1, a vector of i1 in memory is a bitfield.)"""
        if self.lanes is None or not idx or idx[-1].kind != "l":
            return False
        if any(i.kind != "u" for i in idx[:-1]):
            return False
        return not exprs.is_bool_type(buffer.type.element_type)  # type: ignore[attr-defined]

    def to_vector(self, v: Val) -> SSAValue:
        if v.kind == "v":
            return v.ssa
        if v.kind == "l" or self.lanes is None:
            raise NotVectorizable
        return self.add1(vector.BroadcastOp(v.ssa, VectorType(v.ssa.type, [self.lanes])))

    def data_op(self, build: Callable[..., Operation], operands: list[Val]) -> Val:
        """Apply a scalar op builder to values that may be vectors. (xDSL 0.74's arith does
        not take vectors everywhere: no vector compares, selects on vector conditions or
        int/float conversions; such a loop stays scalar.)"""
        if all(o.kind == "u" for o in operands):
            return Val(self.add1(build(*[o.ssa for o in operands])))
        op = build(*[self.to_vector(o) for o in operands])
        try:
            op.verify()
        except VerifyException:
            op.drop_all_references()
            raise NotVectorizable from None
        return Val(self.add1(op), "v")

    # -- index arithmetic (lane-aware) ------------------------------------------------------

    def _const_of(self, v: Val) -> int | None:
        op = v.ssa.owner
        if v.kind == "u" and isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return int(op.value.value.data)
        return None

    def iadd(self, a: Val, b: Val, sign: int = 1) -> Val:
        if a.kind == "v" or b.kind == "v" or (a.kind == "l" and b.kind == "l"):
            raise NotVectorizable
        if sign < 0 and b.kind == "l":
            raise NotVectorizable
        if sign < 0 and a.ssa is b.ssa and a.kind == b.kind:
            return self.cval(0)
        cb = self._const_of(b)
        if cb == 0:
            return a
        ca = self._const_of(a)
        if ca == 0 and sign > 0:
            return b
        op = arith.AddiOp(a.ssa, b.ssa) if sign > 0 else arith.SubiOp(a.ssa, b.ssa)
        kind = "l" if "l" in (a.kind, b.kind) else "u"
        return Val(self.add1(op), kind, math.gcd(a.mult, b.mult))

    def isub(self, a: Val, b: Val) -> Val:
        return self.iadd(a, b, -1)

    def imul(self, a: Val, c: int) -> Val:
        if c == 1:
            return a
        if a.kind != "u":
            raise NotVectorizable
        ca = self._const_of(a)
        if ca is not None:
            return self.cval(ca * c)
        return Val(self.add1(arith.MuliOp(a.ssa, self.index(c))), "u", min(a.mult * abs(c), BIG))

    def idiv(self, a: Val, c: int) -> Val:
        if c == 1:
            return a
        if a.kind == "l":
            if self.lanes and a.mult % self.lanes == 0 and c % self.lanes == 0:
                return Val(self.add1(arith.FloorDivSIOp(a.ssa, self.index(c))), "u", 1)
            raise NotVectorizable
        if a.kind != "u":
            raise NotVectorizable
        ca = self._const_of(a)
        if ca is not None:
            return self.cval(ca // c)
        mult = a.mult // c if a.mult % c == 0 else 1
        return Val(self.add1(arith.FloorDivSIOp(a.ssa, self.index(c))), "u", max(mult, 1))

    def irem(self, a: Val, c: int) -> Val:
        if a.kind == "l":
            if self.lanes and a.mult % self.lanes == 0 and c % self.lanes == 0:
                r = self.add1(arith.RemSIOp(a.ssa, self.index(c)))
                return Val(r, "l", math.gcd(a.mult, c))
            raise NotVectorizable
        if a.kind != "u":
            raise NotVectorizable
        ca = self._const_of(a)
        if ca is not None:
            return self.cval(ca % c)
        if a.mult % c == 0:
            return self.cval(0)
        return Val(self.add1(arith.RemSIOp(a.ssa, self.index(c))), "u", math.gcd(a.mult, c))


# ----------------------------------------------------------------------------------------------
# Formulas
# ----------------------------------------------------------------------------------------------


class FormulaEval:
    """Evaluates a compute's formula at given indices: demand-driven from the yielded value,
    so a `select` whose branches read memory becomes an `scf.if` (lazy, as te promises)."""

    def __init__(self, gen: KernelGenerator, compute: ComputeOp, args: list[Val], scope: Scope):
        self.gen = gen
        self.compute = compute
        self.scope = scope
        self.memo: dict[SSAValue, Val] = dict(zip(compute.block.args, args, strict=True))
        self._reads: dict[SSAValue, bool] = {}

    def result(self) -> Val:
        term = self.compute.block.last_op
        assert isinstance(term, YieldOp)
        return self.eval(term.value)

    def product_factors(self) -> tuple[Val, Val] | None:
        """The two factors when the formula is a float product (a sum of products is a
        chain of fused multiply-adds), else None."""
        term = self.compute.block.last_op
        assert isinstance(term, YieldOp)
        op = term.value.owner
        if not isinstance(op, arith.MulfOp) or not exprs.is_float_type(op.result.type):
            return None
        return self.eval(op.lhs), self.eval(op.rhs)

    def has_reads(self, v: SSAValue) -> bool:
        if v in self._reads:
            return self._reads[v]
        op = v.owner
        found = False
        if isinstance(op, Operation) and op.parent_block() is self.compute.block:
            found = isinstance(op, ReadOp) or any(self.has_reads(o) for o in op.operands)
        self._reads[v] = found
        return found

    def eval(self, v: SSAValue) -> Val:
        if v in self.memo:
            return self.memo[v]
        op = v.owner
        assert isinstance(op, Operation), f"unbound formula value {v}"
        result = self._eval_op(op)
        self.memo[v] = result
        return result

    def _eval_op(self, op: Operation) -> Val:
        gen = self.gen
        if isinstance(op, ReadOp):
            return self.read(op.tensor, [self.eval(i) for i in op.indices])
        if isinstance(op, arith.ConstantOp):
            c = exprs.constant_value(op)
            if isinstance(op.result.type, IndexType) and isinstance(c, int):
                return gen.cval(c)
            return Val(gen.add1(op.clone()))
        if isinstance(op, arith.SelectOp) and (self.has_reads(op.lhs) or self.has_reads(op.rhs)):
            return self.lazy_select(op)
        if op.results and isinstance(op.results[0].type, IndexType):
            return self.index_op(op)
        operands = [self.eval(o) for o in op.operands]
        if any(o.kind == "l" for o in operands):
            raise NotVectorizable
        return gen.data_op(lambda *xs: _rebuild(op, list(xs)), operands)

    def index_op(self, op: Operation) -> Val:
        gen = self.gen
        a = [self.eval(o) for o in op.operands]
        consts = [gen._const_of(x) for x in a]
        if isinstance(op, arith.AddiOp):
            return gen.iadd(a[0], a[1])
        if isinstance(op, arith.SubiOp):
            return gen.isub(a[0], a[1])
        if isinstance(op, arith.MuliOp) and consts[1] is not None:
            return gen.imul(a[0], consts[1])
        if isinstance(op, arith.MuliOp) and consts[0] is not None:
            return gen.imul(a[1], consts[0])
        if (
            isinstance(op, arith.FloorDivSIOp | arith.DivSIOp)
            and consts[1] is not None
            and consts[1] > 0
        ):
            if consts[0] is not None:
                q = (
                    consts[0] // consts[1]
                    if isinstance(op, arith.FloorDivSIOp)
                    else int(consts[0] / consts[1])
                )
                return gen.cval(q)
            return gen.idiv(a[0], consts[1])
        if (
            isinstance(op, arith.RemSIOp)
            and consts[1] is not None
            and consts[1] > 0
            and a[0].kind == "l"
        ):
            return gen.irem(a[0], consts[1])
        if any(x.kind != "u" for x in a):
            raise NotVectorizable
        return Val(gen.add1(_rebuild(op, [x.ssa for x in a])))

    def read(self, tensor: SSAValue, idx: list[Val]) -> Val:
        gen = self.gen
        stage = gen.state.by_value.get(tensor)
        if stage is None:
            raise DiagnosticError(self.compute, "te.read of a tensor that is not a stage")
        if stage.attach == "inline" and stage.compute is not None:
            return FormulaEval(gen, stage.compute, idx, self.scope).result()
        view = self.scope.views.get(stage)
        if view is None:
            raise DiagnosticError(
                self.compute,
                f"'{self.compute.stage_name}' reads '{stage.name}' where it is not computed "
                f"(compute '{stage.name}' at a loop that encloses this read)",
            )
        buf = [
            i if off is None else gen.isub(i, Val(off))
            for i, off in zip(idx, view.offsets, strict=True)
        ]
        return gen.load(view.buffer, buf)

    def lazy_select(self, op: arith.SelectOp) -> Val:
        gen = self.gen
        cond = self.eval(op.cond)
        if cond.kind != "u":
            raise NotVectorizable
        branches: list[tuple[Block, Val]] = []
        blocks = [Block(), Block()]
        try:
            for v, block in zip((op.lhs, op.rhs), blocks, strict=True):
                saved = dict(self.memo)
                with gen.at(block):
                    branches.append((block, self.eval(v)))
                self.memo = saved
            vector_result = any(val.kind == "v" for _, val in branches)
            results: list[SSAValue] = []
            for block, val in branches:
                with gen.at(block):
                    if val.kind == "l":
                        raise NotVectorizable
                    ssa = gen.to_vector(val) if vector_result else val.ssa
                    results.append(ssa)
                    gen.add(scf.YieldOp(ssa))
        except NotVectorizable:
            # the branches are not in the IR yet: drop their ops' uses of outside values, or
            # they stay behind as phantom uses that later conversions trip over
            for block in blocks:
                _discard(block)
            raise
        t = results[0].type
        if_op = scf.IfOp(cond.ssa, [t], Region(branches[0][0]), Region(branches[1][0]))
        return Val(gen.add1(if_op), "v" if vector_result else "u")


def _rebuild(op: Operation, operands: list[SSAValue]) -> Operation:
    """The same op over new operands; scalar result types widen to vectors with them."""
    lanes = None
    for o in operands:
        if isinstance(o.type, VectorType):
            lanes = o.type.get_shape()[0]
    types = [
        VectorType(t, [lanes]) if lanes is not None and not isinstance(t, VectorType) else t
        for t in op.result_types
    ]
    return op.__class__.create(
        operands=operands,
        result_types=types,
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )


def _fma(a: SSAValue, b: SSAValue, c: SSAValue) -> Operation:
    """a * b + c, on vectors or scalars."""
    if isinstance(a.type, VectorType):
        return vector.FMAOp(a, b, c)
    return xmath.FmaOp(a, b, c)


def _discard(block: Block) -> None:
    """Drop a half-built block (its ops still use values from outside it)."""
    for op in reversed(list(block.ops)):
        op.detach()
        op.drop_all_references()


def _hint(name: str) -> str | None:
    import re

    clean = re.sub(r"[^\w$.]", "_", name)
    return clean if re.fullmatch(r"[A-Za-z_$.][\w$.]*", clean) else None
