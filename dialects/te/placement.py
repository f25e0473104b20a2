"""compute_at, compute_inline, compute_root: where a stage is computed, and the checks that an
attachment is legal once the whole schedule is known."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import (
    ComputeAtOp,
    ComputeInlineOp,
    ComputeRootOp,
    DoubleBufferOp,
    SetScopeOp,
)
from nnvm.dialects.te.stage_tree import Stage
from nnvm.support.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from nnvm.dialects.te.stages import ScheduleState


def apply_compute_at(state: ScheduleState, prim: ComputeAtOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    target = state.stage(prim, prim.target.data)
    if stage is target:
        raise DiagnosticError(prim, "te.compute_at: a stage cannot be computed at itself")
    var = state.leaf(prim, target, prim.axis.data)
    stage.attach, stage.attach_stage, stage.attach_var = "at", target, var
    stage.attached_by = prim


def apply_compute_inline(state: ScheduleState, prim: ComputeInlineOp) -> None:
    stage = state.stage(prim, prim.stage_name)
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
    for reader in state.readers(stage):
        if not isinstance(reader.op, ComputeOp):
            raise DiagnosticError(
                prim,
                f"te.compute_inline: '{stage.name}' is read by the extern '{reader.name}', "
                "which needs a buffer",
            )
    stage.attach, stage.attach_stage, stage.attach_var = "inline", None, None
    stage.attached_by = prim


def apply_compute_root(state: ScheduleState, prim: ComputeRootOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    stage.attach, stage.attach_stage, stage.attach_var = "root", None, None
    stage.attached_by = prim


def apply_set_scope(state: ScheduleState, prim: SetScopeOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    stage.scope = prim.scope_name


def apply_double_buffer(state: ScheduleState, prim: DoubleBufferOp) -> None:
    stage = state.stage(prim, prim.stage_name)
    stage.double_buffer = prim


def check_double_buffer(stage: Stage) -> None:
    """A double-buffered stage is an on-chip copy computed at a loop (the buffers alternate
    between that loop's iterations)."""
    prim = stage.double_buffer
    if prim is None:
        return
    if stage.scope in (None, "global"):
        raise DiagnosticError(
            prim,
            f"te.double_buffer: '{stage.name}' is not in an on-chip memory scope (give it one "
            "with te.set_scope or te.cache_read ... scope)",
        )
    if stage.attach != "at":
        raise DiagnosticError(
            prim,
            f"te.double_buffer: '{stage.name}' is not computed at a loop (te.compute_at); "
            "its buffers alternate between that loop's iterations",
        )


def check_attach(state: ScheduleState, stage: Stage) -> None:
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
    readers = state.effective_readers(stage)
    if target not in readers:
        raise DiagnosticError(prim, f"te.compute_at: '{target.name}' does not read '{stage.name}'")
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
    if any(v.annotation == "parallel" for v in stage.leaves) and _inside_parallel(stage):
        v = next(v for v in stage.leaves if v.annotation == "parallel")
        raise DiagnosticError(
            v.annotated_by,
            f"te.parallel: the parallel loop '{v.name}' of '{stage.name}' would run inside "
            "another parallel loop",
        )


def _inside_parallel(stage: Stage) -> bool:
    while stage.attach == "at":
        target, var = stage.attach_stage, stage.attach_var
        assert target is not None and var is not None
        pos = target.leaves.index(var)
        if any(v.annotation == "parallel" for v in target.leaves[: pos + 1]):
            return True
        stage = target
    return False


HANDLERS = {
    ComputeAtOp: apply_compute_at,
    ComputeInlineOp: apply_compute_inline,
    ComputeRootOp: apply_compute_root,
    SetScopeOp: apply_set_scope,
    DoubleBufferOp: apply_double_buffer,
}
