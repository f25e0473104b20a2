"""accel-apply-tuning-log: give each accel.conv2d / accel.dense the schedule a tuning log holds
for its layer kernel on this accelerator (nnvm-tune's records, tuned on the cycle model: the
tiling and the virtual threads), as the op's `schedule` attribute that accel-lower-layers
lowers instead of the default. Counted like apply-tuning-log: layers tuned, layers with no
record, and stale records (the schedule no longer applies), which keep the default.

    nnvm-opt model.mlir -p 'accel-apply-tuning-log{log=tune.jsonl},accel-lower-layers'

build(..., devices=["accel"], tuning_log=PATH) runs it on the accelerator's kernels
(`Target.tuning_passes`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr

from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.passes.apply_tuning_log import TuningCounts, logged_schedules, schedule_from_log
from nnvm.support.errors import UserError
from nnvm.support.ir_text import ir_text
from nnvm.support.pass_statistics import record_statistic
from nnvm.targets.accel.graph_ops import Conv2dOp, DenseOp, layer_of
from nnvm.targets.accel.lower_layers import SCHEDULE
from nnvm.targets.accel.pass_options import AccelPass
from nnvm.targets.accel.target import AccelTarget
from nnvm.targets.accel.te_layer import layer_kernel


@dataclass(frozen=True)
class AccelApplyTuningLog(AccelPass):
    """Sets each accel layer's `schedule` from the best logged record of its layer kernel."""

    name = "accel-apply-tuning-log"

    log: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.log:
            raise UserError("accel-apply-tuning-log needs a log: accel-apply-tuning-log{log=PATH}")
        cfg = self.accel_config()
        target = AccelTarget(config=self.config, virtual_threads=self.virtual_threads)
        best = logged_schedules(self.log, target)
        counts = TuningCounts()
        for layer in [o for o in op.walk() if isinstance(o, Conv2dOp | DenseOp)]:
            geometry = layer_of(layer)
            if isinstance(geometry, str):
                continue  # accel-lower-layers reports it
            kernel = ModuleOp([layer_kernel(cfg, geometry)])
            schedule_from_log(ctx, kernel, best, counts, self.log)
            fn = next(iter(kernel.ops))
            sched = next((o for o in fn.walk() if isinstance(o, ScheduleOp)), None)
            if sched is not None:
                layer.attributes[SCHEDULE] = StringAttr(ir_text(sched))
        for name, value, what in [
            ("tuned", counts.tuned, "layers given a logged schedule"),
            ("untuned", counts.untuned, "layers with no record (default schedule)"),
            ("stale", counts.stale, "records that no longer apply (default schedule)"),
        ]:
            record_statistic(op, self.name, name, value, what)
