"""Tuned against default, side by side with onnxruntime (issue 19's tables).

    python -m bench.tuned --log tune.jsonl --models resnet18 bert2 --threads 1 2
    python -m bench.tuned --log tune.jsonl --onnx ~/.cache/nnvm/bench-real/convnext.onnx

Per task (from the log): the default's time, the best record's, their ratio, and the geometric
mean over the tasks. Per model: the default build, the tuned build (`build(tuning_log=)`) and
onnxruntime, in interleaved rounds in one process (each round runs all three, in a rotating
order), medians and ratios. The tuned build's output is checked against onnxruntime first."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx

from bench.harness import _time_ms, ort_session, settle
from bench.models import MODELS
from nnvm.support.tuning_log import read_log
from nnvm.testing.onnx_models import random_inputs


def task_table(log_path: str, target: str | None = None) -> tuple[str, float]:
    """Rows of (task, default ms, best ms, speedup) from the log, and the geomean speedup."""
    log = read_log(log_path)
    by: dict[str, list] = {}
    for r in log.trials:
        if target is None or r.target == target:
            by.setdefault(r.workload, []).append(r)
    lines = [
        f"{'kernel':44} {'trials':>6} {'default ms':>10} {'tuned ms':>9} {'speedup':>7} "
        f"{'confirmed':>9}"
    ]
    gains, confirmed = [], []
    for records in by.values():
        ok = [r for r in records if r.ok]
        if not ok:
            continue
        default, best = ok[0], min(ok, key=lambda r: r.seconds)
        gain = default.seconds / best.seconds
        gains.append(gain)
        again = log.confirmed_speedup.get((default.workload, default.target), math.nan)
        confirmed.append(again)
        shapes = " ".join("x".join(map(str, s)) for s in default.shapes)[:44]
        lines.append(
            f"{shapes:44} {len(records):>6} {default.seconds * 1e3:>10.3f} "
            f"{best.seconds * 1e3:>9.3f} {gain:>6.2f}x {again:>8.2f}x"
        )
    lines.append(f"geometric mean over {len(gains)} tasks: search {_geomean(gains):.2f}x, ")
    lines[-1] += f"confirmed {_geomean([c for c in confirmed if math.isfinite(c)]):.2f}x"
    return "\n".join(lines), _geomean(gains)


def _geomean(xs: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else float("nan")


def _runtime(model: onnx.ModelProto, threads: int, log: str | None):
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime

    nnvm.set_num_threads(threads)
    module, params = from_onnx(model)
    graph, lib, params = build(module, params=params, tuning_log=log)
    rt = graph_runtime.create(graph, lib, nnvm.cpu(0))
    rt.set_input(**params)
    return rt, lib.build_times


def compare_model(
    name: str,
    model: onnx.ModelProto,
    log: str,
    threads: int,
    rounds: int = 7,
    inputs: dict[str, np.ndarray] | None = None,
):
    import nnvm

    inputs = inputs if inputs is not None else random_inputs(model, seed=0)
    default, _ = _runtime(model, threads, None)
    tuned, times = _runtime(model, threads, log)
    session = ort_session(model, threads)
    tuned.run(**inputs)
    default.run(**inputs)
    for k, want in enumerate(session.run(None, inputs)):
        got = tuned.get_output(k)
        scale = max(float(np.max(np.abs(want))) if want.size else 1.0, 1.0)
        if not np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale):
            raise AssertionError(f"{name}: the tuned build's output {k} differs from onnxruntime")
    runs = {"default": default.run, "tuned": tuned.run, "ort": lambda: session.run(None, inputs)}
    once = max(_time_ms(f, 1) for f in runs.values())
    number = max(1, int(200 / max(once, 1e-3)))
    nnvm.set_num_threads(threads)
    got: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for r in range(rounds):
        for key in order[r % 3 :] + order[: r % 3]:
            settle()
            got[key].append(_time_ms(runs[key], number))
    med = {k: statistics.median(v) for k, v in got.items()}
    return med, times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tuned", description=__doc__)
    p.add_argument("--log", required=True)
    p.add_argument("--models", nargs="*", default=[], choices=sorted(MODELS))
    p.add_argument("--onnx", nargs="*", default=[], help="ONNX files (e.g. real-suite exports)")
    p.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    text, _ = task_table(args.log)
    print(text)
    models = [(n, MODELS[n](), None) for n in args.models]
    for f in args.onnx:  # a real-suite export's sample inputs are beside it (NAME.npz)
        npz = Path(f).with_suffix(".npz")
        inputs = dict(np.load(npz)) if npz.exists() else None
        models.append((Path(f).stem, onnx.load(f), inputs))
    print(
        f"\n{'model':16} {'thr':>3} {'default ms':>10} {'tuned ms':>9} {'ort ms':>8} "
        f"{'tuned/default':>13} {'tuned/ort':>9} kernels tuned"
    )
    for name, model, inputs in models:
        for threads in args.threads:
            start = time.perf_counter()
            med, times = compare_model(name, model, args.log, threads, args.rounds, inputs)
            print(
                f"{name:16} {threads:>3} {med['default']:>10.3f} {med['tuned']:>9.3f} "
                f"{med['ort']:>8.3f} {med['default'] / med['tuned']:>12.2f}x "
                f"{med['tuned'] / med['ort']:>9.2f} {times.kernels_tuned}/"
                f"{times.kernels_tuned + times.kernels_untuned} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
