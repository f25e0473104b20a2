"""Measurement on a target's cycle model (`Target.simulate_kernel`: the accelerator's
simulator), for tasks of a device nobody has at hand: each candidate's schedule is lowered and
its program timed by the simulator in this process. The model is deterministic, so one round
is the measurement and search comparisons carry no noise; with `check`, each candidate also
runs on data against the target's reference (`wrong` when it differs)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from nnvm.registry import make_context
from nnvm.support.diagnostics import parse_module
from nnvm.support.tuning_log import TrialRecord
from nnvm.tune.measure import RunResult
from nnvm.tune.runner import MeasureOptions, trial_record
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task, te_function


class SimulatorRunner:
    """A runner (`measure`, `close`) for tasks whose target has a cycle model."""

    def __init__(self, options: MeasureOptions | None = None):
        self.options = options or MeasureOptions()
        self.ctx = make_context()

    def measure(
        self,
        task: Task,
        space: TaskSpace,
        candidates: Sequence[Candidate],
        best_s: float = math.inf,
    ) -> list[TrialRecord]:
        records = []
        for c in candidates:
            started = time.time()
            module = parse_module(self.ctx, space.module_text(c), task.name)
            seconds, error, detail = task.target.simulate_kernel(
                te_function(module), self.options.check
            )
            times = [seconds] if error in ("ok", "wrong") else []
            result = RunResult(times, error, detail)
            records.append(trial_record(task, c, result, started, time.time()))
        return records

    def close(self) -> None:
        """Nothing to release (no worker process, no device)."""
