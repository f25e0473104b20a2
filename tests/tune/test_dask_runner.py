"""Measuring on a local 2-worker Dask cluster, candidates built on the workers or here: the
records are ones the single-process run and build() accept; a candidate a worker cannot build
is a failed trial; an unreachable scheduler is a clear error."""

from __future__ import annotations

import pytest

from nnvm.support.errors import UserError
from nnvm.support.tuning_log import read_log
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.tuner import tune

distributed = pytest.importorskip("distributed", reason="the tune extra (Dask) is not installed")


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    yield c
    c.close()


@pytest.mark.parametrize("on_workers", [True, False], ids=["built-on-workers", "built-here"])
def test_tuning_on_a_dask_cluster_gives_records_the_local_run_accepts(
    tmp_path, cluster, matmul_task, matmul_graph, on_workers
):
    from nnvm.compiler import build
    from nnvm.tune.dask_runner import DaskRunner

    options = MeasureOptions(repeat=2, min_round_s=0.001)
    runner = DaskRunner(cluster.scheduler_address, options, build_on_workers=on_workers)
    assert runner.workers == 2
    log = tmp_path / "t.jsonl"
    try:
        result = tune([matmul_task], runner, str(log), trials=4, batch=4, confirm_rounds=1)
    finally:
        runner.close()
    records = read_log(log)
    assert len(records.trials) == 4 and all(r.ok for r in records.trials)
    assert result.states[0].best_s < float("inf")
    module, params = matmul_graph
    _, lib, _ = build(module, params=params, tuning_log=log)
    assert lib.build_times.kernels_tuned == 1


def test_a_candidate_a_worker_cannot_build_is_a_failed_trial(matmul_task):
    """What a Dask worker runs, called here: IR that does not parse is a `build` error, and
    the worker's build process survives for the next candidate."""
    from nnvm.tune.dask_runner import build_and_measure_on_dask_worker
    from nnvm.tune.runner import LocalRunner
    from nnvm.tune.space import TaskSpace

    space = TaskSpace(matmul_task)
    runner = LocalRunner(MeasureOptions(repeat=1, min_round_s=0.001))
    inputs, expected, atols = runner._reference(matmul_task)
    job = runner._job(matmul_task, b"", inputs, expected, atols, float("inf"))
    bad = ("func.func @broken(", matmul_task.target, matmul_task.name)
    result = build_and_measure_on_dask_worker(bad, job, 60, 60)
    assert result.error == "build" and not result.times_s
    good = (space.module_text(space.default()), matmul_task.target, matmul_task.name)
    result = build_and_measure_on_dask_worker(good, job, 120, 60)
    assert result.error == "ok" and result.times_s


def test_an_unreachable_cluster_is_a_clear_error(tmp_path):
    from nnvm.tune.dask_runner import DaskRunner

    with pytest.raises(UserError, match="cannot reach the Dask scheduler"):
        DaskRunner("tcp://127.0.0.1:9", connect_s=2)


def test_cli_reports_an_unreachable_cluster(tmp_path, matmul_file, tune_cli):
    r = tune_cli(
        str(matmul_file), "--log", str(tmp_path / "t.jsonl"), "--cluster", "tcp://127.0.0.1:9"
    )
    assert r.returncode == 1 and "cannot reach the Dask scheduler" in r.stderr
    assert "Traceback" not in r.stderr
