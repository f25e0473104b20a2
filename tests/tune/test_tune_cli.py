"""Applying logs (build, nnvm-compile) and the nnvm-tune command line: log tools, resume after a
kill at a random point, Ctrl-C, bad input."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nnvm.compiler import build
from nnvm.passes.apply_tuning_log import TuningLogWarning
from nnvm.reference import run_reference
from nnvm.runtime import graph_runtime
from nnvm.support.tuning_log import read_log
from nnvm.tune.runner import LocalRunner, MeasureOptions
from nnvm.tune.tuner import tune


@pytest.fixture(scope="module")
def tuned_log(tmp_path_factory, matmul_task):
    log = tmp_path_factory.mktemp("tune") / "t.jsonl"
    runner = LocalRunner(MeasureOptions(repeat=2, min_round_s=0.001))
    try:
        tune([matmul_task], runner, str(log), trials=4, batch=4)
    finally:
        runner.close()
    return log


def _run(graph, lib, params, x):
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.set_input("x", x)
    m.run()
    return m.get_output(0)


def test_build_with_a_tuning_log(tuned_log, matmul_graph):
    module, params = matmul_graph
    x = np.random.default_rng(0).standard_normal((1, 20, 64)).astype(np.float32)
    graph, lib, p = build(module, params=params, tuning_log=tuned_log)
    assert lib.build_times.kernels_tuned == 1 and lib.build_times.kernels_untuned == 0
    (want,) = run_reference(module, params, {"x": x})
    np.testing.assert_allclose(_run(graph, lib, p, x), want, rtol=1e-4, atol=1e-4)


def test_a_log_for_another_target_or_stale_records_warn_and_fall_back(
    tmp_path, tuned_log, matmul_graph
):
    module, params = matmul_graph
    other = tmp_path / "other.jsonl"
    lines = [json.loads(ln) for ln in tuned_log.read_text().splitlines()]
    other.write_text("\n".join(json.dumps({**d, "target": "cpu=elsewhere"}) for d in lines) + "\n")
    with pytest.warns(TuningLogWarning, match="no successful record for this target"):
        _, lib, _ = build(module, params=params, tuning_log=other)
    assert lib.build_times.kernels_tuned == 0 and lib.build_times.kernels_untuned == 1
    stale = tmp_path / "stale.jsonl"
    bad = 'te.schedule {\n  te.vectorize "nope" x\n}'
    stale.write_text("\n".join(json.dumps({**d, "schedule": bad}) for d in lines) + "\n")
    with pytest.warns(TuningLogWarning, match="no longer applies"):
        _, lib, _ = build(module, params=params, tuning_log=stale)
    assert lib.build_times.kernels_tuned == 0


def test_cli_tune_show_best_merge_and_errors(tmp_path, matmul_file, tune_cli):
    model = matmul_file
    log = tmp_path / "t.jsonl"
    r = tune_cli(str(model), "--log", str(log), "--trials", "3", "--batch", "3", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "1 tasks" in r.stdout and "trials" in r.stderr
    assert len(read_log(log).trials) == 3
    again = tune_cli(str(model), "--log", str(log), "--trials", "3")
    assert again.returncode == 1 and "--resume" in again.stderr
    shown = tune_cli("show", str(log))
    assert shown.returncode == 0 and "3 trials, 1 workloads" in shown.stdout
    assert tune_cli("best", str(log), "-o", str(tmp_path / "b.jsonl")).returncode == 0
    assert len(read_log(tmp_path / "b.jsonl").trials) == 1
    merged = tune_cli("merge", str(log), str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "m.jsonl"))
    assert merged.returncode == 0 and len(read_log(tmp_path / "m.jsonl").trials) == 3
    assert tune_cli("best", str(log), "-o", str(log)).returncode == 1  # never overwrites input
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    r = tune_cli("show", str(junk))
    assert r.returncode == 1 and "not a tuning log" in r.stderr and "Traceback" not in r.stderr
    for history, message in (("nope.jsonl", "no such tuning log"), (junk.name, "not a tuning log")):
        r = tune_cli(
            str(model), "--log", str(tmp_path / "h.jsonl"), "--history", str(tmp_path / history)
        )
        assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
    r = tune_cli(str(tmp_path / "missing.onnx"), "--log", str(log))
    assert r.returncode == 1 and "no such model file" in r.stderr
    compiled = subprocess.run(
        [
            sys.executable,
            "-m",
            "nnvm.tools.compile",
            str(model),
            "-o",
            str(tmp_path / "out"),
            "--tuning-log",
            str(log),
            "--run",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert compiled.returncode == 0, compiled.stderr
    assert "1 kernels tuned" in compiled.stdout and "OK" in compiled.stdout


def _kill_and_resume(model, log, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    args = [
        sys.executable,
        "-m",
        "nnvm.tools.tune",
        str(model),
        "--log",
        str(log),
        "--trials",
        "40",
        "--batch",
        "2",
        "--repeat",
        "2",
        "--early-stop",
        "40",
    ]
    for k in range(rounds):
        proc = subprocess.Popen(
            [*args, *(["--resume"] if k or log.exists() else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(3.0, 9.0))
        proc.kill()
        proc.wait()
        log_now = read_log(log, missing_ok=True)  # always parses (a torn line is a warning)
        keys = [(r.workload, r.config_key()) for r in log_now.trials]
        assert len(keys) == len(set(keys)), "a resumed run measured a trial again"


def test_a_killed_run_resumes_without_remeasuring(tmp_path, matmul_file):
    model = matmul_file
    _kill_and_resume(model, tmp_path / "t.jsonl", rounds=2, seed=1)


@pytest.mark.slow
def test_many_random_kills(tmp_path, matmul_file):
    model = matmul_file
    _kill_and_resume(model, tmp_path / "t.jsonl", rounds=6, seed=7)


def test_ctrl_c_leaves_a_valid_log(tmp_path, matmul_file):
    model = matmul_file
    log = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnvm.tools.tune",
            str(model),
            "--log",
            str(log),
            "--trials",
            "200",
            "--batch",
            "2",
            "--repeat",
            "2",
            "--early-stop",
            "200",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and read_log(log).trials):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert read_log(log).trials and not read_log(log).warnings
    os.remove(log)


def test_flush_cache_is_refused_over_rpc(tune_cli, matmul_file, tmp_path):
    proc = tune_cli(str(matmul_file), "--log", str(tmp_path / "t.jsonl"), "--flush-cache",
                    "--rpc", "127.0.0.1:1")  # fmt: skip
    assert proc.returncode == 1
    assert "--flush-cache" in proc.stderr and "not over --rpc" in proc.stderr
    assert not (tmp_path / "t.jsonl").exists()
