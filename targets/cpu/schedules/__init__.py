"""The CPU target's default schedules: the generic engine (scheduler.py) plus the x86
templates, keyed by the template tag an op's te_compute sets (TVM's strategy table)."""

from __future__ import annotations

from xdsl.dialects import func

from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.dialects.te.stages import schedule_applies as applies
from nnvm.support.config_space import ConfigSpace
from nnvm.targets.cpu.schedules.conv2d import conv2d_nchw, conv2d_nchwc
from nnvm.targets.cpu.schedules.dense import dense
from nnvm.targets.cpu.schedules.dense_dot_bytes import dense_dot_bytes
from nnvm.targets.cpu.schedules.matmul import matmul
from nnvm.targets.cpu.schedules.pool import pool
from nnvm.targets.cpu.schedules.scheduler import (
    MIN_PARALLEL_WORK,
    NATIVE_BITS,
    KernelScheduler,
    Template,
)

TEMPLATES: dict[str, Template] = {
    "conv2d_nchwc": Template(conv2d_nchwc, min_rank=5),
    "conv2d_nchw": Template(conv2d_nchw, min_rank=4),
    "depthwise_conv2d_nchw": Template(conv2d_nchw, min_rank=4),
    "dense": Template(dense, cache_write=False, min_rank=1),
    "dense_dot_bytes": Template(dense_dot_bytes, min_rank=2, intermediate=True),
    "matmul": Template(matmul, min_rank=2, intermediate=True),
    "pool": Template(pool, cache_write=False, min_rank=3, reduce_kinds=("sum", "max")),
}


# ----------------------------------------------------------------------------------------------
# Helpers


def default_schedule(
    fn: func.FuncOp,
    vector_bits: int = NATIVE_BITS,
    min_parallel_work: int | None = MIN_PARALLEL_WORK,
) -> ScheduleOp:
    scheduler = KernelScheduler(fn, vector_bits, min_parallel_work, TEMPLATES)
    prims = scheduler.plan(templates=True)
    if not applies(fn, prims):
        prims = scheduler.plan(templates=False)
        if not applies(fn, prims):
            prims = []
    return ScheduleOp(prims)


def configured_schedule(
    fn: func.FuncOp,
    config: ConfigSpace,
    vector_bits: int = NATIVE_BITS,
    min_parallel_work: int | None = MIN_PARALLEL_WORK,
) -> ScheduleOp | None:
    """The templates' schedule with the knob values `config` answers (a tuner's candidate),
    None where it does not apply to the kernel; `config` records the knobs it was asked."""
    scheduler = KernelScheduler(fn, vector_bits, min_parallel_work, TEMPLATES, config)
    prims = scheduler.plan(templates=True)
    return ScheduleOp(prims) if applies(fn, prims) else None
