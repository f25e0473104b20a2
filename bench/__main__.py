"""`python -m bench`: nnvm against onnxruntime, side by side, at 1 and 2 threads.

python -m bench                       # all models, 1 and 2 threads, JSON to bench-results.json
python -m bench --models resnet18 --threads 1 --rounds 9
python -m bench --neighbour           # latency with a CPU-bound neighbour process (bench/neighbour.py)
python -m bench --kernels             # single-op kernel classes off the fast paths (bench/kernels.py)
python -m bench --gemm --threads 1    # GEMM through build() against numpy's sgemm (bench/gemm.py)
python -m bench --suite real          # 25 torch exports nobody tuned for (bench/real.py)
python -m bench --suite real --only vit-b16-4l gpt2-4l --threads 1
python -m bench --suite real --neighbour  # the neighbour bench over the suite's models
python -m bench --efficiency          # per-kernel % of the machine's roof (bench/efficiency.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

import onnx

from bench.flops import model_flops
from bench.harness import compare, table
from bench.models import MODELS
from bench.peak import measure_peak
from nnvm.testing.onnx_models import random_inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", default="bench-results.json", help="where to write results")
    parser.add_argument(
        "--neighbour",
        action="store_true",
        help="quiet 1-thread vs 2-thread latency beside a CPU-bound neighbour process",
    )
    parser.add_argument(
        "--kernels", action="store_true", help="single-op kernel classes (bench/kernels.py)"
    )
    parser.add_argument(
        "--suite", choices=["real"], help="the real-model suite (torch exports, bench/real.py)"
    )
    parser.add_argument(
        "--gemm", action="store_true", help="GEMM through build() vs numpy sgemm (bench/gemm.py)"
    )
    parser.add_argument("--only", nargs="+", help="suite models (or gemm cases) to run")
    parser.add_argument(
        "--efficiency",
        action="store_true",
        help="per-kernel time, GFLOP/s, GB/s and %% of the roof, instead of the side-by-side",
    )
    args = parser.parse_args(argv)
    if args.suite == "real":
        return real_main(args)
    if args.efficiency:
        models = {name: MODELS[name] for name in args.models}
        return efficiency_main(
            {n: (lambda m=m: _with_inputs(m())) for n, m in models.items()}, args
        )
    if args.neighbour:
        return neighbour_main(args)
    if args.kernels:
        return kernels_main(args)
    if args.gemm:
        return gemm_main(args)

    models = {name: MODELS[name] for name in args.models}
    return side_by_side(models, args.threads, args.rounds, args.json, "results")


def gemm_main(args) -> int:
    from bench.gemm import cases, run, table

    labels = [label for label, *_ in cases()]
    unmatched = [o for o in args.only or [] if not any(o in label for label in labels)]
    if unmatched:
        print(f"--only {unmatched} names no GEMM case; the cases are {labels}")
        return 1
    rows = run(args.threads, args.rounds, args.only)
    print(table(rows))
    with open(args.json, "w") as f:
        json.dump({"gemm": [r.as_dict() for r in rows]}, f, indent=1)
    print(f"results written to {args.json}")
    return 0


def kernels_main(args) -> int:
    from bench.kernels import KERNELS

    return side_by_side(KERNELS, args.threads, 5, args.json, "kernels")


def side_by_side(
    models: dict[str, Callable[[], onnx.ModelProto]],
    threads: list[int],
    rounds: int,
    json_path: str,
    json_key: str,
) -> int:
    """Each model against onnxruntime at each thread count (harness.compare), one table, the
    results as JSON under `json_key`."""
    peaks = {t: measure_peak(t) for t in threads}
    for t, p in peaks.items():
        print(f"measured FMA peak, {t} thread(s): {p:.1f} GFLOP/s", flush=True)
    results = []
    for name, make in models.items():
        model = make()
        inputs = random_inputs(model, seed=0)
        flops = model_flops(model)
        for t in threads:
            print(f"{name} on {t} thread(s) ...", flush=True)
            results.append(compare(name, model, inputs, t, flops, peaks[t], rounds=rounds))
    print(table(results))
    with open(json_path, "w") as f:
        json.dump({"peak_gflops": peaks, json_key: [r.as_dict() for r in results]}, f, indent=1)
    print(f"results written to {json_path}")
    return 0


def _with_inputs(model: onnx.ModelProto):
    return model, random_inputs(model, seed=0)


def efficiency_main(models: dict[str, Callable[[], tuple]], args) -> int:
    """One efficiency report per model and thread count (bench/efficiency.py): every model
    built first, then ROUNDS rounds, each measuring the roofs and profiling every model once."""
    from bench.efficiency import ROUNDS, ProfiledModel, report_table
    from bench.peak import measure_bandwidth, measure_read_bandwidth

    profiled, errors = {}, {}

    def failed(name: str, err: Exception) -> None:  # a model we cannot build: say so, go on
        from bench.real import failure

        errors[name] = failure(err)
        profiled.pop(name, None)
        print(f"{name}: {errors[name]}\n", flush=True)

    for name, make in models.items():
        try:
            model, inputs = make()
            profiled[name] = ProfiledModel(name, model, inputs)
            print(f"{name}: built", flush=True)
        except Exception as err:
            failed(name, err)
    roofs = {t: (0.0, 0.0, 0.0) for t in args.threads}
    for k in range(ROUNDS):
        print(f"round {k + 1} of {ROUNDS} ...", flush=True)
        for t in args.threads:
            measured = (measure_peak(t), measure_bandwidth(t), measure_read_bandwidth(t))
            roofs[t] = tuple(map(max, roofs[t], measured))
            for name, model in list(profiled.items()):
                try:
                    model.profile_round(t)
                except Exception as err:
                    failed(name, err)
    reports = []
    for model in profiled.values():
        for t in args.threads:
            report = model.report(t, *roofs[t])
            reports.append(report)
            print(report_table(report) + "\n", flush=True)
    flagged = [(r, k) for r in reports for k in r.low()]
    print(f"kernels below 50% of roof taking over 5% of a model's time: {len(flagged)}")
    for r, k in flagged:
        print(
            f"  {r.model} ({r.threads}t): {k.kernel} {k.share_pct:.0f}% of time, {k.roof_pct:.0f}%"
        )
    with open(args.json, "w") as f:
        json.dump({"efficiency": [r.as_dict() for r in reports], "errors": errors}, f, indent=1)
    print(f"results written to {args.json}")
    return 0


def real_main(args) -> int:
    """The real-model suite: compile times cold and warm, then the side-by-side table."""
    from bench.harness import compare
    from bench.real import (
        SUITE,
        compile_table,
        compile_times,
        ensure_exported,
        failure,
        fresh_kernel_cache,
        load,
    )
    from bench.real_export import default_dir

    names = args.only or list(SUITE)
    unknown = sorted(set(names) - set(SUITE))
    if unknown:
        print(f"unknown suite models {unknown}; the suite has {sorted(SUITE)}")
        return 1
    directory = default_dir()
    ensure_exported(names, directory)
    if args.efficiency:
        return efficiency_main({n: (lambda n=n: load(n, directory)) for n in names}, args)
    if args.neighbour:
        return neighbour_main(args, {n: (lambda n=n: load(n, directory)) for n in names})
    peaks = {t: measure_peak(t) for t in args.threads}
    compiles, results = [], []
    for name in names:
        try:
            model, inputs = load(name, directory)
            print(f"{name}: compiling cold and warm ...", flush=True)
            with fresh_kernel_cache():  # the side-by-side builds reuse the warm cache
                compiles.append(compile_times(name, model))
                flops = model_flops(model)
                for t in args.threads:
                    print(f"{name} on {t} thread(s) ...", flush=True)
                    results.append(compare(name, model, inputs, t, flops, peaks[t], args.rounds))
        except Exception as err:  # a model we cannot import, build or match: a row, go on
            from bench.real import CompileTimes

            compiles = [c for c in compiles if c.model != name]
            compiles.append(CompileTimes(name, SUITE[name].family, 0, 0, 0, failure(err)))
            print(f"{name}: {failure(err)}", flush=True)
    print(compile_table(compiles))
    print(table(results))
    with open(args.json, "w") as f:
        json.dump(
            {
                "peak_gflops": peaks,
                "compile": [c.as_dict() for c in compiles],
                "results": [r.as_dict() for r in results],
            },
            f,
            indent=1,
        )
    print(f"results written to {args.json}")
    return 0


def neighbour_main(args, models=None) -> int:
    """Quiet 1-thread against busy 2-thread latency: the five models, or the suite's
    (`--suite real --neighbour`; `models`: name -> loader of (model, inputs))."""
    from bench.neighbour import neighbour_compare, neighbour_table

    if models is None:
        models = {n: (lambda n=n: _with_inputs(MODELS[n]())) for n in args.models}
    results = []
    for name, loader in models.items():
        print(f"{name} beside a busy neighbour ...", flush=True)
        model, inputs = loader()
        results.append(neighbour_compare(name, model, inputs))
    print(neighbour_table(results))
    with open(args.json, "w") as f:
        json.dump({"neighbour": [r.as_dict() for r in results]}, f, indent=1)
    print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
