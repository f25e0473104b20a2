"""split, tile, fuse, reorder: rewrite a stage's list of leaf loops, outermost first, and record
how its original axes follow from the new ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from nnvm.dialects.te.annotations import check_unannotated
from nnvm.dialects.te.schedule import FuseOp, ReorderOp, SplitOp, TileOp
from nnvm.dialects.te.stage_tree import Fuse, IterVar, Split, Stage, split_extents
from nnvm.support.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from nnvm.dialects.te.stages import ScheduleState


def apply_split(state: ScheduleState, prim: SplitOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    var = state.leaf(prim, stage, prim.axis.data)
    factor, nparts = prim.factor_value, prim.nparts_value
    if (factor is None) == (nparts is None):
        raise DiagnosticError(prim, "te.split takes exactly one of a factor and nparts")
    given = factor if factor is not None else nparts
    assert given is not None
    if given < 1:
        raise DiagnosticError(prim, f"te.split: the factor must be >= 1, got {given}")
    check_unannotated(prim, var)
    split_axis(state, prim, stage, var, factor, nparts, prim.outer.data, prim.inner.data)


def split_axis(
    state: ScheduleState,
    prim: Operation,
    stage: Stage,
    var: IterVar,
    factor: int | None,
    nparts: int | None,
    outer_name: str,
    inner_name: str,
) -> tuple[IterVar, IterVar]:
    """Replace the leaf loop `var` by an outer and an inner loop (parent = outer * |inner| +
    inner); a factor that does not divide the extent leaves a tail for the lowering to bound."""
    state.fresh(prim, stage, [outer_name, inner_name])
    outer_ext, inner_ext = split_extents(var.extent, factor, nparts)
    outer = IterVar(outer_name, outer_ext, var.reduce)
    inner = IterVar(inner_name, inner_ext, var.reduce)
    stage.relations.append(Split(var, outer, inner, factor, nparts))
    pos = stage.leaves.index(var)
    stage.leaves[pos : pos + 1] = [outer, inner]
    return outer, inner


def apply_tile(state: ScheduleState, prim: TileOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    axes = [a.data for a in prim.axes.data]
    factors = [int(f) for f in prim.factors.get_values()]
    names = [r.data for r in prim.new_axes.data]
    if len(axes) != 2 or len(factors) != 2 or len(names) != 4:
        raise DiagnosticError(prim, "te.tile takes two axes, two factors and names four new axes")
    if min(factors) < 1:
        raise DiagnosticError(prim, f"te.tile: factors must be >= 1, got {factors}")
    x, y = (state.leaf(prim, stage, a) for a in axes)
    if x is y:
        raise DiagnosticError(prim, "te.tile: the two axes must differ")
    for v in (x, y):
        check_unannotated(prim, v)
    state.fresh(prim, stage, names)
    xo, xi = split_axis(state, prim, stage, x, factors[0], None, names[0], names[2])
    yo, yi = split_axis(state, prim, stage, y, factors[1], None, names[1], names[3])
    reorder_leaves(stage, [xo, yo, xi, yi])


def apply_fuse(state: ScheduleState, prim: FuseOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    names = [a.data for a in prim.axes.data]
    if len(names) < 2:
        raise DiagnosticError(prim, "te.fuse needs at least two axes")
    vars_ = [state.leaf(prim, stage, n) for n in names]
    positions = [stage.leaves.index(v) for v in vars_]
    if positions != list(range(positions[0], positions[0] + len(vars_))):
        raise DiagnosticError(
            prim,
            f"te.fuse: axes {names} of '{stage.name}' must be adjacent loops, outermost first",
        )
    if len({v.reduce for v in vars_}) != 1:
        raise DiagnosticError(prim, "te.fuse: cannot fuse a spatial and a reduction axis")
    for v in vars_:
        check_unannotated(prim, v)
    fused_name = prim.fused.data
    state.fresh(prim, stage, [fused_name])
    acc = vars_[0]
    for k, v in enumerate(vars_[1:], start=1):
        last = k == len(vars_) - 1
        name = fused_name if last else f"{fused_name}.{k}"
        fused = IterVar(name, acc.extent * v.extent, v.reduce)
        stage.relations.append(Fuse(acc, v, fused))
        pos = stage.leaves.index(acc)
        stage.leaves[pos : pos + 2] = [fused]
        acc = fused


def apply_reorder(state: ScheduleState, prim: ReorderOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    names = [a.data for a in prim.axes.data]
    if len(set(names)) != len(names):
        raise DiagnosticError(prim, f"te.reorder: axes repeat: {names}")
    reorder_leaves(stage, [state.leaf(prim, stage, n) for n in names])


def reorder_leaves(stage: Stage, order: list[IterVar]) -> None:
    """Put the loops of `order` into the slots they occupy, in that order; others stay put."""
    slots = sorted(stage.leaves.index(v) for v in order)
    for slot, v in zip(slots, order, strict=True):
        stage.leaves[slot] = v


HANDLERS = {SplitOp: apply_split, TileOp: apply_tile, FuseOp: apply_fuse, ReorderOp: apply_reorder}
