"""Run many small test cases in a child process, each with a time limit: the fuzzers' engine.

A worker process (nnvm/support/worker.py: a fresh interpreter, so it shares no threads or
loaded libraries with the parent) takes cases one at a time and answers each with a problem
string or None. The parent waits at most `timeout` seconds per case; a case that takes longer
is a hang, a worker that dies is a signal (or an exit), and in both cases the worker is
replaced and the run goes on with the next case. So thousands of cases cost one interpreter
start, not one each, and a crash or hang costs one case, not the run."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from nnvm.support.worker import Failure, Worker


@dataclass
class Outcome:
    index: int
    problem: str | None
    """None: the case kept its contract; else what went wrong (hang, signal, or the checker's
    own description)."""


def run_isolated(
    check: str, cases: Iterable[Any], timeout: float = 20.0, start_timeout: float = 120.0
) -> Iterator[Outcome]:
    """Yield one Outcome per case, in order. `check` names a function "module:name" that takes
    one case (picklable) and returns None or a problem string; it runs in the worker."""
    worker: Worker | None = None
    try:
        for index, case in enumerate(cases):
            if worker is None or not worker.alive():
                worker = Worker(check, start_timeout)
            answer = worker.call(case, timeout)
            if isinstance(answer, Failure):
                names = {"hang": "hang", "signal": "signal", "exit": "worker exit"}
                if answer.kind == "raised":
                    answer = f"checker raised {answer.detail}"
                else:
                    answer = f"{names[answer.kind]} ({answer.detail})"
            if answer is not None and not worker.alive():
                worker = None
            yield Outcome(index, answer)
    finally:
        if worker is not None:
            worker.close()
