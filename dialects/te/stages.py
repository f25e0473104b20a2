"""What schedule primitives mean: a te kernel's stages, their loop axes, and how each primitive
changes them, with a located diagnostic when a schedule is illegal.

Every tensor of a kernel is a stage: placeholders (`arg<k>`), constants, externs and computes.
A compute stage starts with one loop per axis (spatial, then reduction), outermost first.
`split`, `fuse` and `reorder` rewrite its list of leaf loops and record how the original axes
follow from them (the relations); `vectorize`, `parallel` and `unroll` annotate a leaf;
`compute_at`, `compute_inline` and `compute_root` say where the stage is computed. The three
primitives that make new stages (`cache_write`, `cache_read`, `rfactor`) rewrite the te ops of
the kernel itself, so the loop-nest generator only ever sees plain stages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import (
    ComputeOp,
    ConstantOp,
    ExternOp,
    ReadOp,
    YieldOp,
    make_compute_block,
)
from nnvm.dialects.te.schedule import (
    BindOp,
    CacheReadOp,
    CacheWriteOp,
    ComputeAtOp,
    ComputeInlineOp,
    ComputeRootOp,
    FuseOp,
    ParallelOp,
    Primitive,
    ReorderOp,
    RFactorOp,
    ScheduleOp,
    SplitOp,
    TensorizeOp,
    TileOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.support.diagnostics import DiagnosticError

# ----------------------------------------------------------------------------------------------
# Axes, relations, stages
# ----------------------------------------------------------------------------------------------


@dataclass(eq=False)
class IterVar:
    """One loop axis of a stage. `extent` is nominal (from the whole tensor); a stage computed
    at a consumer's loop iterates a smaller region and recomputes extents from its root axes."""

    name: str
    extent: int
    reduce: bool
    annotation: str | None = None
    annotated_by: Operation | None = None

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
    attach: str = "root"  # "root" | "inline" | "at"
    attach_stage: Stage | None = None
    attach_var: IterVar | None = None
    attached_by: Operation | None = None
    is_output: bool = False
    arg_index: int | None = None

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


# ----------------------------------------------------------------------------------------------
# The state a schedule is applied to
# ----------------------------------------------------------------------------------------------


class ScheduleState:
    """The stages of one te kernel (a func.func) and the effect of the primitives so far."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.stages: list[Stage] = []
        self.by_name: dict[str, Stage] = {}
        self.by_value: dict[SSAValue, Stage] = {}
        self.schedule_ops: list[ScheduleOp] = []
        block = fn.body.block
        for k, arg in enumerate(block.args):
            self._add(Stage(placeholder_name(k), arg, None, arg_index=k))
        const_count = 0
        for op in block.ops:
            if isinstance(op, ComputeOp):
                self._add(self._compute_stage(op.stage_name, op))
            elif isinstance(op, ExternOp):
                for k, r in enumerate(op.results):
                    name = op.stage_name if len(op.results) == 1 else f"{op.stage_name}.{k}"
                    self._add(Stage(name, r, op))
            elif isinstance(op, ConstantOp):
                self._add(Stage(f"const{const_count}", op.result, op))
                const_count += 1
            elif isinstance(op, ScheduleOp):
                self.schedule_ops.append(op)
        ret = block.last_op
        self.outputs: list[SSAValue] = list(ret.operands) if isinstance(ret, func.ReturnOp) else []
        for v in self.outputs:
            if v in self.by_value:
                self.by_value[v].is_output = True

    def _add(self, stage: Stage) -> None:
        if stage.name in self.by_name:
            raise DiagnosticError(stage.op, f"two stages are named '{stage.name}'")
        self.stages.append(stage)
        self.by_name[stage.name] = stage
        self.by_value[stage.value] = stage

    @staticmethod
    def _compute_stage(name: str, op: ComputeOp) -> Stage:
        root = [IterVar(n, e, False) for n, e in zip(op.spatial_names, op.shape, strict=True)]
        root += [IterVar(n, e, True) for n, e in zip(op.reduce_names, op.reduce_shape, strict=True)]
        return Stage(name, op.result, op, root=root, leaves=list(root))

    # -- lookups with diagnostics ----------------------------------------------------------

    def stage(self, prim: Operation, name: str, compute: bool = True) -> Stage:
        stage = self.by_name.get(name)
        if stage is None:
            known = ", ".join(f"'{s.name}'" for s in self.stages)
            raise DiagnosticError(prim, f"{prim.name}: no stage named '{name}' (stages: {known})")
        if compute and stage.compute is None:
            what = "a placeholder" if stage.is_placeholder else "not a te.compute"
            raise DiagnosticError(prim, f"{prim.name}: stage '{name}' is {what}")
        return stage

    @staticmethod
    def leaf(prim: Operation, stage: Stage, name: str) -> IterVar:
        for v in stage.leaves:
            if v.name == name:
                return v
        if stage.find(name) is not None:
            raise DiagnosticError(
                prim, f"{prim.name}: axis '{name}' of '{stage.name}' was already split or fused"
            )
        leaves = ", ".join(v.name for v in stage.leaves)
        raise DiagnosticError(
            prim, f"{prim.name}: stage '{stage.name}' has no axis '{name}' (its loops: {leaves})"
        )

    @staticmethod
    def fresh(prim: Operation, stage: Stage, names: Iterable[str]) -> None:
        names = list(names)
        if len(set(names)) != len(names):
            raise DiagnosticError(prim, f"{prim.name}: new axis names repeat: {names}")
        for n in names:
            if stage.find(n) is not None:
                raise DiagnosticError(
                    prim, f"{prim.name}: stage '{stage.name}' already has an axis '{n}'"
                )

    # -- applying a schedule ---------------------------------------------------------------

    def apply_all(self) -> None:
        for sched in self.schedule_ops:
            for prim in sched.primitives:
                self.apply(prim)
        self.finalize()

    def apply(self, prim: Primitive) -> None:
        handler = _HANDLERS.get(type(prim))
        if handler is None:
            raise DiagnosticError(prim, f"{prim.name} is not a schedule primitive")
        handler(self, prim)

    # loop structure

    def do_split(self, prim: SplitOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        var = self.leaf(prim, stage, prim.axis.data)
        factor, nparts = prim.factor_value, prim.nparts_value
        if (factor is None) == (nparts is None):
            raise DiagnosticError(prim, "te.split takes exactly one of a factor and nparts")
        given = factor if factor is not None else nparts
        assert given is not None
        if given < 1:
            raise DiagnosticError(prim, f"te.split: the factor must be >= 1, got {given}")
        self._no_annotation(prim, var)
        self.split(prim, stage, var, factor, nparts, prim.outer.data, prim.inner.data)

    def split(
        self,
        prim: Operation,
        stage: Stage,
        var: IterVar,
        factor: int | None,
        nparts: int | None,
        outer_name: str,
        inner_name: str,
    ) -> tuple[IterVar, IterVar]:
        self.fresh(prim, stage, [outer_name, inner_name])
        outer_ext, inner_ext = split_extents(var.extent, factor, nparts)
        outer = IterVar(outer_name, outer_ext, var.reduce)
        inner = IterVar(inner_name, inner_ext, var.reduce)
        stage.relations.append(Split(var, outer, inner, factor, nparts))
        pos = stage.leaves.index(var)
        stage.leaves[pos : pos + 1] = [outer, inner]
        return outer, inner

    def do_tile(self, prim: TileOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        axes = [a.data for a in prim.axes.data]
        factors = [int(f) for f in prim.factors.get_values()]
        names = [r.data for r in prim.new_axes.data]
        if len(axes) != 2 or len(factors) != 2 or len(names) != 4:
            raise DiagnosticError(
                prim, "te.tile takes two axes, two factors and names four new axes"
            )
        if min(factors) < 1:
            raise DiagnosticError(prim, f"te.tile: factors must be >= 1, got {factors}")
        x, y = (self.leaf(prim, stage, a) for a in axes)
        if x is y:
            raise DiagnosticError(prim, "te.tile: the two axes must differ")
        for v in (x, y):
            self._no_annotation(prim, v)
        self.fresh(prim, stage, names)
        xo, xi = self.split(prim, stage, x, factors[0], None, names[0], names[2])
        yo, yi = self.split(prim, stage, y, factors[1], None, names[1], names[3])
        self.reorder(stage, [xo, yo, xi, yi])

    def do_fuse(self, prim: FuseOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        names = [a.data for a in prim.axes.data]
        if len(names) < 2:
            raise DiagnosticError(prim, "te.fuse needs at least two axes")
        vars_ = [self.leaf(prim, stage, n) for n in names]
        positions = [stage.leaves.index(v) for v in vars_]
        if positions != list(range(positions[0], positions[0] + len(vars_))):
            raise DiagnosticError(
                prim,
                f"te.fuse: axes {names} of '{stage.name}' must be adjacent loops, outermost first",
            )
        if len({v.reduce for v in vars_}) != 1:
            raise DiagnosticError(prim, "te.fuse: cannot fuse a spatial and a reduction axis")
        for v in vars_:
            self._no_annotation(prim, v)
        fused_name = prim.fused.data
        self.fresh(prim, stage, [fused_name])
        acc = vars_[0]
        for k, v in enumerate(vars_[1:], start=1):
            last = k == len(vars_) - 1
            name = fused_name if last else f"{fused_name}.{k}"
            fused = IterVar(name, acc.extent * v.extent, v.reduce)
            stage.relations.append(Fuse(acc, v, fused))
            pos = stage.leaves.index(acc)
            stage.leaves[pos : pos + 2] = [fused]
            acc = fused

    def do_reorder(self, prim: ReorderOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        names = [a.data for a in prim.axes.data]
        if len(set(names)) != len(names):
            raise DiagnosticError(prim, f"te.reorder: axes repeat: {names}")
        self.reorder(stage, [self.leaf(prim, stage, n) for n in names])

    @staticmethod
    def reorder(stage: Stage, order: list[IterVar]) -> None:
        slots = sorted(stage.leaves.index(v) for v in order)
        for slot, v in zip(slots, order, strict=True):
            stage.leaves[slot] = v

    # annotations

    @staticmethod
    def _no_annotation(prim: Operation, var: IterVar) -> None:
        if var.annotation is not None:
            raise DiagnosticError(
                prim, f"{prim.name}: axis '{var.name}' is already marked {var.annotation}"
            )

    def _annotate(self, prim: Primitive, what: str) -> None:
        stage = self.stage(prim, prim.stage_name)
        var = self.leaf(prim, stage, prim.axis.data)  # type: ignore[attr-defined]
        if what == "vectorize" and var.reduce:
            raise DiagnosticError(
                prim,
                f"te.vectorize: cannot vectorize the reduction axis '{var.name}' of "
                f"'{stage.name}' (rfactor it first)",
            )
        if what == "parallel" and var.reduce:
            raise DiagnosticError(
                prim,
                f"te.parallel: the reduction axis '{var.name}' of '{stage.name}' cannot run in "
                "parallel (its iterations update the same element; rfactor it first)",
            )
        self._no_annotation(prim, var)
        var.annotation = what
        var.annotated_by = prim

    def do_vectorize(self, prim: VectorizeOp) -> None:
        self._annotate(prim, "vectorize")

    def do_parallel(self, prim: ParallelOp) -> None:
        self._annotate(prim, "parallel")

    def do_unroll(self, prim: UnrollOp) -> None:
        self._annotate(prim, "unroll")

    def do_bind(self, prim: BindOp) -> None:
        self._annotate(prim, f"bind({prim.thread.data})")

    def do_tensorize(self, prim: TensorizeOp) -> None:
        self._annotate(prim, f"tensorize({prim.intrinsic.data})")

    # placement

    def do_compute_at(self, prim: ComputeAtOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        target = self.stage(prim, prim.target.data)
        if stage is target:
            raise DiagnosticError(prim, "te.compute_at: a stage cannot be computed at itself")
        var = self.leaf(prim, target, prim.axis.data)
        stage.attach, stage.attach_stage, stage.attach_var = "at", target, var
        stage.attached_by = prim

    def do_compute_inline(self, prim: ComputeInlineOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        compute = stage.compute
        assert compute is not None
        if compute.reduce_kind is not None:
            raise DiagnosticError(
                prim, f"te.compute_inline: '{stage.name}' is a reduction and cannot be inlined"
            )
        if stage.is_output:
            raise DiagnosticError(
                prim, f"te.compute_inline: '{stage.name}' is a kernel output and needs its buffer"
            )
        for reader in self.readers(stage):
            if not isinstance(reader.op, ComputeOp):
                raise DiagnosticError(
                    prim,
                    f"te.compute_inline: '{stage.name}' is read by the extern '{reader.name}', "
                    "which needs a buffer",
                )
        stage.attach, stage.attach_stage, stage.attach_var = "inline", None, None
        stage.attached_by = prim

    def do_compute_root(self, prim: ComputeRootOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        stage.attach, stage.attach_stage, stage.attach_var = "root", None, None
        stage.attached_by = prim

    # new stages

    def do_cache_write(self, prim: CacheWriteOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        compute = stage.compute
        assert compute is not None
        for v in stage.reduce_root:
            if v not in stage.leaves or v.annotation is not None:
                raise DiagnosticError(
                    prim,
                    f"te.cache_write must come before the reduction axes of '{stage.name}' are "
                    "scheduled",
                )
        new_name = prim.result.data
        if new_name in self.by_name:
            raise DiagnosticError(prim, f"te.cache_write: a stage '{new_name}' already exists")
        # the computation moves to the new stage; the old one becomes a copy of it
        local = compute.clone()
        local.properties["tag"] = _str(new_name)
        Rewriter.insert_op(local, InsertPoint.before(compute))
        copy = _copy_compute(stage.name, local.result, compute.spatial_names)
        Rewriter.insert_op(copy, InsertPoint.before(compute))
        compute.result.replace_all_uses_with(copy.result)
        Rewriter.erase_op(compute)
        self._retarget(stage, copy)
        stage.root = [v for v in stage.root if not v.reduce]
        stage.leaves = [v for v in stage.leaves if not v.reduce]
        new_stage = self._compute_stage(new_name, local)
        self._insert_stage(new_stage, before=stage)

    def do_cache_read(self, prim: CacheReadOp) -> None:
        stage = self.stage(prim, prim.stage_name, compute=False)
        readers = [self.stage(prim, r.data) for r in prim.readers.data]
        new_name = prim.result.data
        if new_name in self.by_name:
            raise DiagnosticError(prim, f"te.cache_read: a stage '{new_name}' already exists")
        if not readers:
            raise DiagnosticError(prim, "te.cache_read needs at least one reader")
        first_reader = None
        for reader in readers:
            compute = reader.compute
            assert compute is not None
            reads = [
                op
                for op in compute.block.ops
                if isinstance(op, ReadOp) and op.tensor == stage.value
            ]
            if not reads:
                raise DiagnosticError(
                    prim, f"te.cache_read: '{reader.name}' does not read '{stage.name}'"
                )
            if first_reader is None or _before(compute, first_reader):
                first_reader = compute
        assert first_reader is not None
        panel = prim.panel
        if panel is not None:
            axis, factor = panel
            rank = len(stage.shape)
            if not 0 <= axis < rank:
                raise DiagnosticError(
                    prim,
                    f"te.cache_read: panel axis {axis} is out of range for the rank-{rank} "
                    f"tensor '{stage.name}'",
                )
            if factor <= 0:
                raise DiagnosticError(
                    prim, f"te.cache_read: the panel width must be positive, got {factor}"
                )
            copy = _panel_compute(new_name, stage.value, axis, factor)
        else:
            names = [f"ax{k}" for k in range(len(stage.shape))]
            copy = _copy_compute(new_name, stage.value, names)
        Rewriter.insert_op(copy, InsertPoint.before(first_reader))
        for reader in readers:
            compute = reader.compute
            assert compute is not None
            for op in list(compute.block.ops):
                if isinstance(op, ReadOp) and op.tensor == stage.value:
                    if panel is None:
                        op.operands[0] = copy.result
                    else:
                        _read_panel(op, copy.result, *panel)
        self._insert_stage(
            self._compute_stage(new_name, copy), before=self.by_value[first_reader.result]
        )

    def do_rfactor(self, prim: RFactorOp) -> None:
        stage = self.stage(prim, prim.stage_name)
        compute = stage.compute
        assert compute is not None
        kind = compute.reduce_kind
        if kind is None:
            raise DiagnosticError(prim, f"te.rfactor: '{stage.name}' is not a reduction")
        var = self.leaf(prim, stage, prim.axis.data)
        if not var.reduce:
            raise DiagnosticError(
                prim, f"te.rfactor: '{var.name}' is not a reduction axis of '{stage.name}'"
            )
        new_name = prim.result.data
        if new_name in self.by_name:
            raise DiagnosticError(prim, f"te.rfactor: a stage '{new_name}' already exists")
        reduce_rels = [r for r in stage.relations if _touches_reduce(r)]
        split: Split | None = None
        if var in stage.reduce_root:
            if reduce_rels and any(_relation_uses(r, var) for r in reduce_rels):
                raise DiagnosticError(prim, "te.rfactor: the axis was already split")
        else:
            if len(reduce_rels) != 1 or not isinstance(reduce_rels[0], Split):
                raise DiagnosticError(
                    prim,
                    f"te.rfactor needs '{var.name}' to be a reduction axis of '{stage.name}' or "
                    "one half of one split of it",
                )
            split = reduce_rels[0]
            sibling = split.outer if var is split.inner else split.inner
            if sibling not in stage.leaves or var not in stage.leaves:
                raise DiagnosticError(prim, "te.rfactor: the split's halves must both be loops")
        for v in stage.leaves:
            if v.reduce and v.annotation is not None:
                raise DiagnosticError(
                    prim, f"te.rfactor: the reduction axis '{v.name}' is annotated {v.annotation}"
                )
        rf, new_compute = _build_rfactor(stage, compute, var, split, new_name)
        Rewriter.insert_op(rf, InsertPoint.before(compute))
        Rewriter.insert_op(new_compute, InsertPoint.before(compute))
        compute.result.replace_all_uses_with(new_compute.result)
        Rewriter.erase_op(compute)
        self._retarget(stage, new_compute)
        # the stage keeps its spatial loops; its only reduction axis is now `var`
        stage.relations = [r for r in stage.relations if not _touches_reduce(r)]
        new_var = IterVar(var.name, var.extent if split is None else split.inner.extent, True)
        if split is not None and var is split.outer:
            new_var.extent = split.outer.extent
        stage.root = [v for v in stage.root if not v.reduce] + [new_var]
        stage.leaves = [v for v in stage.leaves if not v.reduce] + [new_var]
        self._insert_stage(self._compute_stage(new_name, rf), before=stage)

    def _retarget(self, stage: Stage, op: ComputeOp) -> None:
        del self.by_value[stage.value]
        stage.op, stage.value = op, op.result
        self.by_value[op.result] = stage
        self.outputs = [op.result if v is stage.value else v for v in self.outputs]
        ret = self.fn.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            self.outputs = list(ret.operands)

    def _insert_stage(self, stage: Stage, before: Stage) -> None:
        if stage.name in self.by_name:
            raise DiagnosticError(stage.op, f"a stage '{stage.name}' already exists")
        self.stages.insert(self.stages.index(before), stage)
        self.by_name[stage.name] = stage
        self.by_value[stage.value] = stage

    # -- whole-schedule checks -----------------------------------------------------------------

    def readers(self, stage: Stage) -> list[Stage]:
        """Stages whose formula (or extern call) reads this stage's tensor directly."""
        found: list[Stage] = []
        for use in stage.value.uses:
            op = use.operation
            while op is not None and not isinstance(op, ComputeOp | ExternOp):
                op = op.parent_op()
            if op is None:
                continue
            for r in op.results:
                reader = self.by_value.get(r)
                if reader is not None and reader not in found:
                    found.append(reader)
        return found

    def effective_readers(self, stage: Stage) -> list[Stage]:
        """Readers after inlining: an inlined reader is replaced by its own readers."""
        out: list[Stage] = []
        todo = self.readers(stage)
        seen: set[int] = set()
        while todo:
            r = todo.pop(0)
            if id(r) in seen:
                continue
            seen.add(id(r))
            if r.attach == "inline":
                todo.extend(self.readers(r))
            elif r not in out:
                out.append(r)
        return out

    def finalize(self) -> None:
        for stage in self.stages:
            if stage.compute is None:
                continue
            last = stage.leaves[-1] if stage.leaves else None
            parallel = [v for v in stage.leaves if v.annotation == "parallel"]
            for v in stage.leaves:
                if v.annotation == "vectorize" and v is not last:
                    raise DiagnosticError(
                        v.annotated_by,
                        f"te.vectorize: '{v.name}' is not the innermost loop of '{stage.name}'",
                    )
            if len(parallel) > 1:
                raise DiagnosticError(
                    parallel[1].annotated_by,
                    f"te.parallel: '{stage.name}' already has the parallel loop "
                    f"'{parallel[0].name}' (nested parallel loops are not supported)",
                )
            if stage.attach == "at":
                self._check_attach(stage)

    def _check_attach(self, stage: Stage) -> None:
        prim = stage.attached_by
        target, var = stage.attach_stage, stage.attach_var
        assert target is not None and var is not None
        if target.attach == "inline":
            raise DiagnosticError(
                prim, f"te.compute_at: the target '{target.name}' is inlined and has no loops"
            )
        if var not in target.leaves:
            raise DiagnosticError(
                prim,
                f"te.compute_at: the loop '{var.name}' of '{target.name}' was split or fused "
                "afterwards (schedule compute_at after the loops of its target)",
            )
        readers = self.effective_readers(stage)
        if target not in readers:
            raise DiagnosticError(
                prim, f"te.compute_at: '{target.name}' does not read '{stage.name}'"
            )
        others = [r.name for r in readers if r is not target]
        if others:
            raise DiagnosticError(
                prim,
                f"te.compute_at: '{stage.name}' is also read by {', '.join(others)}; it can "
                f"only be computed inside its one reader",
            )
        if var.annotation == "vectorize":
            raise DiagnosticError(
                prim, f"te.compute_at: cannot compute inside the vectorized loop '{var.name}'"
            )
        # no cycles, and no parallel loop nested in another
        seen = {id(stage)}
        outer: Stage | None = target
        while outer is not None:
            if id(outer) in seen:
                raise DiagnosticError(prim, "te.compute_at: the stages are attached in a cycle")
            seen.add(id(outer))
            outer = outer.attach_stage if outer.attach == "at" else None
        if any(v.annotation == "parallel" for v in stage.leaves) and self._inside_parallel(stage):
            v = next(v for v in stage.leaves if v.annotation == "parallel")
            raise DiagnosticError(
                v.annotated_by,
                f"te.parallel: the parallel loop '{v.name}' of '{stage.name}' would run inside "
                "another parallel loop",
            )

    @staticmethod
    def _inside_parallel(stage: Stage) -> bool:
        while stage.attach == "at":
            target, var = stage.attach_stage, stage.attach_var
            assert target is not None and var is not None
            pos = target.leaves.index(var)
            if any(v.annotation == "parallel" for v in target.leaves[: pos + 1]):
                return True
            stage = target
        return False


def _str(value: str):  # noqa: ANN202 - tiny helper
    from xdsl.dialects.builtin import StringAttr

    return StringAttr(value)


def _before(a: Operation, b: Operation) -> bool:
    block = a.parent_block()
    assert block is not None and block is b.parent_block()
    for op in block.ops:
        if op is a:
            return True
        if op is b:
            return False
    return False


def _touches_reduce(rel: Relation) -> bool:
    return (rel.parent if isinstance(rel, Split) else rel.fused).reduce


def _relation_uses(rel: Relation, var: IterVar) -> bool:
    if isinstance(rel, Split):
        return var in (rel.parent, rel.outer, rel.inner)
    return var in (rel.outer, rel.inner, rel.fused)


def _copy_compute(tag: str, source: SSAValue, names: list[str]) -> ComputeOp:
    """tag[i...] = source[i...]."""
    t = source.type
    assert isinstance(t, TensorType)
    block = make_compute_block(len(names), names)
    read = ReadOp(source, list(block.args))
    block.add_ops([read, YieldOp(read.result)])
    return ComputeOp(tag, t, names, Region(block))


def _panel_compute(tag: str, source: SSAValue, axis: int, factor: int) -> ComputeOp:
    """tag[o, rest..., i] = source[rest with axis = o * factor + i], zero past the axis' end:
    the axis split by `factor`, its outer part first and its inner part last."""
    t = source.type
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    extent = shape[axis]
    rest = [k for k in range(len(shape)) if k != axis]
    names = [f"ax{axis}o", *(f"ax{k}" for k in rest), f"ax{axis}i"]
    block = make_compute_block(len(names), names)
    outer, *rest_args, inner = block.args
    f = exprs.constant(factor, exprs.INDEX)
    mul = exprs.binary("*", outer, f.results[0])
    idx = exprs.binary("+", mul.results[0], inner)
    block.add_ops([f, mul, idx])
    indices = list(rest_args)
    indices.insert(axis, idx.results[0])
    read = ReadOp(source, indices)
    block.add_op(read)
    value = read.result
    if extent % factor:
        limit = exprs.constant(extent, exprs.INDEX)
        inside = exprs.compare_infix("<", idx.results[0], limit.results[0])
        zero = exprs.constant(0, t.element_type)
        sel = exprs.select(inside.results[0], read.result, zero.results[0])
        block.add_ops([limit, inside, zero, sel])
        value = sel.results[0]
    block.add_op(YieldOp(value))
    packed = [-(-extent // factor), *(shape[k] for k in rest), factor]
    return ComputeOp(tag, TensorType(t.element_type, packed), names, Region(block))


def _read_panel(read: ReadOp, packed: SSAValue, axis: int, factor: int) -> None:
    """Rewrite `src[.., x, ..]` (x at `axis`) into `packed[x // factor, .., x % factor]`."""
    indices = list(read.indices)
    x = indices.pop(axis)
    f = exprs.constant(factor, exprs.INDEX)
    div = exprs.binary("floordiv", x, f.results[0])
    rem = exprs.binary("rem", x, f.results[0])
    new = ReadOp(packed, [div.results[0], *indices, rem.results[0]])
    Rewriter.insert_op([f, div, rem], InsertPoint.before(read))
    Rewriter.replace_op(read, new)


def _build_rfactor(
    stage: Stage, compute: ComputeOp, var: IterVar, split: Split | None, name: str
) -> tuple[ComputeOp, ComputeOp]:
    """(rf, new C): rf[s..., v] = reduce over the other reduction axes of the formula with the
    factored root rebuilt from v and its sibling; C[s...] = reduce over v of rf[s..., v]."""
    from xdsl.dialects import arith

    kind = compute.reduce_kind
    assert kind is not None
    spatial = list(compute.spatial_names)
    reduce_names = list(compute.reduce_names)
    reduce_ext = list(compute.reduce_shape)
    elt = compute.element_type
    factored_root = split.parent if split is not None else var
    root_pos = reduce_names.index(factored_root.name)
    others = [
        (n, e)
        for k, (n, e) in enumerate(zip(reduce_names, reduce_ext, strict=True))
        if k != root_pos
    ]
    if split is not None:
        sibling = split.outer if var is split.inner else split.inner
        rf_reduce = [*others, (sibling.name, sibling.extent)]
        v_extent = var.extent
    else:
        sibling = None
        rf_reduce = others
        v_extent = var.extent
    rf_names = [*spatial, var.name] + [n for n, _ in rf_reduce]
    block = make_compute_block(len(rf_names), rf_names)
    args = dict(zip(rf_names, block.args, strict=True))
    # rebuild the old block arguments in the new block
    mapping: dict[SSAValue, SSAValue] = {}
    old_args = list(compute.block.args)
    for k, n in enumerate(spatial):
        mapping[old_args[k]] = args[n]
    guard = None
    for k, n in enumerate(reduce_names):
        old = old_args[len(spatial) + k]
        if k != root_pos:
            mapping[old] = args[n]
            continue
        if split is None:
            mapping[old] = args[var.name]
            continue
        assert sibling is not None
        inner_ext = split.inner.extent
        outer_v = args[split.outer.name]
        inner_v = args[split.inner.name]
        c = arith.ConstantOp.from_int_and_width(inner_ext, exprs.INDEX)
        mul = arith.MuliOp(outer_v, c.result)
        add = arith.AddiOp(mul.result, inner_v)
        block.add_ops([c, mul, add])
        mapping[old] = add.result
        if factored_root.extent % inner_ext:
            limit = arith.ConstantOp.from_int_and_width(factored_root.extent, exprs.INDEX)
            cmp = arith.CmpiOp(add.result, limit.result, "slt")
            block.add_ops([limit, cmp])
            guard = cmp.result
    for op in compute.block.ops:
        if isinstance(op, YieldOp):
            value = mapping.get(op.value, op.value)
            if guard is not None:
                ident = exprs.constant(exprs.identity_value(kind, elt), elt)
                sel = arith.SelectOp(guard, value, ident.results[0])
                block.add_ops([ident, sel])
                value = sel.result
            block.add_op(YieldOp(value))
            break
        block.add_op(op.clone(mapping))
    rf_shape = [*compute.shape, v_extent]
    rf = ComputeOp(
        name,
        TensorType(elt, rf_shape),
        rf_names,
        Region(block),
        kind if rf_reduce else None,
        [e for _, e in rf_reduce],
    )
    # C[s...] = reduce over v of rf[s..., v]
    c_names = [*spatial, var.name]
    cblock = make_compute_block(len(c_names), c_names)
    read = ReadOp(rf.result, list(cblock.args))
    cblock.add_ops([read, YieldOp(read.result)])
    new_c = ComputeOp(
        stage.name,
        TensorType(elt, list(compute.shape)),
        c_names,
        Region(cblock),
        kind,
        [v_extent],
        compute.template_name,
    )
    return rf, new_c


_HANDLERS = {
    SplitOp: ScheduleState.do_split,
    TileOp: ScheduleState.do_tile,
    FuseOp: ScheduleState.do_fuse,
    ReorderOp: ScheduleState.do_reorder,
    VectorizeOp: ScheduleState.do_vectorize,
    ParallelOp: ScheduleState.do_parallel,
    UnrollOp: ScheduleState.do_unroll,
    BindOp: ScheduleState.do_bind,
    TensorizeOp: ScheduleState.do_tensorize,
    ComputeAtOp: ScheduleState.do_compute_at,
    ComputeInlineOp: ScheduleState.do_compute_inline,
    ComputeRootOp: ScheduleState.do_compute_root,
    CacheWriteOp: ScheduleState.do_cache_write,
    CacheReadOp: ScheduleState.do_cache_read,
    RFactorOp: ScheduleState.do_rfactor,
}


def block_of(fn: func.FuncOp) -> Block:
    return fn.body.block
