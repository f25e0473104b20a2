"""plan-memory: place every intermediate tensor of the graph in one arena, reusing storage once
a tensor is dead (liveness over the graph's op order), computing elementwise kernels in place
when their input dies there, and aligning every storage to 64 bytes.

A kernel that only reshapes its input (row-major data, new shape) is a view: it gets
`nnvm.view`, no storage of its own, and the executor graph reads its input's bytes in its
place; the input then stays live (and is never overwritten in place) while the view is read.
A view the function returns stays a kernel: the result must land in the caller's buffer.

The plan is written into the IR: each op of the graph function that produces intermediates gets
`nnvm.storage = array<i64: id, ...>` and `nnvm.offset = array<i64: bytes, ...>` (one entry per
result), and the function gets `nnvm.memory_plan = {arena_bytes, naive_bytes, storages}`.
Graph inputs, params and the function's results are not in the arena (they are the caller's
buffers)."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.reshape import ReshapeOp
from nnvm.dialects.nnvm.traits import OpPatternKind, pattern_kind
from nnvm.passes.fuse import FUSED_PREFIX, PATTERN_ATTR
from nnvm.passes.graph_utils import is_source
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.pass_statistics import record_statistic

ALIGNMENT = 64
STORAGE_ATTR = "nnvm.storage"
OFFSET_ATTR = "nnvm.offset"
PLAN_ATTR = "nnvm.memory_plan"
VIEW_ATTR = "nnvm.view"


def aligned(nbytes: int) -> int:
    return (nbytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


MAX_TENSOR_BYTES = 1 << 48
"""A tensor larger than this (256 TiB) cannot be planned: offsets are i64 and no machine has
that memory; its producer is named in the error."""


def tensor_bytes(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType), f"cannot plan memory for {t}"
    count = 1
    for d in t.get_shape():
        count *= d
    nbytes = count * numpy_dtype_of(t.element_type).itemsize
    if nbytes > MAX_TENSOR_BYTES or any(d < 0 for d in t.get_shape()):
        owner = value.owner if isinstance(value.owner, Operation) else None
        raise DiagnosticError(owner, f"plan-memory: a {t} tensor needs {nbytes} bytes")
    return nbytes


@dataclass
class Storage:
    ident: int
    size: int
    offset: int = 0


@dataclass
class Planner:
    storages: list[Storage] = field(default_factory=list)
    free: list[Storage] = field(default_factory=list)

    def allocate(self, size: int) -> Storage:
        """Best fit among free storages; else grow the largest free one; else a new one."""
        fitting = [s for s in self.free if s.size >= size]
        if fitting:
            chosen = min(fitting, key=lambda s: s.size)
        elif self.free:
            chosen = max(self.free, key=lambda s: s.size)
            chosen.size = size
        else:
            chosen = Storage(len(self.storages), size)
            self.storages.append(chosen)
            return chosen
        self.free.remove(chosen)
        return chosen

    def release(self, storage: Storage) -> None:
        self.free.append(storage)


def _is_elementwise_kernel(node: Operation, module: ModuleOp) -> bool:
    """Elementwise kernels may write their output over an input that dies with them."""
    if isinstance(node, func.CallOp):
        callee = _callee(module, node.callee)
        kind = callee.attributes.get(PATTERN_ATTR) if callee is not None else None
        return kind is not None and kind.data in (  # type: ignore[attr-defined]
            OpPatternKind.ELEMWISE.label,
            OpPatternKind.BROADCAST.label,
        )
    return pattern_kind(node) <= OpPatternKind.BROADCAST


def _is_view_kernel(node: Operation, module: ModuleOp) -> bool:
    """A call of a kernel whose whole body reshapes its one argument."""
    if not isinstance(node, func.CallOp) or len(node.arguments) != 1:
        return False
    callee = _callee(module, node.callee)
    if callee is None or not callee.body.blocks:
        return False
    body = list(callee.body.block.ops)
    return (
        len(body) == 2
        and isinstance(body[0], ReshapeOp)
        and body[0].operands[0] is callee.body.block.args[0]
        and isinstance(body[1], func.ReturnOp)
        and list(body[1].operands) == [body[0].results[0]]
    )


def _callee(module: ModuleOp, ref: SymbolRefAttr) -> func.FuncOp | None:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == ref.root_reference.data:
            return op
    return None


def plan_function(fn: func.FuncOp, module: ModuleOp) -> tuple[int, int, int]:
    """Plan one graph function; returns (arena bytes, naive bytes, number of storages)."""
    ops = [op for op in fn.body.block.ops if not isinstance(op, func.ReturnOp)]
    returned = {v for op in fn.body.block.ops if isinstance(op, func.ReturnOp) for v in op.operands}
    position = {op: k for k, op in enumerate(ops)}

    # a view's result is its input's bytes: liveness and storage belong to the root value
    root: dict[SSAValue, SSAValue] = {}
    for op in ops:
        op.attributes.pop(VIEW_ATTR, None)
        if _is_view_kernel(op, module) and op.results[0] not in returned:
            source = op.operands[0]
            root[op.results[0]] = root.get(source, source)
            op.attributes[VIEW_ATTR] = UnitAttr()

    def base(v: SSAValue) -> SSAValue:
        return root.get(v, v)

    def planned(v: SSAValue) -> bool:
        owner = v.owner
        return owner in position and not is_source(owner) and v not in returned

    last_use: dict[SSAValue, int] = {}
    for op in ops:
        for v in op.operands:
            if planned(base(v)):
                last_use[base(v)] = max(last_use.get(base(v), -1), position[op])
    planner = Planner()
    storage_of: dict[SSAValue, Storage] = {}
    naive = 0
    for op in ops:
        if VIEW_ATTR in op.attributes:
            continue  # no storage of its own; its input's liveness covers its readers
        results = [r for r in op.results if planned(r)]
        if not results:
            # a graph output (or a source): nothing to place, but what it reads last dies here
            for v in dict.fromkeys(base(o) for o in op.operands if planned(base(o))):
                if last_use.get(v) == position[op] and v in storage_of:
                    planner.release(storage_of[v])
            continue
        for r in results:
            if not isinstance(r.type, TensorType):
                raise DiagnosticError(
                    op,
                    f"plan-memory plans the tensors of graph functions; {op.name} in "
                    f"@{fn.sym_name.data} gives {r.type} (run it before bufferizing lowerings)",
                )
        dying = [base(v) for v in op.operands if planned(base(v))]
        dying = [v for v in dict.fromkeys(dying) if last_use.get(v) == position[op]]
        inplace_candidates = list(dying) if _is_elementwise_kernel(op, module) else []
        for r in results:
            need = aligned(tensor_bytes(r))
            naive += need
            # in place over a dying storage only when every operand reading it (the value or
            # a view of it) has the result's type: then each element is read where it is written
            reuse = next(
                (
                    b
                    for b in inplace_candidates
                    if aligned(tensor_bytes(b)) == need
                    and all(v.type == r.type for v in op.operands if base(v) is b)
                ),
                None,
            )
            if reuse is not None:
                inplace_candidates.remove(reuse)
                dying.remove(reuse)
                storage_of[r] = storage_of[reuse]
            else:
                storage_of[r] = planner.allocate(need)
            if last_use.get(r) is None:
                # a result nobody reads: its storage is free right after the op
                dying.append(r)
        for v in dying:
            if v in storage_of:
                planner.release(storage_of[v])
    offset = 0
    for s in planner.storages:
        s.offset = offset
        offset += aligned(s.size)
    for op in ops:
        results = [r for r in op.results if r in storage_of]
        if results:
            op.attributes[STORAGE_ATTR] = DenseArrayBase.from_list(
                i64, [storage_of[r].ident for r in results]
            )
            op.attributes[OFFSET_ATTR] = DenseArrayBase.from_list(
                i64, [storage_of[r].offset for r in results]
            )
    fn.attributes[PLAN_ATTR] = DictionaryAttr(
        {
            "arena_bytes": IntegerAttr(offset, i64),
            "naive_bytes": IntegerAttr(naive, i64),
            "storages": DenseArrayBase.from_list(i64, [s.size for s in planner.storages]),
        }
    )
    return offset, naive, len(planner.storages)


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Assign every intermediate tensor a 64-byte aligned place in one reusable arena."""

    name = "plan-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arena = naive = count = 0
        for fn in op.ops:
            if (
                isinstance(fn, func.FuncOp)
                and fn.body.blocks
                and not fn.sym_name.data.startswith(FUSED_PREFIX)
            ):
                a, n, c = plan_function(fn, op)
                arena, naive, count = arena + a, naive + n, count + c
        record_statistic(op, self.name, "planned-bytes", arena, "bytes in the arena")
        record_statistic(op, self.name, "naive-bytes", naive, "bytes without reuse")
        record_statistic(op, self.name, "storages", count, "distinct storages")
