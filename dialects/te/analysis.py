"""Questions schedules ask of a te kernel: who reads a stage, which axes its reads follow,
whether a function is a te kernel at all. Target-neutral; every target's strategies use them."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te.ops import ComputeOp, ConstantOp, ExternOp, ReadOp
from nnvm.dialects.te.schedule import ScheduleOp


def is_te_kernel(fn: func.FuncOp) -> bool:
    """A function whose body holds te ops (the output of lower-to-te)."""
    return not fn.is_declaration and any(
        isinstance(op, ComputeOp | ConstantOp | ExternOp | ScheduleOp) for op in fn.body.block.ops
    )


# ----------------------------------------------------------------------------------------------


def readers(value: SSAValue) -> list[Operation]:
    """The te ops (or the return) that read a tensor."""
    found: list[Operation] = []
    for use in value.uses:
        op: Operation | None = use.operation
        while op is not None and not isinstance(op, ComputeOp | ExternOp | func.ReturnOp):
            op = op.parent_op()
        if op is not None and op not in found:
            found.append(op)
    return found


def gathers_free(op: ComputeOp) -> bool:
    """Can the last axis be vectorized without gathers: does every read either index its
    last dimension by the stage's last axis, or not depend on that axis at all?"""
    if not op.shape:
        return True
    last = op.block.args[len(op.shape) - 1]
    for r in op.block.ops:
        if not isinstance(r, ReadOp) or not r.indices or depends_on(r.indices[-1], last):
            continue
        if any(depends_on(i, last) for i in r.indices[:-1]):
            return False
    return True


def is_elementwise(op: ComputeOp) -> bool:
    """Does every read index the tensor with the stage's own axes (as far as they go), so
    recomputing it per reader costs only its arithmetic?"""
    args = list(op.block.args[: len(op.shape)])
    for r in op.block.ops:
        if isinstance(r, ReadOp) and r.indices:
            idx = list(r.indices)
            tail = args[len(args) - len(idx) :] if len(idx) <= len(args) else None
            if tail is None or any(
                i is not a and not _is_constant_index(i) for i, a in zip(idx, tail, strict=True)
            ):
                return False
    return True


def _is_constant_index(v: SSAValue) -> bool:
    return isinstance(v.owner, Operation) and not v.owner.operands


def innermost_is_spatial(op: ComputeOp) -> bool:
    """Do the reads' last indices follow the last spatial axis (so vectors along it are
    contiguous), rather than a reduction axis?"""
    if not op.shape:
        return False
    last = op.block.args[len(op.shape) - 1]
    reads = [r for r in op.block.ops if isinstance(r, ReadOp) and r.indices]
    if not reads:
        return True
    return all(depends_on(r.indices[-1], last) for r in reads)


def depends_on(v: SSAValue, arg: SSAValue) -> bool:
    if v is arg:
        return True
    owner = v.owner
    if isinstance(owner, Operation):
        return any(depends_on(o, arg) for o in owner.operands)
    return False
