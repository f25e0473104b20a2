"""Questions schedules ask of a te kernel: who reads a stage, which axes its reads follow,
whether a function is a te kernel at all. Target-neutral; every target's strategies use them."""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te.exprs import constant_value
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


# ----------------------------------------------------------------------------------------------

LaneKind = tuple[str, int]
"""How an index value varies across a vector of a stage's last axis: ("u", m) uniform (the
same in every lane, known to be a multiple of m), or ("l", m) base + lane (unit stride, the
base a multiple of m). The kinds of te-to-loops' vectorizer (lowering/te_to_loops/index_math)."""

_UNKNOWN_MULTIPLE = 1
ANY_MULTIPLE = 1 << 40
"""The multiple an index known to be 0 (a constant 0, a vector's first lane) is."""


def lane_index_kind(v: SSAValue, env: dict[SSAValue, LaneKind], lanes: int) -> LaneKind | None:
    """The kind of index `v` across `lanes` lanes, given its block arguments' kinds in `env`
    (arguments not there are uniform); None where the lanes would read a gather. Division and
    remainder by a multiple of `lanes` of base + lane with an aligned base stay uniform / base +
    lane (NCHW16c's c // 16 and c % 16 of c = 16 j + lane): what index_math folds, so a
    vector the schedule asks for is one the lowering can emit."""
    if v in env:
        return env[v]
    op = v.owner
    if not isinstance(op, Operation):
        return ("u", _UNKNOWN_MULTIPLE)
    if isinstance(op, arith.ConstantOp):
        data = _constant_int(v)
        return None if data is None else ("u", abs(data) or ANY_MULTIPLE)
    kinds = [lane_index_kind(o, env, lanes) for o in op.operands]
    if any(k is None for k in kinds):
        return None
    if all(k[0] == "u" for k in kinds):  # type: ignore[index]
        return ("u", _uniform_multiple(op, kinds))  # type: ignore[arg-type]
    constant = _constant_int(op.operands[1]) if len(op.operands) == 2 else None
    (ka, ma), (kb, mb) = kinds if len(kinds) == 2 else (("v", 0), ("v", 0))  # type: ignore[misc]
    if isinstance(op, arith.AddiOp) and "u" in (ka, kb):
        return ("l", math.gcd(ma, mb))
    if isinstance(op, arith.SubiOp) and kb == "u":
        return ("l", math.gcd(ma, mb))
    if isinstance(op, arith.MuliOp) and constant == 1:
        return (ka, ma)
    aligned = ka == "l" and constant and ma % lanes == 0 and constant % lanes == 0
    if isinstance(op, arith.FloorDivSIOp | arith.DivSIOp | arith.DivUIOp) and aligned:
        return ("u", _UNKNOWN_MULTIPLE)
    if isinstance(op, arith.RemSIOp | arith.RemUIOp) and aligned:
        return ("l", math.gcd(ma, constant))
    return None


def _constant_int(v: SSAValue) -> int | None:
    value = constant_value(v.owner) if isinstance(v.owner, Operation) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _uniform_multiple(op: Operation, kinds: list[LaneKind]) -> int:
    """A multiple an index op of uniform operands is known to be."""
    multiples = [m for _, m in kinds]
    if isinstance(op, arith.MuliOp):
        return min(math.prod(multiples), ANY_MULTIPLE)
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        return math.gcd(*multiples)
    constant = _constant_int(op.operands[1]) if len(op.operands) == 2 else None
    if isinstance(op, arith.FloorDivSIOp | arith.DivSIOp | arith.DivUIOp) and constant:
        return max(multiples[0] // constant, 1) if multiples[0] % constant == 0 else 1
    return _UNKNOWN_MULTIPLE


def index_value(v: SSAValue, env: dict[SSAValue, int]) -> int | None:
    """The value of index `v` with its block arguments at the values in `env` (arguments
    not there count as 0); None for an op other than integer arithmetic."""
    if v in env:
        return env[v]
    op = v.owner
    if not isinstance(op, Operation):
        return 0
    if isinstance(op, arith.ConstantOp):
        return _constant_int(v)
    values = [index_value(o, env) for o in op.operands]
    if any(x is None for x in values) or len(values) != 2:
        return None
    a, b = values  # type: ignore[misc]
    if isinstance(op, arith.AddiOp):
        return a + b
    if isinstance(op, arith.SubiOp):
        return a - b
    if isinstance(op, arith.MuliOp):
        return a * b
    if b == 0:
        return None
    if isinstance(op, arith.FloorDivSIOp):
        return a // b
    if isinstance(op, arith.DivSIOp | arith.DivUIOp):
        return int(a / b)
    if isinstance(op, arith.RemSIOp | arith.RemUIOp):
        return int(math.fmod(a, b))
    if isinstance(op, arith.MaxSIOp):
        return max(a, b)
    if isinstance(op, arith.MinSIOp):
        return min(a, b)
    return None
