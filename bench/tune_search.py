"""Search efficiency: how many trials the cost-model search needs to reach 95% of the best
latency, against random search (issue 19).

    python -m bench.tune_search --model resnet18 --tasks 2 --seeds 20 --budget 48

The whole space of each task is measured once (every candidate of its grid, with the local
runner); the searches then run against that table, many seeds each, so both strategies see
the same measurements (no run-to-run noise between them) and a curve costs no more trials.
Prints, per task and strategy, the median over seeds of the trials needed to come within 95% of
the space's best time, and the mean best-so-far curve. `evolution+history` is the cost-model
search with a transfer history (nnvm/tune/transfer.py): what the other tasks' own evolution
searches (`--budget` trials each, same seed) measured, as a task tuned after them in one run
would see it."""

from __future__ import annotations

import argparse
import math
import statistics
import sys

from bench.models import MODELS
from nnvm.frontend import from_onnx
from nnvm.tune.runner import LocalRunner, MeasureOptions
from nnvm.tune.search import make_search
from nnvm.tune.space import TaskSpace
from nnvm.tune.task import extract_tasks, tasks_by_weight
from nnvm.tune.transfer import TransferHistory


def measure_space(space: TaskSpace, runner: LocalRunner, limit: int) -> dict[str, float]:
    cands = []
    for c in space.grid():
        cands.append(c)
        if len(cands) >= limit:
            break
    table: dict[str, float] = {}
    for k in range(0, len(cands), 16):
        batch = cands[k : k + 16]
        for c, r in zip(batch, runner.measure(space.task, space, batch), strict=True):
            table[c.key] = r.seconds
    return table


def search_curve(
    space: TaskSpace,
    table,
    strategy: str,
    seed: int,
    budget: int,
    batch: int,
    history: TransferHistory | None = None,
    measured: dict | None = None,
):
    """Best-so-far seconds after each trial of a search answered from `table` (the trials'
    candidates and times land in `measured`)."""
    search = make_search(strategy, space, seed, history=history)
    measured = {} if measured is None else measured
    curve: list[float] = []
    while len(curve) < budget:
        proposals = [c for c in search.next_batch(batch, measured) if c.key in table]
        if not proposals:
            break
        for c in proposals:
            measured[c.key] = (c, table[c.key])
            curve.append(min(s for _, s in measured.values()))
    return curve[:budget]


def trials_to(curve: list[float], goal: float) -> float:
    return next((k + 1 for k, s in enumerate(curve) if s <= goal), math.inf)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tune_search", description=__doc__)
    p.add_argument("--model", default="resnet18", choices=sorted(MODELS))
    p.add_argument("--tasks", type=int, default=2, help="the N heaviest tasks")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--budget", type=int, default=48)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--limit", type=int, default=160, help="most candidates measured per task")
    args = p.parse_args(argv)
    tasks = tasks_by_weight(extract_tasks(*from_onnx(MODELS[args.model]())))[: args.tasks]
    runner = LocalRunner(MeasureOptions(repeat=3, threads=1))
    try:
        spaces = [TaskSpace(task) for task in tasks]
        tables = [measure_space(space, runner, args.limit) for space in spaces]
    finally:
        runner.close()
    # what the other tasks' own searches (evolution, no history, `budget` trials each) measured:
    # the history a task tuned after them would see (leave one task out)
    tuned_before = []
    for seed in range(args.seeds):
        per_task = []
        for space, table in zip(spaces, tables, strict=True):
            measured: dict = {}
            search_curve(space, table, "evolution", seed, args.budget, args.batch, None, measured)
            per_task.append((space, measured))
        tuned_before.append(per_task)
    strategies = ["random", "evolution", "evolution+history"]
    for k, (space, table) in enumerate(zip(spaces, tables, strict=True)):
        finite = [s for s in table.values() if math.isfinite(s)]
        best = min(finite)
        goal = best / 0.95
        within = sum(s <= goal for s in finite)
        print(
            f"\n{space.task.describe()[:70]}: {len(table)} candidates measured, best "
            f"{best * 1e3:.3f} ms, default {table[space.default().key] * 1e3:.3f} ms, "
            f"{within} within 95%"
        )
        for strategy in strategies:
            curves = []
            for seed in range(args.seeds):
                history = None
                if strategy == "evolution+history":
                    history = TransferHistory()
                    for j, (other, measured) in enumerate(tuned_before[seed]):
                        if j != k:
                            history.add_measured(other.task, measured, other.default().key)
                name = strategy.split("+")[0]
                curves.append(
                    search_curve(space, table, name, seed, args.budget, args.batch, history)
                )
            need = [trials_to(c, goal) for c in curves]
            med = statistics.median(need)
            points = [8, 16, 24, 32, 48, 64]
            mean_curve = [
                statistics.fmean(best / c[min(n, len(c)) - 1] for c in curves)
                for n in points
                if n <= args.budget
            ]
            print(
                f"  {strategy:18} trials to 95%: median {med:g} (reached in "
                f"{sum(math.isfinite(n) for n in need)}/{len(need)} seeds); best/so-far at "
                + ", ".join(f"{n}: {v:.2f}" for n, v in zip(points, mean_curve, strict=False))
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
