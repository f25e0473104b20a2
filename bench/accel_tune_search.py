"""Tuning the accelerator's ResNet-18 layers on its cycle model: how much the tuned tiling and
virtual threads gain over tiling.py's default, and how many trials the cost-model search needs
to come within 95%, 99% and 100% of the best latency found, against random search (issue 19's
search-efficiency question, asked where measurements carry no noise; in parentheses, the seeds
that got there within the budget).

    python -m bench.accel_tune_search --layers 3 --seeds 10 --budget 64
    python -m bench.accel_tune_search --pick 1,2,3,5,6 --seeds 6 --budget 48

Each candidate is measured once (the cycle model is deterministic) and remembered, so every
strategy and seed sees the same numbers; the best found by any run is the goal's reference."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

from xdsl.dialects.builtin import ModuleOp

from nnvm.targets.accel.target import AccelTarget
from nnvm.targets.accel.te_layer import layer_kernel
from nnvm.targets.accel.tiling import Conv2dLayer
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.search import make_search
from nnvm.tune.simulator_runner import SimulatorRunner
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import kernel_task

RESNET18_LAYERS = [  # (cin, cout, size, kernel, stride, pad, occurrences), the stem excluded
    (64, 64, 56, 3, 1, 1, 4),
    (128, 128, 28, 3, 1, 1, 3),
    (256, 256, 14, 3, 1, 1, 3),
    (512, 512, 7, 3, 1, 1, 3),
    (64, 128, 56, 3, 2, 1, 1),
    (128, 256, 28, 3, 2, 1, 1),
    (256, 512, 14, 3, 2, 1, 1),
    (64, 128, 56, 1, 2, 0, 1),
    (128, 256, 28, 1, 2, 0, 1),
    (256, 512, 14, 1, 2, 0, 1),
]


class Table:
    """Seconds per candidate, measured on first ask."""

    def __init__(self, runner: SimulatorRunner, space: TaskSpace):
        self.runner, self.space = runner, space
        self.seconds: dict[str, float] = {}

    def get(self, c: Candidate) -> float:
        if c.key not in self.seconds:
            (r,) = self.runner.measure(self.space.task, self.space, [c])
            self.seconds[c.key] = r.seconds
        return self.seconds[c.key]


def curve(table: Table, strategy: str, seed: int, budget: int, batch: int) -> list[float]:
    """Best-so-far seconds after each trial of one search run."""
    search = make_search(strategy, table.space, seed)
    measured: dict[str, tuple[Candidate, float]] = {}
    out: list[float] = []
    while len(out) < budget:
        proposals = search.next_batch(min(batch, budget - len(out)), measured)
        if not proposals:
            break
        for c in proposals:
            measured[c.key] = (c, table.get(c))
            out.append(min(s for _, s in measured.values()))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.accel_tune_search", description=__doc__)
    p.add_argument("--layers", type=int, default=3, help="the first N layers of the list")
    p.add_argument(
        "--pick", help="comma-separated indices into the list instead (0: the 56x56 3x3 conv)"
    )
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--budget", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args(argv)
    target = AccelTarget()
    runner = SimulatorRunner(MeasureOptions(check=False))
    total_default = total_best = 0.0
    picked = (
        [RESNET18_LAYERS[int(i)] for i in args.pick.split(",")]
        if args.pick
        else RESNET18_LAYERS[: args.layers]
    )
    for cin, cout, size, k, s, pad, count in picked:
        layer = Conv2dLayer(1, cin, size, size, cout, k, k, s, pad)
        fn = layer_kernel(target.accel_config(), layer)
        task = kernel_task(target, f"accel_{cin}_{cout}_{size}_{k}_{s}", ModuleOp([fn]))
        assert task is not None
        table = Table(runner, TaskSpace(task))
        started = time.perf_counter()
        default = table.get(table.space.default())
        runs = {
            strategy: [
                curve(table, strategy, seed, args.budget, args.batch) for seed in range(args.seeds)
            ]
            for strategy in ("random", "evolution")
        }
        best = min(v for v in table.seconds.values() if math.isfinite(v))
        total_default += count * default
        total_best += count * best
        print(
            f"\n{layer} (x{count}): space {task.space_size}, {len(table.seconds)} measured in "
            f"{time.perf_counter() - started:.0f} s; default {default * 1e3:.3f} ms, best "
            f"{best * 1e3:.3f} ms ({default / best:.3f}x)"
        )
        for strategy, curves in runs.items():
            reach = []
            for share in (0.95, 0.99, 1.0):
                need = [
                    next((n + 1 for n, v in enumerate(c) if v <= best / share), math.inf)
                    for c in curves
                ]
                reach.append(
                    f"{share:.0%}: {statistics.median(need):g} "
                    f"({sum(math.isfinite(n) for n in need)}/{len(need)})"
                )
            points = [n for n in (8, 16, 24, 32, 48, 64, 96, 128) if n <= args.budget]
            means = [statistics.fmean(best / c[min(n, len(c)) - 1] for c in curves) for n in points]
            print(
                f"  {strategy:10} median trials to {', '.join(reach)}; best/so-far at "
                + ", ".join(f"{n}: {v:.3f}" for n, v in zip(points, means, strict=True))
            )
    print(
        f"\nthese layers by occurrence: default {total_default * 1e3:.2f} ms, tuned "
        f"{total_best * 1e3:.2f} ms ({total_default / total_best:.3f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
