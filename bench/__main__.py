"""`python -m bench`: nnvm against onnxruntime, side by side, at 1 and 2 threads.

python -m bench                       # all models, 1 and 2 threads, JSON to bench-results.json
python -m bench --models resnet18 --threads 1 --rounds 9
python -m bench --neighbour           # latency with a CPU-bound neighbour process (bench/neighbour.py)
python -m bench --kernels             # single-op kernel classes off the fast paths (bench/kernels.py)
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
    args = parser.parse_args(argv)
    if args.neighbour:
        return neighbour_main(args)
    if args.kernels:
        return kernels_main(args)

    models = {name: MODELS[name] for name in args.models}
    return side_by_side(models, args.threads, args.rounds, args.json, "results")


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


def neighbour_main(args) -> int:
    from bench.neighbour import neighbour_compare, neighbour_table

    results = []
    for name in args.models:
        print(f"{name} beside a busy neighbour ...", flush=True)
        model = MODELS[name]()
        results.append(neighbour_compare(name, model, random_inputs(model, seed=0)))
    print(neighbour_table(results))
    with open(args.json, "w") as f:
        json.dump({"neighbour": [r.as_dict() for r in results]}, f, indent=1)
    print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
