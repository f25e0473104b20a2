"""A scheduled layer kernel measured on the cycle model, for the tuner (`Target.simulate_kernel`):
lowered as accel-lower-layers lowers it (lower-te-to-accel, the layer's DRAM image, tokens),
its stream timed by the simulator without data (a stream's timing does not depend on its
data), and with `check` run once on seeded random data and compared with the numpy int8
reference. A schedule the lowering refuses (its buffers do not fit) is a `build` failure."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func

from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.conv2d_program import LayerPlan
from nnvm.targets.accel.reference import conv2d_int8
from nnvm.targets.accel.simulator import simulate
from nnvm.targets.accel.te_layer import layer_of_kernel
from nnvm.targets.accel.te_plan import plan_of_kernel, virtual_threads_of
from nnvm.targets.accel.tiling import Conv2dLayer


def simulate_layer_kernel(cfg: AccelConfig, fn: func.FuncOp, check: bool) -> tuple[float, str, str]:
    """(seconds at the config's clock, error code, detail) of a scheduled layer kernel."""
    layer = layer_of_kernel(fn)
    if layer is None:
        return 0.0, "build", "not an accelerator layer kernel (te_layer.layer_kernel makes those)"
    sched = next((op for op in fn.body.block.ops if isinstance(op, ScheduleOp)), None)
    if sched is None:
        return 0.0, "build", "the layer kernel has no te.schedule"
    try:
        plan = plan_of_kernel(cfg, layer, fn, None, virtual_threads_of(sched))
    except DiagnosticError as err:
        return 0.0, "build", err.message
    except UserError as err:  # the stream around the program: placing it, its tokens
        return 0.0, "run", err.message
    try:
        seconds = simulate(cfg, plan.insns, None).seconds(cfg)
    except UserError as err:
        return 0.0, "run", err.message
    if check and not _exact(plan, layer):
        return seconds, "wrong", "the output differs from the numpy int8 reference"
    return seconds, "ok", ""


def _exact(plan: LayerPlan, layer: Conv2dLayer) -> bool:
    """Does the program compute the reference's int8 output on seeded random data?"""
    rng = np.random.default_rng(0)
    L = layer
    x = rng.integers(-128, 128, (L.batch, L.in_channels, L.height, L.width), dtype=np.int8)
    w = rng.integers(-128, 128, (L.out_channels, L.in_channels, L.kernel_h, L.kernel_w))
    bias = rng.integers(-(1 << 15), 1 << 15, L.out_channels).astype(np.int32)
    shifts = rng.integers(4, 12, L.out_channels)
    dram = plan.pack(x, w.astype(np.int8), bias, shifts)
    simulate(plan.cfg, plan.insns, dram)
    want = conv2d_int8(x, w.astype(np.int8), bias, L.stride, L.padding, shifts, False)
    return bool(np.array_equal(plan.output(dram), want))
