"""Measuring on a Dask cluster (the `tune` extra): candidates are built here, as by the local
runner, and their RunJobs go to the cluster's workers, each timing one at a time in a
measuring process of its own (kept per Dask worker, restarted after a crash), so a cluster of
N machines measures N candidates at once.

Dask rather than Ray: the job is a plain function call on pickled data, which
`distributed.Client.submit` does with no actor model or object store to run; a scheduler and
workers start with `dask scheduler` / `dask worker ADDRESS --nthreads 1` on any machine with
nnvm installed, and `distributed.LocalCluster` gives tests the same thing on one machine.
Each worker must have one thread (`--nthreads 1`): two candidates timed at once on one machine
would disturb each other's times."""

from __future__ import annotations

from collections.abc import Sequence

from nnvm.support.errors import UserError
from nnvm.support.worker import Failure, Worker
from nnvm.tune.measure import RunJob, RunResult
from nnvm.tune.runner import RUN_WORKER, MeasureOptions, Runner, failure_result

_measuring: Worker | None = None
"""The measuring process of this Dask worker (module state of the worker's interpreter)."""


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


class DaskRunner(Runner):
    """Times candidates on the workers of the Dask scheduler at `address` (or of a Client)."""

    def __init__(
        self, address: str | object, options: MeasureOptions | None = None, connect_s: float = 20
    ):
        super().__init__(options)
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

    def run(self, jobs: Sequence[RunJob]) -> list[RunResult]:
        timeout = self.options.run_timeout_s
        futures = [
            self.client.submit(measure_on_dask_worker, job, timeout, pure=False) for job in jobs
        ]
        out: list[RunResult] = []
        for f in futures:
            try:
                out.append(f.result(timeout=timeout * 2 + 60))
            except Exception as err:  # a worker lost mid-job, a timeout: a failed trial
                name = type(err).__name__
                code = "timeout" if "Timeout" in name else "crash"
                out.append(RunResult([], code, f"dask: {name}: {err}"))
        return out

    def close(self) -> None:
        super().close()
        if self._owns:
            self.client.close()
