"""vectorize, parallel, unroll, bind, tensorize: mark a leaf loop for the lowering; a loop takes
one annotation, and a reduction loop can be neither vectorized nor parallel. prefetch adds
prefetches to a loop's body (any number, beside its annotation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from nnvm.dialects.te.schedule import (
    BindOp,
    ParallelOp,
    PrefetchOp,
    Primitive,
    TensorizeOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.dialects.te.stage_tree import IterVar
from nnvm.support.diagnostics import DiagnosticError

if TYPE_CHECKING:
    from nnvm.dialects.te.stages import ScheduleState


def check_unannotated(prim: Operation, var: IterVar) -> None:
    if var.annotation is not None:
        raise DiagnosticError(
            prim, f"{prim.name}: axis '{var.name}' is already marked {var.annotation}"
        )


def annotate(state: ScheduleState, prim: Primitive, what: str) -> None:
    stage = state.stage(prim, prim.stage_name)
    var = state.leaf(prim, stage, prim.axis.data)  # type: ignore[attr-defined]
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
    check_unannotated(prim, var)
    var.annotation = what
    var.annotated_by = prim


def apply_vectorize(state: ScheduleState, prim: VectorizeOp) -> None:
    annotate(state, prim, "vectorize")


def apply_parallel(state: ScheduleState, prim: ParallelOp) -> None:
    annotate(state, prim, "parallel")


def apply_unroll(state: ScheduleState, prim: UnrollOp) -> None:
    annotate(state, prim, "unroll")


def apply_bind(state: ScheduleState, prim: BindOp) -> None:
    annotate(state, prim, f"bind({prim.thread.data})")


def apply_tensorize(state: ScheduleState, prim: TensorizeOp) -> None:
    annotate(state, prim, f"tensorize({prim.intrinsic.data})")


def apply_prefetch(state: ScheduleState, prim: PrefetchOp) -> None:
    """Record the prefetch on the loop; the tensor must be one the stage reads."""
    stage = state.stage(prim, prim.stage_name)
    var = state.leaf(prim, stage, prim.axis.data)
    tensor = state.stage(prim, prim.tensor.data, compute=False)
    compute = stage.compute
    reads = [] if compute is None else [op for op in compute.block.ops if op.name == "te.read"]
    if not any(op.tensor is tensor.value for op in reads):
        raise DiagnosticError(prim, f"te.prefetch: '{stage.name}' does not read '{tensor.name}'")
    if prim.spread is not None:
        shared = state.leaf(prim, stage, prim.spread.data)
        if shared is var:
            raise DiagnosticError(prim, "te.prefetch: a loop cannot spread its own prefetch")
    var.prefetch.append((tensor, prim.offset.value.data, prim))


HANDLERS = {
    VectorizeOp: apply_vectorize,
    ParallelOp: apply_parallel,
    UnrollOp: apply_unroll,
    BindOp: apply_bind,
    TensorizeOp: apply_tensorize,
    PrefetchOp: apply_prefetch,
}
