"""apply-default-schedule: give every te kernel without a schedule its target's default one, as
`te.schedule` IR (so it can be printed, diffed and replaced by a tuned one). The schedules
themselves live with each target (targets/cpu/schedules/ for the CPU)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te.analysis import is_te_kernel
from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.support.target import Target, parse_target


@dataclass(frozen=True)
class ApplyDefaultSchedulePass(ModulePass):
    """Adds `te.schedule` with the target's default schedule to te kernels that have none."""

    name = "apply-default-schedule"

    target: str | Target | None = None
    """The target (object, or target string such as 'llvm -mcpu=x86-64-v3'); default: host."""

    min_parallel_work: int | None = None
    """Stages with less work (elements x reduction extent) get no parallel loop (None: the
    target's default)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = parse_target(self.target)
        knobs = (
            {} if self.min_parallel_work is None else {"min_parallel_work": self.min_parallel_work}
        )
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or not is_te_kernel(fn):
                continue
            if any(isinstance(o, ScheduleOp) for o in fn.body.block.ops):
                continue
            sched = target.default_schedule(fn, **knobs)
            if sched is None:
                continue
            ret = fn.body.block.last_op
            assert ret is not None
            Rewriter.insert_op(sched, InsertPoint.before(ret))
