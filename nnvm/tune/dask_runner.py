"""Measuring on a Dask cluster (the `tune` extra): each candidate goes to one of the cluster's
workers as its kernel IR and a RunJob without an object; the worker compiles it in a build
process of its own, then times it in a measuring process of its own (both kept per Dask
worker, restarted after a crash). So a cluster of N machines builds and measures N candidates
at once: a candidate's build (lowering and LLVM, ~1-2 s for a conv) takes far longer than its
timing (~0.1 s), so measuring alone on the cluster while this machine builds would leave the
cluster idle. `DaskRunner(..., build_on_workers=False)` builds here instead, as the local
runner does, and sends only the RunJobs.

Dask rather than Ray: the job is a plain function call on pickled data, which
`distributed.Client.submit` does with no actor model or object store to run; a scheduler and
workers start with `dask scheduler` / `dask worker ADDRESS --nthreads 1` on any machine with
nnvm installed, and `distributed.LocalCluster` gives tests the same thing on one machine.
Each worker must have one thread (`--nthreads 1`): two candidates timed at once on one machine
would disturb each other's times."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from nnvm.compiler.parallel_compile import WORKER as BUILD_WORKER
from nnvm.compiler.parallel_compile import Compiled
from nnvm.support.errors import UserError
from nnvm.support.target import Target
from nnvm.support.tuning_log import TrialRecord
from nnvm.support.worker import Failure, Worker
from nnvm.tune.measure import RunJob, RunResult
from nnvm.tune.runner import (
    RUN_WORKER,
    MeasureOptions,
    Runner,
    build_failure,
    failure_result,
    trial_records,
)
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task

_measuring: Worker | None = None
"""The measuring process of this Dask worker (module state of the worker's interpreter)."""
_building: Worker | None = None
"""Its build process."""


def measure_on_dask_worker(job: RunJob, timeout_s: float) -> RunResult:
    """Runs on a Dask worker: the job in this worker's measuring process."""
    global _measuring
    if _measuring is None or not _measuring.alive():
        _measuring = Worker(RUN_WORKER)
    answer = _measuring.call(job, timeout_s)
    if isinstance(answer, Failure):
        if not _measuring.alive():
            _measuring = None
        return failure_result(answer)
    return answer


def build_and_measure_on_dask_worker(
    build: tuple[str, Target, str], job: RunJob, build_timeout_s: float, run_timeout_s: float
) -> RunResult:
    """Runs on a Dask worker: compile (kernel IR, target, name) in this worker's build
    process, then time the object as `job` says in its measuring process."""
    global _building
    if _building is None or not _building.alive():
        _building = Worker(BUILD_WORKER)
    answer = _building.call(build, build_timeout_s)
    if not isinstance(answer, Compiled):
        if isinstance(answer, Failure) and not _building.alive():
            _building = None
        return build_failure(answer)
    return measure_on_dask_worker(dataclasses.replace(job, obj=answer.obj), run_timeout_s)


class DaskRunner(Runner):
    """Times candidates on the workers of the Dask scheduler at `address` (or of a Client)."""

    def __init__(
        self,
        address: str | object,
        options: MeasureOptions | None = None,
        connect_s: float = 20,
        build_on_workers: bool = True,
    ):
        super().__init__(options)
        self.build_on_workers = build_on_workers
        try:
            from distributed import Client
        except ImportError:
            raise UserError("measuring on a cluster needs Dask: pip install 'nnvm[tune]'") from None
        if isinstance(address, Client):
            self.client, self._owns = address, False
        else:
            try:
                self.client = Client(address, timeout=connect_s)
            except (OSError, TimeoutError) as err:
                raise UserError(
                    f"cannot reach the Dask scheduler at {address}: {type(err).__name__}: {err}"
                ) from None
            self._owns = True
        if not self.client.scheduler_info().get("workers"):
            self.close()
            raise UserError(f"the Dask cluster at {address} has no workers")

    @property
    def workers(self) -> int:
        return len(self.client.scheduler_info().get("workers", {}))

    def measure(
        self,
        task: Task,
        space: TaskSpace,
        candidates: Sequence[Candidate],
        best_s: float = float("inf"),
    ) -> list[TrialRecord]:
        if not self.build_on_workers:
            return super().measure(task, space, candidates, best_s)
        started = time.time()
        inputs, expected, atols = self._reference(task)
        # the job without its object, sent once for the batch
        job = self.client.scatter(
            self._job(task, b"", inputs, expected, atols, 10 * best_s), broadcast=True
        )
        o = self.options
        futures = [
            self.client.submit(
                build_and_measure_on_dask_worker,
                (space.module_text(c), task.target, task.name),
                job,
                o.build_timeout_s,
                o.run_timeout_s,
                pure=False,
            )
            for c in candidates
        ]
        results = self._gather(futures, o.build_timeout_s + o.run_timeout_s * 2 + 60)
        return trial_records(task, candidates, results, started)

    def run(self, jobs: Sequence[RunJob]) -> list[RunResult]:
        timeout = self.options.run_timeout_s
        futures = [
            self.client.submit(measure_on_dask_worker, job, timeout, pure=False) for job in jobs
        ]
        return self._gather(futures, timeout * 2 + 60)

    @staticmethod
    def _gather(futures, timeout_s: float) -> list[RunResult]:
        out: list[RunResult] = []
        for f in futures:
            try:
                out.append(f.result(timeout=timeout_s))
            except Exception as err:  # a worker lost mid-job, a timeout: a failed trial
                name = type(err).__name__
                code = "timeout" if "Timeout" in name else "crash"
                out.append(RunResult([], code, f"dask: {name}: {err}"))
        return out

    def close(self) -> None:
        super().close()
        if self._owns:
            self.client.close()
