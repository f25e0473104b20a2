"""accel-lower-layers: each graph-level `accel.conv2d` / `accel.dense` becomes an `accel.layer`
holding its program (te_plan.plan_layer_te: the layer's te kernel, its default schedule for
the tiles chosen for the buffers, lowered to micro-ops and instructions with their dependency
tokens) and the DRAM image layout the runtime packs the
operands into. Shifts are read per output channel from the image (they are params, known only
when the model runs). A layer that does not fit is a located error naming the buffer and sizes."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Region
from xdsl.rewriter import Rewriter

from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.support.pass_statistics import record_statistic
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.conv2d_program import LayerPlan, recorded_regions
from nnvm.targets.accel.dialect import LayerOp, ProgramOp, i64_array
from nnvm.targets.accel.graph_ops import Conv2dOp, DenseOp, layer_of
from nnvm.targets.accel.pass_options import AccelPass
from nnvm.targets.accel.program_ir import ir_to_program, program_to_ir
from nnvm.targets.accel.te_plan import plan_layer_te
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling

SCHEDULE = "schedule"
"""An accel.conv2d / accel.dense attribute: the te.schedule text its layer kernel takes instead
of the default (accel-apply-tuning-log sets it from a tuning record); it is part of the kernel's
text, so the kernel cache keeps tuned and untuned programs apart."""


def geometry(plan: LayerPlan) -> list[int]:
    L = plan.layer
    return [
        L.batch,
        L.in_channels,
        L.height,
        L.width,
        L.out_channels,
        L.kernel_h,
        L.kernel_w,
        L.stride,
        L.padding,
    ]


def layer_op(op: Conv2dOp | DenseOp, plan: LayerPlan) -> LayerOp:
    """The accel.layer running `plan` in place of `op`."""
    (program,) = program_to_ir(plan.insns, plan.uops).ops
    assert isinstance(program, ProgramOp)
    program.detach()
    t = plan.tiling or Tiling(0, 0, 0, 0, "schedule")  # a tuned schedule's own loops
    return LayerOp.build(
        operands=[list(op.operands)],
        result_types=[op.result.type],
        regions=[Region(Block([program]))],
        properties={
            "geometry": i64_array(geometry(plan)),
            "tiling": i64_array([t.tob, t.tib, t.toh, t.tow]),
            "order": StringAttr(t.order),
            "virtual_threads": IntegerAttr(plan.virtual_threads, i64),
            "dram": i64_array(plan.dram_layout),
        },
    )


@dataclass(frozen=True)
class AccelLowerLayers(AccelPass):
    """accel.conv2d / accel.dense -> accel.layer with its program; options: config (an accel
    config JSON; default VTA's), virtual_threads (1 or 2)."""

    name = "accel-lower-layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cfg = self.accel_config()
        count = 0
        for layer in [o for o in op.walk() if isinstance(o, Conv2dOp | DenseOp)]:
            geometry_or_why = layer_of(layer)
            if isinstance(geometry_or_why, str):
                raise DiagnosticError(layer, f"{layer.name}: {geometry_or_why}")
            schedule = layer.attributes.get(SCHEDULE)
            try:
                plan = plan_layer_te(
                    cfg,
                    geometry_or_why,
                    False,
                    self.virtual_threads,
                    schedule=schedule.data if isinstance(schedule, StringAttr) else None,
                )
            except UserError as err:
                raise DiagnosticError(layer, f"{layer.name}: {err.message}") from None
            new = layer_op(layer, plan)
            new.location = layer.location
            Rewriter.replace_op(layer, new)
            count += 1
        record_statistic(op, self.name, "layers", count, "layers given a program")


def plan_of(op: LayerOp, cfg: AccelConfig) -> LayerPlan:
    """The plan an accel.layer holds (its program as written, so an edited program is what
    runs); a DRAM layout that does not match its geometry is a located error."""
    layer = Conv2dLayer(*(int(v) for v in op.geometry.get_values()))
    tob, tib, toh, tow = (int(v) for v in op.tiling.get_values())
    tiling = Tiling(tob, tib, toh, tow, op.order.data) if tob else None
    try:
        insns, uops = ir_to_program(op)
        dram = [int(v) for v in op.dram.get_values()]
        regions, total = recorded_regions(cfg, layer, len(uops), dram)
    except UserError as err:
        raise DiagnosticError(op, f"accel.layer: {err.message}") from None
    return LayerPlan(cfg, layer, tiling, op.virtual_threads.value.data, insns, uops, regions, total)
