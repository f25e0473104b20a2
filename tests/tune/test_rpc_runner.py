"""Measuring over RPC on a loopback nnvm-rpc server: records the local run accepts; an
unreachable server is a clear error (the CLI's too)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from nnvm.support.errors import UserError
from nnvm.support.tuning_log import read_log
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.tuner import tune


@pytest.fixture(scope="module")
def rpc_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rpc")
    port_file = tmp / "port"
    log = tmp / "server.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnvm.rpc.server",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--work-dir",
            str(tmp / "work"),
        ],
        stderr=log.open("w"),
    )
    deadline = time.monotonic() + 60
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    yield f"127.0.0.1:{int(port_file.read_text())}"
    proc.terminate()
    proc.wait(timeout=60)


def test_tuning_over_rpc_gives_records_the_local_run_accepts(
    tmp_path, rpc_server, matmul_task, matmul_graph
):
    from nnvm.compiler import build
    from nnvm.tune.rpc_runner import RPCRunner

    runner = RPCRunner(rpc_server, MeasureOptions(repeat=2, min_round_s=0.001))
    log = tmp_path / "t.jsonl"
    try:
        tune([matmul_task], runner, str(log), trials=3, batch=3, confirm_rounds=1)
        # a wrong answer is caught on the server's output
        inputs, expected, atols = runner._reference(matmul_task)
        runner._references[matmul_task.workload] = (inputs, [e + 1 for e in expected], atols)
        from nnvm.tune.space import TaskSpace

        space = TaskSpace(matmul_task)
        (rec,) = runner.measure(matmul_task, space, [space.default()])
        assert rec.error == "wrong"
    finally:
        runner.close()
    records = read_log(log)
    assert len(records.trials) == 3 and all(r.ok for r in records.trials)
    module, params = matmul_graph
    _, lib, _ = build(module, params=params, tuning_log=log)
    assert lib.build_times.kernels_tuned == 1


def test_a_library_the_toolchain_refuses_is_a_build_trial(rpc_server, matmul_task, monkeypatch):
    """Candidates are linked here (the next while the server runs this one); one whose link
    fails is a `build` trial, and the next is measured as usual."""
    from nnvm.tune.rpc_runner import RPCRunner
    from nnvm.tune.space import TaskSpace

    runner = RPCRunner(rpc_server, MeasureOptions(repeat=1, min_round_s=0.001))
    link = RPCRunner._link

    def refuse_the_first(self, job, name):
        if name == "cand0.so":
            raise UserError("linking cand0.so failed: ld: no space left")
        return link(self, job, name)

    monkeypatch.setattr(RPCRunner, "_link", refuse_the_first)
    space = TaskSpace(matmul_task)
    try:
        first, second = runner.measure(matmul_task, space, [space.default()] * 2)
    finally:
        runner.close()
    assert first.error == "build" and "no space left" in first.detail
    assert second.ok


def test_an_unreachable_server_is_a_clear_error(tmp_path, matmul_file, tune_cli):
    from nnvm.tune.rpc_runner import RPCRunner

    with pytest.raises(UserError, match="cannot reach the RPC server"):
        RPCRunner("127.0.0.1:9")
    with pytest.raises(UserError, match="HOST:PORT"):
        RPCRunner("nonsense")
    r = tune_cli(str(matmul_file), "--log", str(tmp_path / "t.jsonl"), "--rpc", "127.0.0.1:9")
    assert r.returncode == 1 and "cannot reach the RPC server" in r.stderr
