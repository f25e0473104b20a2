"""rfactor: a reduction becomes a stage that reduces all but one reduction axis (kept as a spatial
axis, which can be vectorized or parallel) and a stage that reduces over it; rewrites te ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import ComputeOp, ReadOp, YieldOp, make_compute_block
from nnvm.dialects.te.schedule import RFactorOp
from nnvm.dialects.te.stage_tree import IterVar, Relation, Split, Stage, touches_reduce
from nnvm.support.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from nnvm.dialects.te.stages import ScheduleState


def apply_rfactor(state: ScheduleState, prim: RFactorOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    compute = stage.compute
    assert compute is not None
    kind = compute.reduce_kind
    if kind is None:
        raise DiagnosticError(prim, f"te.rfactor: '{stage.name}' is not a reduction")
    var = state.leaf(prim, stage, prim.axis.data)
    if not var.reduce:
        raise DiagnosticError(
            prim, f"te.rfactor: '{var.name}' is not a reduction axis of '{stage.name}'"
        )
    new_name = prim.result.data
    if new_name in state.by_name:
        raise DiagnosticError(prim, f"te.rfactor: a stage '{new_name}' already exists")
    reduce_rels = [r for r in stage.relations if touches_reduce(r)]
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
    state.retarget(stage, new_compute)
    # the stage keeps its spatial loops; its only reduction axis is now `var`
    stage.relations = [r for r in stage.relations if not touches_reduce(r)]
    new_var = IterVar(var.name, var.extent if split is None else split.inner.extent, True)
    if split is not None and var is split.outer:
        new_var.extent = split.outer.extent
    stage.root = [v for v in stage.root if not v.reduce] + [new_var]
    stage.leaves = [v for v in stage.leaves if not v.reduce] + [new_var]
    rf_stage = state.compute_stage(new_name, rf)
    if split is not None and split.parent.extent % split.inner.extent:
        by_name = {v.name: v for v in rf_stage.root}
        parent = IterVar(split.parent.name, split.parent.extent, True)
        tail = Split(parent, by_name[split.outer.name], by_name[split.inner.name], None, None)
        rf_stage.tails.append(tail)
    state.insert_stage(rf_stage, before=stage)


def _relation_uses(rel: Relation, var: IterVar) -> bool:
    if isinstance(rel, Split):
        return var in (rel.parent, rel.outer, rel.inner)
    return var in (rel.outer, rel.inner, rel.fused)


def _build_rfactor(
    stage: Stage, compute: ComputeOp, var: IterVar, split: Split | None, name: str
) -> tuple[ComputeOp, ComputeOp]:
    """(rf, new C): rf[s..., v] = reduce over the other reduction axes of the formula with the
    factored root rebuilt from v and its sibling; C[s...] = reduce over v of rf[s..., v]."""
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
        mapping[old] = add.result  # (a tail past the extent: the rf stage's `tails` bound it)
    for op in compute.block.ops:
        if isinstance(op, YieldOp):
            block.add_op(YieldOp(mapping.get(op.value, op.value)))
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


HANDLERS = {RFactorOp: apply_rfactor}
