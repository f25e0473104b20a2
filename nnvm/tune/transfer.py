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

import math
from dataclasses import dataclass, field

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

    def for_task(self, task: Task) -> list[Row]:
        """Rows of the other workloads of the task's family."""
        by_workload = self.rows.get(family(task), {})
        return [r for w, rows in by_workload.items() if w != task.workload for r in rows]


__all__ = ["MIN_ROWS", "Row", "TransferHistory", "family"]
