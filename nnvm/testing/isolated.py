"""Run many small test cases in a child process, each with a time limit: the fuzzers' engine.

A worker process (a fresh interpreter, so it shares no threads or loaded libraries with the parent) takes
cases one at a time over a pipe and answers each with a problem string or None. The parent waits
at most `timeout` seconds per case; a case that takes longer is a hang, a worker that dies is a
signal (or an exit), and in both cases the worker is replaced and the run goes on with the next
case. So thousands of cases cost one interpreter start, not one each, and a crash or hang costs
one case, not the run."""

from __future__ import annotations

import importlib
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any


@dataclass
class Outcome:
    index: int
    problem: str | None
    """None: the case kept its contract; else what went wrong (hang, signal, or the checker's
    own description)."""


def _resolve(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(conn, spec: str) -> None:
    check = _resolve(spec)
    conn.send("ready")
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, case = message
        try:
            problem = check(case)
        except BaseException as err:  # the checker itself must never take the worker down
            problem = f"checker raised {type(err).__name__}: {err}\n{traceback.format_exc()}"
        conn.send((index, problem))


class _Worker:
    def __init__(self, spec: str, start_timeout: float) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nnvm.testing.isolated", spec, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        if not self.conn.poll(start_timeout) or self.conn.recv() != "ready":
            self.kill()
            raise RuntimeError(f"the worker for {spec} did not start in {start_timeout:g} s")

    def ask(self, index: int, case: Any, timeout: float) -> str | None:
        self.conn.send((index, case))
        if not self.conn.poll(timeout):
            self.kill()
            return f"hang (> {timeout:g} s)"
        try:
            got, problem = self.conn.recv()
        except (EOFError, ConnectionResetError):
            code = self.process.wait(5)
            return f"signal {-code}" if code is not None and code < 0 else f"worker exit {code}"
        assert got == index
        return problem

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.conn.close()

    def close(self) -> None:
        try:
            self.conn.send(None)
            self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.alive():
            self.kill()
        else:
            self.conn.close()


def run_isolated(
    check: str, cases: Iterable[Any], timeout: float = 20.0, start_timeout: float = 120.0
) -> Iterator[Outcome]:
    """Yield one Outcome per case, in order. `check` names a function "module:name" that takes
    one case (picklable) and returns None or a problem string; it runs in the worker."""
    worker: _Worker | None = None
    try:
        for index, case in enumerate(cases):
            if worker is None or not worker.alive():
                worker = _Worker(check, start_timeout)
            problem = worker.ask(index, case, timeout)
            if problem is not None and not worker.alive():
                worker = None
            yield Outcome(index, problem)
    finally:
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[2])), sys.argv[1])
