"""apply-tuning-log: give each te kernel without a schedule the fastest schedule a tuning log
holds for its workload on this target (a record *is* te schedule IR, parsed here), so the
default schedule only runs where nothing was tuned. Run before apply-default-schedule:

    nnvm-opt kernels.mlir -p 'apply-tuning-log{log=tune.jsonl},apply-default-schedule'

Counted (nnvm-opt --mlir-pass-statistics; build() counts in lib.build_times): kernels tuned, kernels with
no record, and stale records (the schedule no longer applies to the kernel: the workload key
matched but the te lowering changed under it), which fall back to the default with a warning.
A log whose records are all for other targets warns too: tuned on another machine, it would
otherwise be silently ignored."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import ParseError

from nnvm.dialects.te.analysis import is_te_kernel
from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.dialects.te.stages import schedule_applies
from nnvm.dialects.te.workload import workload_key
from nnvm.support.errors import UserError
from nnvm.support.pass_statistics import record_statistic
from nnvm.support.target import Target, parse_target
from nnvm.support.tuning_log import TrialRecord, read_log


class TuningLogWarning(UserWarning):
    """A tuning log was read with skipped lines, stale records, or none for this target."""


@dataclass
class TuningCounts:
    tuned: int = 0
    untuned: int = 0
    stale: int = 0


@dataclass(frozen=True)
class ApplyTuningLogPass(ModulePass):
    """Inserts the best logged `te.schedule` into each te kernel that has none."""

    name = "apply-tuning-log"

    log: str = ""
    """The tuning log (JSON lines, nnvm-tune's output)."""

    target: str | Target | None = None
    """Records of this target apply (object or target string); default: host."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.log:
            raise UserError("apply-tuning-log needs a log: apply-tuning-log{log=PATH}")
        counts = TuningCounts()
        best = logged_schedules(self.log, parse_target(self.target))
        schedule_from_log(ctx, op, best, counts, self.log)
        for name, value, what in [
            ("tuned", counts.tuned, "kernels given a logged schedule"),
            ("untuned", counts.untuned, "kernels with no record (default schedule)"),
            ("stale", counts.stale, "records that no longer apply (default schedule)"),
        ]:
            record_statistic(op, self.name, name, value, what)


def schedule_from_log(
    ctx: Context,
    module: ModuleOp,
    best: dict[str, TrialRecord],
    counts: TuningCounts,
    log_name: str,
) -> None:
    """Insert the record's schedule into each unscheduled te kernel of `module` that has one
    in `best` (workload key -> record), counting what happened."""
    for fn in list(module.ops):
        if not isinstance(fn, func.FuncOp) or not is_te_kernel(fn):
            continue
        if any(isinstance(o, ScheduleOp) for o in fn.body.block.ops):
            continue
        record = best.get(workload_key(fn))
        if record is None:
            counts.untuned += 1
            continue
        sched = _parse_schedule(ctx, record)
        if sched is None or not schedule_applies(fn, list(sched.body.block.ops)):
            counts.stale += 1
            warnings.warn(
                f"{log_name}: the record for {record.task} (workload {record.workload}) no "
                "longer applies to the kernel; it keeps its default schedule",
                TuningLogWarning,
                stacklevel=3,
            )
            continue
        ret = fn.body.block.last_op
        assert ret is not None
        Rewriter.insert_op(sched, InsertPoint.before(ret))
        counts.tuned += 1


def logged_schedules(
    log_path: str | os.PathLike[str], target: Target, others: Sequence[Target] = ()
) -> dict[str, TrialRecord]:
    """The best record of each workload for `target` in the log at `log_path`, warning about
    the lines the reader skipped and when the log has records but none for this target (nor
    for `others`, the build's other targets, which read the same log)."""
    log = read_log(log_path)
    for message in log.warnings:
        warnings.warn(message, TuningLogWarning, stacklevel=3)
    best = log.best(target.description)
    theirs = any(log.best(o.description) for o in others)
    if log.trials and not best and not theirs:
        others = ", ".join(sorted(log.targets()))
        warnings.warn(
            f"the tuning log has no successful record for this target ({target.description}); "
            f"its records are for: {others}",
            TuningLogWarning,
            stacklevel=3,
        )
    return best


def _parse_schedule(ctx: Context, record: TrialRecord) -> ScheduleOp | None:
    try:
        op = Parser(ctx, record.schedule, "<tuning record>").parse_op()
    except ParseError:
        return None
    return op if isinstance(op, ScheduleOp) else None
