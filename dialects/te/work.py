"""What a te kernel must do at least: its floating-point work and the bytes it must move.

`flops` counts 2 per multiply-accumulate of every sum reduction whose formula multiplies
(matmul, conv, dense, LSTM gates), and 1 per element of every other stage's arithmetic
operation; index arithmetic does not count. `bytes` is the kernel's arguments and results,
each read or written once: the traffic no schedule can avoid; `read_bytes` is the arguments'
part of it. `rereads` is the traffic a recurrence adds: a weight that a chain of products
reads whole, each step needing the step before (an LSTM's recurrent matrix, once per time
step), is read again at every step after the first, from whatever cache holds it; no schedule
can reuse one step's read for the next. Target-neutral: the efficiency report
(bench/efficiency.py) sets them against a machine's roofs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import TensorType

from nnvm.dialects.te.ops import ComputeOp, ReadOp

_FLOAT_OPS = (
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.NegfOp,
)


@dataclass(frozen=True)
class Work:
    flops: int
    bytes: int
    read_bytes: int = 0
    """Of `bytes`, those of the arguments (read); the rest are results (written)."""
    rereads: tuple[tuple[int, int], ...] = ()
    """(bytes read again, size of the tensor re-read) of each argument a recurrence re-reads:
    the tensor's size is the working set a cache must hold between its reads."""

    def __add__(self, other: Work) -> Work:
        return Work(
            self.flops + other.flops,
            self.bytes + other.bytes,
            self.read_bytes + other.read_bytes,
            self.rereads + other.rereads,
        )


def _tensor_bytes(t) -> int:
    if not isinstance(t, TensorType):
        return 0
    width = getattr(t.element_type, "width", None)
    bits = width.data if width is not None else 32
    return int(np.prod(t.get_shape(), dtype=np.int64)) * max(1, bits // 8)


def stage_flops(op: ComputeOp) -> int:
    points = _points(op)
    arithmetic = sum(1 for o in op.block.walk() if isinstance(o, _FLOAT_OPS))
    if _is_product_sum(op):
        return 2 * points + max(0, arithmetic - 1) * points
    return max(arithmetic, 1 if op.reduce_kind else 0) * points


def kernel_work(fn: func.FuncOp) -> Work:
    """The work of one te kernel (a function whose body holds te.compute stages)."""
    flops = sum(stage_flops(op) for op in fn.body.walk() if isinstance(op, ComputeOp))
    read = sum(_tensor_bytes(a.type) for a in fn.body.block.args)
    written = sum(_tensor_bytes(t) for t in fn.function_type.outputs.data)
    return Work(flops, read + written, read, recurrence_rereads(fn))


def recurrence_rereads(fn: func.FuncOp) -> tuple[tuple[int, int], ...]:
    """(bytes, tensor size) re-read by recurrences: for each argument, the product
    reductions that read all of it (at least one multiply-add per element: a matrix-vector
    product reads the whole matrix; one that reads a slice does fewer), counted when each
    depends on an earlier one (its input is that step's result, through any stages)."""
    stages = [op for op in fn.body.walk() if isinstance(op, ComputeOp)]
    reads = {op: {o.tensor for o in op.block.walk() if isinstance(o, ReadOp)} for op in stages}
    depends: dict[ComputeOp, set[ComputeOp]] = {}
    for op in stages:  # program order: a stage's producers come first
        found: set[ComputeOp] = set()
        for t in reads[op]:
            producer = t.owner
            if isinstance(producer, ComputeOp) and producer in depends:
                found.add(producer)
                found |= depends[producer]
        depends[op] = found
    products = [op for op in stages if _is_product_sum(op)]
    rereads = []
    for arg in fn.body.block.args:
        if not isinstance(arg.type, TensorType):
            continue
        elements = int(np.prod(arg.type.get_shape(), dtype=np.int64))
        readers = [op for op in products if arg in reads[op] and _points(op) >= elements]
        steps = sum(1 for i, op in enumerate(readers) if any(r in depends[op] for r in readers[:i]))
        if steps:
            size = _tensor_bytes(arg.type)
            rereads.append((steps * size, size))
    return tuple(rereads)


def _is_product_sum(op: ComputeOp) -> bool:
    return op.reduce_kind == "sum" and any(isinstance(o, arith.MulfOp) for o in op.block.walk())


def _points(op: ComputeOp) -> int:
    """The stage's (output element, reduction step) pairs: a product's multiply-adds."""
    return int(np.prod(op.shape, dtype=np.int64)) * int(np.prod(op.reduce_shape, dtype=np.int64))
