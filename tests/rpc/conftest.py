"""A loopback nnvm-rpc server in a subprocess, and a small model built once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnvm.testing import onnx_models


class ServerProcess:
    def __init__(self, tmp: Path, *args: str):
        self.port_file = tmp / f"port-{time.monotonic_ns()}"
        self.work = tmp / f"work-{time.monotonic_ns()}"
        self.log = tmp / f"server-{time.monotonic_ns()}.log"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nnvm.rpc.server",
                "--port",
                "0",
                "--port-file",
                str(self.port_file),
                "--work-dir",
                str(self.work),
                *args,
            ],
            stderr=self.log.open("w"),
        )
        deadline = time.monotonic() + 60
        while not self.port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {self.log.read_text()}")
            time.sleep(0.05)
        self.port = int(self.port_file.read_text())

    def log_text(self) -> str:
        return self.log.read_text()

    def sessions(self) -> list[str]:
        return [p.name for p in self.work.iterdir()] if self.work.exists() else []

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@pytest.fixture
def server_factory(tmp_path):
    started: list[ServerProcess] = []

    def start(*args: str) -> ServerProcess:
        s = ServerProcess(tmp_path, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = ServerProcess(tmp_path_factory.mktemp("rpc-server"))
    pid = s.proc.pid
    yield s
    assert s.proc.poll() is None and s.proc.pid == pid, "the server restarted or died"
    assert s.stop() == 0
    assert s.sessions() == [], "session dirs were left behind"
    if os.environ.get("NNVM_RPC_TEST_LOG"):  # for counting sessions and endings
        with open(os.environ["NNVM_RPC_TEST_LOG"], "a") as f:
            f.write(s.log_text())


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """An MLP, built into a private kernel cache and exported."""
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx

    mp = pytest.MonkeyPatch()
    mp.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
    try:
        onnx_model = onnx_models.mlp(batch=4, sizes=(64, 32, 10), seed=3)
        module, params = from_onnx(onnx_model)
        graph, lib, params = build(module, target="llvm", params=params, opt_level=3)
    finally:
        mp.undo()
    out = tmp_path_factory.mktemp("export")
    lib.export_library(out / "mylib.so")
    inputs = onnx_models.random_inputs(onnx_model, seed=4)
    return graph, lib, params, inputs, out / "mylib.so"


os.environ.setdefault("NNVM_NUM_THREADS", "1")
