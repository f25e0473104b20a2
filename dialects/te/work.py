"""What a te kernel must do at least: its floating-point work and the bytes it must move.

`flops` counts 2 per multiply-accumulate of every sum reduction whose formula multiplies
(matmul, conv, dense, LSTM gates), and 1 per element of every other stage's arithmetic
operation; index arithmetic does not count. `bytes` is the kernel's arguments and results,
each read or written once: the traffic no schedule can avoid; `read_bytes` is the arguments'
part of it. Target-neutral: the efficiency report (bench/efficiency.py) sets them against a
machine's roofs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import TensorType

from nnvm.dialects.te.ops import ComputeOp

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

    def __add__(self, other: Work) -> Work:
        return Work(
            self.flops + other.flops,
            self.bytes + other.bytes,
            self.read_bytes + other.read_bytes,
        )


def _tensor_bytes(t) -> int:
    if not isinstance(t, TensorType):
        return 0
    width = getattr(t.element_type, "width", None)
    bits = width.data if width is not None else 32
    return int(np.prod(t.get_shape(), dtype=np.int64)) * max(1, bits // 8)


def stage_flops(op: ComputeOp) -> int:
    points = int(np.prod(op.shape, dtype=np.int64)) * int(np.prod(op.reduce_shape, dtype=np.int64))
    arithmetic = sum(1 for o in op.block.walk() if isinstance(o, _FLOAT_OPS))
    if op.reduce_kind == "sum" and any(isinstance(o, arith.MulfOp) for o in op.block.walk()):
        return 2 * points + max(0, arithmetic - 1) * points
    return max(arithmetic, 1 if op.reduce_kind else 0) * points


def kernel_work(fn: func.FuncOp) -> Work:
    """The work of one te kernel (a function whose body holds te.compute stages)."""
    flops = sum(stage_flops(op) for op in fn.body.walk() if isinstance(op, ComputeOp))
    read = sum(_tensor_bytes(a.type) for a in fn.body.block.args)
    written = sum(_tensor_bytes(t) for t in fn.function_type.outputs.data)
    return Work(flops, read + written, read)
