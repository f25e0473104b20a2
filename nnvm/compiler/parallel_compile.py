"""Host kernels compiled in parallel, in worker processes (nnvm/support/worker.py).

Lowering and code generation are Python and LLVM work on one thread, so a cold build of a
model with many kernels is CPU-bound on one core. The kernels a build does not find in the
cache are sent, as IR text with the (pickled) target, to a few worker processes (one per
CPU the process may use, at most MAX_JOBS; `NNVM_COMPILE_JOBS=1` turns this off). The workers
stay up for the next build of the process. A kernel a worker cannot compile (it raised, or the
worker died) is compiled again in the building process, which then reports the error as a
serial build would."""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from nnvm.support.errors import UserError
from nnvm.support.target import Target
from nnvm.support.worker import Failure, Worker

MAX_JOBS = 8
MIN_KERNELS = 3
"""Fewer misses than this compile in process (a worker's start costs about a second)."""

WORKER = "nnvm.compiler.parallel_compile:compile_in_worker"


@dataclass
class Compiled:
    obj: bytes
    lowering_s: float
    codegen_s: float


def compile_in_worker(job: tuple[str, Target, str]) -> Compiled | UserError:
    """(kernel IR text, target, kernel name) -> its object (runs in a worker)."""
    from nnvm.compiler.build import lower_kernel
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module

    text, target, name = job
    ctx = make_context()
    try:
        module = parse_module(ctx, text, name)
        start = time.perf_counter()
        lower_kernel(module, target, ctx, None)
        lowered = time.perf_counter()
        obj = target.emit_kernel(module, name)
    except UserError as err:
        return err
    return Compiled(obj, lowered - start, time.perf_counter() - lowered)


def jobs_wanted() -> int:
    env = os.environ.get("NNVM_COMPILE_JOBS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise UserError(f"NNVM_COMPILE_JOBS must be a number, got {env!r}") from None
    return max(1, min(len(os.sched_getaffinity(0)), MAX_JOBS))


_pools: dict[str, list[Worker]] = {}
_pool_lock = threading.Lock()


def _workers(n: int, spec: str) -> list[Worker]:
    with _pool_lock:
        pool = _pools.setdefault(spec, [])
        pool[:] = [w for w in pool if w.alive()]
        while len(pool) < n:
            pool.append(Worker(spec))
        return pool[:n]


@atexit.register
def _close_pools() -> None:
    for pool in _pools.values():
        for w in pool:
            w.close()
    _pools.clear()


def compile_parallel(
    jobs: Sequence[tuple[str, Target, str]], timeout: float = 600.0, n_jobs: int | None = None
) -> list[Compiled | UserError | Failure | None]:
    """One answer per job, in order: the object, the UserError the kernel raised, the Failure
    of a worker that died or hung on it, or None where no worker took it (the caller compiles
    those itself)."""
    n = min(n_jobs or jobs_wanted(), len(jobs))
    try:
        workers = _workers(n, WORKER)
    except (OSError, RuntimeError):
        return [None] * len(jobs)
    answers: list[Compiled | UserError | Failure | None] = [None] * len(jobs)
    next_job = iter(range(len(jobs)))
    lock = threading.Lock()

    def drain(worker: Worker) -> None:
        while True:
            with lock:
                k = next(next_job, None)
            if k is None:
                return
            if not worker.alive():
                return  # its remaining jobs go to the others, or back to the caller
            try:
                answer = worker.call(jobs[k], timeout)
            except Exception:  # noqa: BLE001 - a broken pipe or answer: the caller compiles it
                answer = None
            answers[k] = answer

    threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers
