"""Measurement, split as AutoTVM splits it: builders compile a batch of candidates in parallel
(the build's own compile workers), then a runner times them one after another on a quiet
machine. A candidate that fails to build, crashes, hangs or computes a wrong result becomes a
failed trial record with its error code; nothing a candidate does aborts the run.

`LocalRunner` measures in a worker process on this machine; `RPCRunner` (rpc_runner.py) and
`DaskRunner` (dask_runner.py) send the same RunJob elsewhere."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from nnvm.compiler.parallel_compile import Compiled, compile_parallel
from nnvm.support.errors import UserError
from nnvm.support.tuning_log import TrialRecord
from nnvm.support.worker import Failure, Worker
from nnvm.tune.measure import (
    RunJob,
    RunResult,
    conditioned_atols,
    nudged_inputs,
    random_inputs,
)
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task

RUN_WORKER = "nnvm.tune.measure:run_in_worker"


@dataclass
class MeasureOptions:
    repeat: int = 5
    """Timed rounds per candidate (the record keeps each; its time is their median)."""
    min_round_s: float = 0.01
    threads: int = 1
    """Threads the kernels run with while timed."""
    build_timeout_s: float = 300.0
    run_timeout_s: float = 60.0
    check: bool = True
    """Check each candidate's output against the reference executor's."""
    build_jobs: int | None = None
    """Parallel builders (default: one per CPU, at most 8)."""
    flush_cache: bool = False
    """Time each call with the arguments but the first input flushed from the caches
    (nnvm.tune.measure.RunJob.flush_cache)."""


def trial_record(
    task: Task, candidate: Candidate, result: RunResult, started: float, ended: float
) -> TrialRecord:
    """The log's record of one measured candidate."""
    return TrialRecord(
        workload=task.workload,
        task=task.name,
        target=task.target.description,
        shapes=task.shapes,
        config=candidate.config,
        schedule=candidate.schedule,
        times_s=result.times_s,
        error=result.error,
        detail=result.detail[-2000:],
        flops=task.flops,
        started=started,
        ended=ended,
    )


def trial_records(
    task: Task, candidates: Sequence[Candidate], results: Sequence[RunResult], started: float
) -> list[TrialRecord]:
    """The log's records of a batch measured since `started` (time.time())."""
    ended = time.time()
    return [
        trial_record(task, c, r, started, ended) for c, r in zip(candidates, results, strict=True)
    ]


class Measurer(Protocol):
    """What the tuner needs of a runner: trial records for candidates, and a close."""

    def measure(
        self,
        task: Task,
        space: TaskSpace,
        candidates: Sequence[Candidate],
        best_s: float = float("inf"),
    ) -> list[TrialRecord]: ...

    def close(self) -> None: ...


class Runner(ABC):
    """Builds and times candidates of a task: one trial record per candidate."""

    def __init__(self, options: MeasureOptions | None = None):
        self.options = options or MeasureOptions()
        self._references: dict[str, tuple[list[np.ndarray], list[np.ndarray] | None]] = {}

    def measure(
        self,
        task: Task,
        space: TaskSpace,
        candidates: Sequence[Candidate],
        best_s: float = float("inf"),
    ) -> list[TrialRecord]:
        """Build and time `candidates`; one that is 10x slower than `best_s` on its first
        call is not timed further."""
        started = time.time()
        texts = [(space.module_text(c), task.target, task.name) for c in candidates]
        built = compile_parallel(
            texts, timeout=self.options.build_timeout_s, n_jobs=self.options.build_jobs
        )
        inputs, expected, atols = self._reference(task)
        results: list[RunResult] = []
        jobs: list[RunJob | None] = []
        for answer in built:
            if isinstance(answer, Compiled):
                jobs.append(self._job(task, answer.obj, inputs, expected, atols, 10 * best_s))
                results.append(RunResult([]))
            else:
                jobs.append(None)
                results.append(build_failure(answer))
        ran = self.run([j for j in jobs if j is not None])
        it = iter(ran)
        results = [next(it) if j is not None else r for j, r in zip(jobs, results, strict=True)]
        return trial_records(task, candidates, results, started)

    def _job(self, task: Task, obj: bytes, inputs, expected, atols, cutoff_s: float) -> RunJob:
        o = self.options
        return RunJob(
            obj,
            task.name,
            task.target,
            task.shapes,
            task.dtypes,
            task.n_inputs,
            inputs,
            expected,
            o.threads,
            o.repeat,
            o.min_round_s,
            atols=atols,
            cutoff_s=cutoff_s,
            flush_cache=o.flush_cache,
        )

    def _reference(
        self, task: Task
    ) -> tuple[list[np.ndarray], list[np.ndarray] | None, list[float] | None]:
        """Seeded inputs of the task, the reference executor's outputs on them, and each
        output's absolute tolerance: RunJob.atol, or more where the reference itself moves
        by more under nudged inputs (`conditioned_atols`)."""
        if task.workload not in self._references:
            inputs = random_inputs(task.shapes[: task.n_inputs], task.dtypes[: task.n_inputs], 0)
            expected, atols = None, None
            if self.options.check:
                from nnvm.reference import run_reference
                from nnvm.registry import make_context
                from nnvm.support.diagnostics import parse_module

                module = parse_module(make_context(), task.graph_text, task.name)
                outs = run_reference(module, {}, inputs, function=task.name)
                expected = [np.asarray(o) for o in outs]
                moved = run_reference(module, {}, nudged_inputs(inputs, 1), function=task.name)
                atols = conditioned_atols(expected, moved, RunJob.atol)
            self._references[task.workload] = (inputs, expected, atols)
        return self._references[task.workload]

    @abstractmethod
    def run(self, jobs: Sequence[RunJob]) -> list[RunResult]:
        """Time each job (one answer per job, in order)."""

    def close(self) -> None:
        """Release the measuring resources (and the cached reference outputs)."""
        self._references.clear()


FAILURE_CODES = {"hang": "timeout", "signal": "crash", "exit": "crash"}
"""A worker Failure's kind -> the trial's error code (a raised exception keeps the stage's)."""


def build_failure(answer: object) -> RunResult:
    """A builder's answer that is not an object, as the trial's result."""
    if isinstance(answer, UserError):
        return RunResult([], "build", answer.message)
    if isinstance(answer, Failure):
        code = FAILURE_CODES.get(answer.kind, "build")
        return RunResult([], code, f"build {answer.kind}: {answer.detail}")
    return RunResult([], "build", "no build worker took the candidate")


def failure_result(answer: Failure) -> RunResult:
    """A measuring process's Failure as a trial result (timeout, crash, or run)."""
    code = FAILURE_CODES.get(answer.kind, "run")
    return RunResult([], code, f"{answer.kind}: {answer.detail}")


class LocalRunner(Runner):
    """Times candidates in a worker process of this machine (restarted after a crash)."""

    def __init__(self, options: MeasureOptions | None = None):
        super().__init__(options)
        self._worker: Worker | None = None

    def run(self, jobs: Sequence[RunJob]) -> list[RunResult]:
        out = []
        for job in jobs:
            if self._worker is None or not self._worker.alive():
                self._worker = Worker(RUN_WORKER)
            answer = self._worker.call(job, self.options.run_timeout_s)
            if isinstance(answer, Failure):
                out.append(failure_result(answer))
                if not self._worker.alive():
                    self._worker = None
            else:
                out.append(answer)
        return out

    def close(self) -> None:
        super().close()
        if self._worker is not None:
            self._worker.close()
            self._worker = None
