"""cache_write, cache_read: new stages that copy a tensor (a local result, or an operand read
into its own buffer, optionally packed into panels), made by rewriting the kernel's te ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import ComputeOp, ReadOp, YieldOp, make_compute_block
from nnvm.dialects.te.schedule import CacheReadOp, CacheWriteOp
from nnvm.support.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from nnvm.dialects.te.stages import ScheduleState


def apply_cache_write(state: ScheduleState, prim: CacheWriteOp) -> None:
    stage = state.stage(prim, prim.stage_name)
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
    if new_name in state.by_name:
        raise DiagnosticError(prim, f"te.cache_write: a stage '{new_name}' already exists")
    # the computation moves to the new stage; the old one becomes a copy of it
    local = compute.clone()
    local.properties["tag"] = StringAttr(new_name)
    Rewriter.insert_op(local, InsertPoint.before(compute))
    copy = _copy_compute(stage.name, local.result, compute.spatial_names)
    Rewriter.insert_op(copy, InsertPoint.before(compute))
    compute.result.replace_all_uses_with(copy.result)
    Rewriter.erase_op(compute)
    state.retarget(stage, copy)
    stage.root = [v for v in stage.root if not v.reduce]
    stage.leaves = [v for v in stage.leaves if not v.reduce]
    new_stage = state.compute_stage(new_name, local)
    state.insert_stage(new_stage, before=stage)


def apply_cache_read(state: ScheduleState, prim: CacheReadOp) -> None:
    stage = state.stage(prim, prim.stage_name, compute=False)
    readers = [state.stage(prim, r.data) for r in prim.readers.data]
    new_name = prim.result.data
    if new_name in state.by_name:
        raise DiagnosticError(prim, f"te.cache_read: a stage '{new_name}' already exists")
    if not readers:
        raise DiagnosticError(prim, "te.cache_read needs at least one reader")
    first_reader = None
    for reader in readers:
        compute = reader.compute
        assert compute is not None
        reads = [
            op for op in compute.block.ops if isinstance(op, ReadOp) and op.tensor == stage.value
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
    new_stage = state.compute_stage(new_name, copy)
    new_stage.scope = prim.scope_name
    state.insert_stage(new_stage, before=state.by_value[first_reader.result])


def _before(a: Operation, b: Operation) -> bool:
    block = a.parent_block()
    assert block is not None and block is b.parent_block()
    for op in block.ops:
        if op is a:
            return True
        if op is b:
            return False
    return False


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


HANDLERS = {CacheWriteOp: apply_cache_write, CacheReadOp: apply_cache_read}
