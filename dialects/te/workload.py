"""A te kernel's workload key: what a tuning record is filed under. Two kernels with the same
computation over the same shapes share it whatever their names or schedules (a model's
repeated blocks are one tuning task, and a record made on one model applies to another)."""

from __future__ import annotations

import hashlib

from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.support.ir_text import ir_text

KERNEL_NAME = "kernel"


def workload_key(fn: func.FuncOp) -> str:
    """A structural hash (hex, 16 digits) of the te kernel `fn` without its schedule."""
    clone = fn.clone()
    clone.properties["sym_name"] = StringAttr(KERNEL_NAME)
    clone.properties.pop("sym_visibility", None)
    for op in list(clone.body.block.ops):
        if isinstance(op, ScheduleOp):
            op.detach()
            op.erase()
    return hashlib.sha256(ir_text(clone).encode()).hexdigest()[:16]


def workload_shapes(fn: func.FuncOp) -> list[list[int]]:
    """The shapes of a kernel's arguments and results, in call order (inputs, then outputs)."""
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    return [list(t.get_shape()) for t in types]  # type: ignore[attr-defined]
