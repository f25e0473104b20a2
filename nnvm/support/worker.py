"""A worker process that answers calls to one function: the fuzzers' case runner and the
parallel kernel compiler both sit on it.

The worker is a fresh interpreter (`python -m nnvm.support.worker FUNCTION FD`), so it shares
no threads or loaded libraries with its parent and never re-imports the parent's `__main__`
(multiprocessing's spawn does, which breaks scripts without a main guard). Calls and answers
are pickled over a socket pair. A call that outlives its timeout kills the worker; a worker that
dies (a signal) is reported as such. Either way the caller starts another one."""

from __future__ import annotations

import importlib
import socket
import subprocess
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any


@dataclass
class Failure:
    """Why a call got no answer: "hang", "signal" or "exit" (with the detail), or "raised"
    (the function raised; `detail` has the traceback)."""

    kind: str
    detail: str


def _resolve(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve(conn: Connection, spec: str) -> None:
    fn = _resolve(spec)
    conn.send("ready")
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, payload = message
        try:
            answer = fn(payload)
        except BaseException as err:  # the function must never take the worker down
            answer = Failure("raised", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
        conn.send((index, answer))


class Worker:
    """One worker process running `spec` ("package.module:function")."""

    def __init__(self, spec: str, start_timeout: float = 120.0) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nnvm.support.worker", spec, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        self.calls = 0
        if not self.conn.poll(start_timeout) or self.conn.recv() != "ready":
            self.kill()
            raise RuntimeError(f"the worker for {spec} did not start in {start_timeout:g} s")

    def call(self, payload: Any, timeout: float | None = None) -> Any:
        """The function's answer, or a Failure."""
        self.calls += 1
        index = self.calls
        self.conn.send((index, payload))
        if not self.conn.poll(timeout):
            self.kill()
            return Failure("hang", f"> {timeout:g} s")
        try:
            got, answer = self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            code = self.process.wait(5)
            if code is not None and code < 0:
                return Failure("signal", str(-code))
            return Failure("exit", str(code))
        assert got == index
        return answer

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


if __name__ == "__main__":
    # through the imported module, so what the worker pickles (Failure) is
    # nnvm.support.worker.Failure, not __main__.Failure, which the parent cannot load
    from nnvm.support import worker

    worker._serve(Connection(int(sys.argv[2])), sys.argv[1])
