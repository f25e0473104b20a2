"""The tuning loop: for a model's tasks, batches of candidates from a search strategy, measured
by a runner, each trial appended to the log as it is recorded. A task scheduler spends the
trial budget where the model's end-to-end time gains most (Ansor's idea, simplified): after a
first round that gives every task its default and a few samples, the next batch goes to the
task with the largest `weight x best time x recent relative gain`, with a floor so a task that
stalled early still gets an occasional batch. A task stops (and is marked finished in the log)
when its space is exhausted, its trial share is spent, or `early_stop` trials brought no gain.

A finished task is confirmed: its best candidate and its default are built and timed again,
alternately (`confirm_rounds` each); the best stays the record only if it beats the default
there by CONFIRM_MARGIN, else the default does (a `confirmed` line in the log). The search keeps
the minimum of noisy measurements, which favours a candidate that was lucky once; on a busy
2-core machine, unconfirmed picks made ResNet-18 5% slower end to end.

Resume: the log's trials of a task are the search's starting point; a config already in the
log is never measured again, and a task marked finished is skipped (confirmed first if its
confirmation was interrupted)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nnvm.support.errors import UserError
from nnvm.support.tuning_log import LogWriter, TrialRecord, TuningLog, read_log
from nnvm.tune.runner import Measurer
from nnvm.tune.search import Search, make_search
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task
from nnvm.tune.transfer import TransferHistory


@dataclass
class TaskState:
    task: Task
    search: Search
    default_key: str
    measured: dict[str, tuple[Candidate, float]] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)
    """Best seconds so far after each trial (the search-efficiency curve)."""
    default_s: float = math.inf
    trials: int = 0
    """Trials measured in this run (not those read from the log)."""
    done: bool = False
    confirmed_speedup: float = math.nan
    """The default's time over the confirmed winner's, both re-measured (1.0: the default)."""

    @property
    def best_s(self) -> float:
        return min((s for _, s in self.measured.values()), default=math.inf)

    def add(self, record: TrialRecord, candidate: Candidate) -> None:
        self.measured[candidate.key] = (candidate, record.seconds)
        if candidate.key == self.default_key and record.ok:
            self.default_s = record.seconds
        self.history.append(self.best_s)

    def gain(self, window: int) -> float:
        """Relative improvement of the best time over the last `window` trials."""
        h = [x for x in self.history if math.isfinite(x)]
        if len(h) < 2:
            return 1.0
        old = h[-window - 1] if len(h) > window else h[0]
        return (old - h[-1]) / old if old > 0 else 0.0


@dataclass
class TuneResult:
    states: list[TaskState]
    interrupted: bool = False

    def summary(self) -> list[dict]:
        return [
            {
                "task": s.task.name,
                "kernel": s.task.describe(),
                "weight": s.task.weight,
                "trials": len(s.measured),
                "default_ms": s.default_s * 1e3,
                "best_ms": s.best_s * 1e3,
                "speedup": s.default_s / s.best_s if s.best_s > 0 else math.nan,
                "confirmed_speedup": s.confirmed_speedup,
                "best_gflops": s.task.flops / s.best_s / 1e9 if s.best_s > 0 else 0.0,
            }
            for s in self.states
        ]


Progress = Callable[[TaskState, int, int], None]
"""(task state after a batch, trials done in this run, trial budget of this run)."""


def tune(
    tasks: Sequence[Task],
    runner: Measurer,
    log_path: str,
    *,
    trials: int = 64,
    strategy: str = "evolution",
    model: str = "auto",
    batch: int = 8,
    early_stop: int | None = 32,
    resume: bool = False,
    seed: int = 0,
    progress: Progress | None = None,
    confirm_rounds: int = 3,
    history: Sequence[TuningLog] = (),
) -> TuneResult:
    """Tune each task with up to `trials` trials (a budget per task, shared out by the task
    scheduler), appending every trial to `log_path`. Ctrl-C stops after the trial being
    recorded: the log stays valid, and `resume=True` carries on where it stopped. `history`:
    logs of other runs whose measurements of other kernels of the same templates train the
    cost model before a task's own trials (nnvm/tune/transfer.py)."""
    if trials < 1 or batch < 1:
        raise UserError("trials and batch must be at least 1")
    log = read_log(log_path, missing_ok=True)
    if log.trials and not resume:
        raise UserError(
            f"{log_path} already holds {len(log.trials)} trials: pass resume=True (--resume) to "
            "continue it, or name another log"
        )
    states = []
    transfer = TransferHistory()  # what each task's measurements teach the others' models
    for other in history:
        transfer.add_log(tasks, other)
    for k, task in enumerate(tasks):
        space = TaskSpace(task)
        search = make_search(strategy, space, seed + k, model, transfer)
        state = TaskState(task, search, space.default().key)
        for r in log.trials:
            if r.workload == task.workload and r.target == task.target.description:
                state.add(r, Candidate(r.config, r.schedule))
        state.done = (task.workload, task.target.description) in log.finished
        transfer.add_measured(task, state.measured, state.default_key)
        states.append(state)
    budget = trials * len(states)
    done = 0
    result = TuneResult(states)
    writer = LogWriter(log_path)
    try:
        for state in states:  # finished, but the confirmation was interrupted
            key = (state.task.workload, state.task.target.description)
            if state.done and key not in log.confirmed and confirm_rounds:
                _confirm(state, runner, writer, confirm_rounds)
        while True:
            state = _pick(states, trials, batch)
            if state is None:
                break
            want = min(batch, trials - state.trials)
            candidates = state.search.next_batch(want, state.measured)
            if not candidates:
                _finish(state, writer, runner, confirm_rounds)
                continue
            records = runner.measure(state.task, state.search.space, candidates, state.best_s)
            for record, c in zip(records, candidates, strict=True):
                writer.trial(record)
                state.add(record, c)
            transfer.add_measured(state.task, state.measured, state.default_key)
            state.trials += len(candidates)
            done += len(candidates)
            if state.trials >= trials or _stalled(state, early_stop):
                _finish(state, writer, runner, confirm_rounds)
            if progress is not None:
                progress(state, done, budget)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        writer.close()
    return result


CONFIRM_MARGIN = 0.03
"""The search's best replaces the default only if its re-measured median is this much lower."""


def _finish(state: TaskState, writer: LogWriter, runner: Measurer, confirm_rounds: int) -> None:
    state.done = True
    writer.finished(state.task.workload, state.task.target.description, len(state.measured))
    if confirm_rounds:
        _confirm(state, runner, writer, confirm_rounds)


def _confirm(state: TaskState, runner: Measurer, writer: LogWriter, rounds: int) -> None:
    """Re-measure the best candidate against the default, alternately; log the winner."""
    task, space = state.task, state.search.space
    default = space.default()
    ok = [(c, s) for c, s in state.measured.values() if math.isfinite(s)]
    if not ok:
        return
    best = min(ok, key=lambda cs: cs[1])[0]
    times: dict[str, list[float]] = {"default": [], "best": []}
    if best.key != default.key:
        for r in range(rounds):
            order = [("default", default), ("best", best)]
            if r % 2:
                order.reverse()
            records = runner.measure(task, space, [c for _, c in order])
            for (name, _), rec in zip(order, records, strict=True):
                times[name].append(rec.seconds)
    d = statistics.median(times["default"]) if times["default"] else math.inf
    b = statistics.median(times["best"]) if times["best"] else math.inf
    wins = math.isfinite(b) and b < d * (1 - CONFIRM_MARGIN)
    winner = best if wins else default
    state.confirmed_speedup = d / b if wins else 1.0
    target = task.target.description
    writer.confirmed(task.workload, target, winner.config, times, state.confirmed_speedup)


def _stalled(state: TaskState, early_stop: int | None) -> bool:
    """No better time in the last `early_stop` trials."""
    if early_stop is None or len(state.history) <= early_stop:
        return False
    return state.history[-1] >= state.history[-early_stop - 1]


def _pick(states: list[TaskState], trials: int, batch: int) -> TaskState | None:
    """The next task to spend a batch on: first each task's first batch, then the largest
    expected gain (weight x best seconds x recent relative gain, floored)."""
    live = [s for s in states if not s.done and s.trials < trials]
    if not live:
        return None
    fresh = [s for s in live if s.trials == 0]
    if fresh:
        return fresh[0]

    def score(s: TaskState) -> float:
        best = s.best_s if math.isfinite(s.best_s) else 1.0
        return s.task.weight * best * max(s.gain(2 * batch), 0.05)

    return max(live, key=score)
