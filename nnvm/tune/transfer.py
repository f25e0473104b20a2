"""What tuning other tasks taught: measurements of earlier tasks that share a task's template
and knobs, as times relative to their own default, so the cost model of a new task starts from
them instead of from random trials (TVM's `load_history` for its XGBoost tuner; Ansor and
MetaSchedule pre-train their models the same way).

A tile that suits one convolution of a network tends to suit the next one of the same template
(the same register budget, the same vector width); what differs with the shape, the model
learns from the shape features `CostModel` adds to each row. The search uses the history only
through the model's ranking, and still measures the task's own default first: a wrong prior
costs trials, never a slower kernel."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from nnvm.support.tuning_log import TuningLog
from nnvm.tune.space import Candidate
from nnvm.tune.task import Task

MIN_ROWS = 16
"""Rows of other tasks from which the history is worth a model before the task's own
measurements (fewer: the search starts with random trials, as without history)."""


def family(task: Task) -> tuple[str, str, tuple[str, ...]]:
    """Tasks whose measurements transfer: same target, template and knob names."""
    return task.target.description, task.template, tuple(sorted(task.knobs))


@dataclass
class Row:
    task: Task
    candidate: Candidate
    relative: float
    """seconds / the task's default's seconds."""


@dataclass
class TransferHistory:
    """Measurements of every task seen so far, by task family."""

    rows: dict[tuple, dict[str, list[Row]]] = field(default_factory=dict)

    def add(self, task: Task, candidate: Candidate, seconds: float, default_s: float) -> None:
        if not (math.isfinite(seconds) and math.isfinite(default_s) and default_s > 0):
            return
        by_workload = self.rows.setdefault(family(task), {})
        by_workload.setdefault(task.workload, []).append(Row(task, candidate, seconds / default_s))

    def add_measured(
        self, task: Task, measured: dict[str, tuple[Candidate, float]], default_key: str
    ) -> None:
        """A task's measurements (config key -> (candidate, seconds)), once its default is."""
        default = measured.get(default_key)
        if default is None:
            return
        self.rows.get(family(task), {}).pop(task.workload, None)
        for c, s in measured.values():
            self.add(task, c, s, default[1])

    def add_log(self, tasks: Sequence[Task], log: TuningLog) -> int:
        """Measurements of other runs (`nnvm-tune --history LOG`): each workload of `log` that
        is not one of `tasks` joins the family of the tasks whose target it was measured for
        and whose knobs its configs name, its times relative to its first trial (a run
        measures a task's default first). Returns the rows added."""
        own = {t.workload for t in tasks}
        by_workload: dict[str, list] = {}
        for r in log.trials:
            if r.workload not in own:
                by_workload.setdefault(r.workload, []).append(r)
        added = 0
        for workload, records in by_workload.items():
            default = records[0]
            names = {k for r in records for k in r.config}
            like = next(
                (
                    t
                    for t in tasks
                    if t.target.description == default.target and names and names <= set(t.knobs)
                ),
                None,
            )
            if like is None or not default.ok:
                continue
            # a stand-in for the logged task: its shapes and work, the family's knobs
            stand_in = dataclasses.replace(
                like,
                name=default.task,
                workload=workload,
                shapes=default.shapes,
                flops=default.flops,
                default_config=dict(default.config),
            )
            for r in records:
                if r.ok:
                    self.add(stand_in, Candidate(r.config, r.schedule), r.seconds, default.seconds)
                    added += 1
        return added

    def for_task(self, task: Task) -> list[Row]:
        """Rows of the other workloads of the task's family."""
        by_workload = self.rows.get(family(task), {})
        return [r for w, rows in by_workload.items() if w != task.workload for r in rows]


__all__ = ["MIN_ROWS", "Row", "TransferHistory", "family"]
