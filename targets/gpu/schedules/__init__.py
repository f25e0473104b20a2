"""The GPU target family's default schedules: the CPU's stage engine (inlining, templates by
tag) with GPU versions of its generic schedules and GPU templates (TVM's strategy table)."""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func

from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.dialects.te.stages import schedule_applies as applies
from nnvm.targets.cpu.schedules.scheduler import Template
from nnvm.targets.gpu.schedules.generic import BLOCK, GpuScheduler
from nnvm.targets.gpu.schedules.shared_conv import shared_conv
from nnvm.targets.gpu.schedules.shared_tiles import shared_matmul
from nnvm.targets.gpu.schedules.tiled import conv2d

TEMPLATES: dict[str, Template] = {
    "matmul": Template(shared_matmul, min_rank=2, intermediate=True),
    "dense": Template(shared_matmul, min_rank=2),
    "conv2d_nchw": Template(conv2d, min_rank=4),
    "depthwise_conv2d_nchw": Template(conv2d, min_rank=4),
    "conv2d_nchwc": Template(shared_conv, min_rank=5),
}


def default_schedule(
    fn: func.FuncOp,
    target: Any,
    block: int = BLOCK,
    shared: bool = True,
    lanes: int = 0,
    unroll_steps: bool = False,
    **_: Any,
) -> ScheduleOp:
    """Templates where their tag applies (with shared-memory tiles where the target has shared
    memory and `shared` is on, else their register-only versions), else the generic schedules
    (with private accumulators, else without), else none (every root stage then runs as a
    one-thread kernel: slow, still correct)."""
    block = min(block, target.max_threads)
    shared = shared and "shared" in target.capabilities.memory_scopes
    tries = [(True, True, shared), (True, True, False), (False, True, False), (False, False, False)]
    for templates, private, tiles in tries[0 if shared else 1 :]:
        scheduler = GpuScheduler(
            fn,
            TEMPLATES,
            block=block,
            private=private,
            shared=tiles,
            lanes=lanes,
            unroll_steps=unroll_steps,
        )
        prims = scheduler.plan(templates=templates)
        if applies(fn, prims):
            return ScheduleOp(prims)
    return ScheduleOp([])
