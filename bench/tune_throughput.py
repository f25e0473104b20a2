"""Tuning throughput by where trials are built and measured (issue 19): one tuning run,
repeated with its candidates built here and timed in a local measuring process or on a
loopback nnvm-rpc server, or built and timed on the workers of a local Dask cluster (1 and 2
workers; and 2 workers timing what this process built). Every setup searches the same
candidates (random search, one seed); each log is then handed to build(), which must accept
its records.

    python -m bench.tune_throughput --model resnet18 --tasks 2 --trials 16

Here, candidates are built by the build's compile workers (one per CPU), then timed one after
another; on the cluster each worker builds and times its own candidates. On one machine the
workers share its cores, as a cluster of machines (one worker each, `--nthreads 1`) would not:
what this measures is throughput and that the records are accepted, not their times."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.models import MODELS
from bench.rpc import loopback_server
from nnvm.frontend import from_onnx
from nnvm.support.tuning_log import read_log
from nnvm.tune.runner import LocalRunner, MeasureOptions, Runner
from nnvm.tune.task import extract_tasks, tasks_by_weight
from nnvm.tune.tuner import tune


@dataclass
class Setup:
    name: str
    workers: int
    built: str  # "here" or "workers"
    trials: int
    ok: int
    wall_s: float
    tuned_kernels: int

    @property
    def per_second(self) -> float:
        return self.trials / self.wall_s


SETUPS = ["local", "rpc", "dask-1", "dask-2", "dask-2-built-here"]


@contextlib.contextmanager
def dask_cluster(workers: int) -> Iterator[str]:
    from distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def tune_with(
    name: str,
    workers: int,
    built: str,
    make_runner: Callable[[], Runner],
    tasks,
    graph,
    trials: int,
    batch: int,
    workdir: Path,
) -> Setup:
    from nnvm.compiler import build

    log = workdir / f"{name}.jsonl"
    runner = make_runner()
    start = time.perf_counter()
    try:
        tune(tasks, runner, str(log), trials=trials, batch=batch, strategy="random",
             early_stop=None, confirm_rounds=0)  # fmt: skip
    finally:
        runner.close()
    wall = time.perf_counter() - start
    records = read_log(log)
    module, params = graph
    _, lib, _ = build(module, params=params, tuning_log=log)
    return Setup(
        name,
        workers,
        built,
        len(records.trials),
        sum(r.ok for r in records.trials),
        wall,
        lib.build_times.kernels_tuned,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tune_throughput", description=__doc__)
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18")
    parser.add_argument("--tasks", type=int, default=2, help="the model's heaviest tasks")
    parser.add_argument("--trials", type=int, default=16, help="trials per task")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument(
        "--setups", nargs="+", default=SETUPS, choices=SETUPS,
    )  # fmt: skip
    args = parser.parse_args(argv)

    graph = from_onnx(MODELS[args.model]())
    tasks = tasks_by_weight(extract_tasks(*graph))[: args.tasks]
    options = MeasureOptions(repeat=3)
    rows: list[Setup] = []
    with tempfile.TemporaryDirectory(prefix="nnvm-tune-throughput-") as tmp:
        workdir = Path(tmp)
        for setup in args.setups:
            print(f"{setup}: tuning {len(tasks)} task(s) x {args.trials} trials ...", flush=True)
            common = (tasks, graph, args.trials, args.batch, workdir)
            if setup == "local":
                rows.append(tune_with(setup, 1, "here", partial(LocalRunner, options), *common))
            elif setup == "rpc":
                from nnvm.tune.rpc_runner import RPCRunner

                (workdir / "rpc").mkdir()
                with loopback_server(workdir / "rpc") as (host, port):
                    make = partial(RPCRunner, f"{host}:{port}", options)
                    rows.append(tune_with(setup, 1, "here", make, *common))
            else:
                from nnvm.tune.dask_runner import DaskRunner

                n = int(setup.split("-")[1])
                on_workers = not setup.endswith("built-here")
                built = "workers" if on_workers else "here"
                with dask_cluster(n) as address:
                    make = partial(DaskRunner, address, options, build_on_workers=on_workers)
                    rows.append(tune_with(setup, n, built, make, *common))
    print(table(rows, args.model, len(tasks)))
    return 0 if all(r.tuned_kernels > 0 and r.ok == r.trials for r in rows) else 1


def table(rows: list[Setup], model: str, tasks: int) -> str:
    base = next((r for r in rows if r.name == "local"), rows[0])
    lines = [
        f"{model}: {tasks} task(s), random search, seed 0",
        f"{'setup':<17} {'workers':>7} {'built':>7} {'trials':>6} {'ok':>4} {'wall s':>7} "
        f"{'trials/s':>8} {'vs ' + base.name:>9} {'tuned by build()':>16}",
    ]
    for r in rows:
        lines.append(
            f"{r.name:<17} {r.workers:>7} {r.built:>7} {r.trials:>6} {r.ok:>4} {r.wall_s:>7.1f} "
            f"{r.per_second:>8.2f} {r.per_second / base.per_second:>8.2f}x {r.tuned_kernels:>16}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
