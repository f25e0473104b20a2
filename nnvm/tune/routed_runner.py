"""A runner for a run whose tasks live on several targets (`nnvm-tune --device`): each
task is measured where its target is, the host's kernels on the host runner (local, Dask or
RPC) and a device's on the device's cycle model (SimulatorRunner)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from nnvm.support.errors import UserError
from nnvm.support.tuning_log import TrialRecord
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.simulator_runner import SimulatorRunner
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task


class RoutedRunner:
    """`measure` and `close` as a runner; `host` measures the host's tasks."""

    def __init__(self, host, options: MeasureOptions):
        self.host = host
        self.simulator = SimulatorRunner(options)

    @staticmethod
    def check(tasks: Sequence[Task]) -> None:
        """Refuse, before any trial, a device task with nowhere to be measured."""
        for task in tasks:
            if not task.target.is_host and not task.target.has_cycle_model:
                raise UserError(
                    f"{task.name}: device '{task.target.kind}' has no cycle model, and the "
                    "tuner measures device kernels only there"
                )

    def measure(
        self,
        task: Task,
        space: TaskSpace,
        candidates: Sequence[Candidate],
        best_s: float = math.inf,
    ) -> list[TrialRecord]:
        if task.target.is_host:
            return self.host.measure(task, space, candidates, best_s)
        return self.simulator.measure(task, space, candidates, best_s)

    def close(self) -> None:
        self.host.close()
        self.simulator.close()
