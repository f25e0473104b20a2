"""int8 post-training quantization of a bench model (ResNet-18 by default): calibrate on N
random inputs, quantize, build both graphs for the CPU, then report cosine similarity and top-1
agreement with fp32 over M random inputs, and the run time of each (interleaved, medians).

    python -m bench.quantized_accuracy [--model resnet18] [--calibration 100] [--samples 500]
        [--method percentile] [--requant multiplier] [--out report.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import nnvm
from bench.models import MODELS
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.quantize import accuracy_report, quantize, write_report
from nnvm.runtime import graph_runtime
from nnvm.testing.onnx_models import random_inputs


def _inputs(model, count: int, seed: int):
    return (random_inputs(model, seed=seed + k) for k in range(count))


def _module(module, params):
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    return m


def run_times(f_module, f_params, q_module, q_params, feed, repeat: int) -> dict:
    """Median wall time of one run of each build, measured alternately in one process."""
    builds = {"fp32": _module(f_module, f_params), "int8": _module(q_module, q_params)}
    times: dict[str, list[float]] = {k: [] for k in builds}
    for m in builds.values():
        m.run(**feed)  # warm up
    for _ in range(repeat):
        for name, m in builds.items():
            start = time.perf_counter()
            m.run(**feed)
            times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return {"fp32_ms": med["fp32"], "int8_ms": med["int8"], "repeat": repeat}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18", choices=sorted(MODELS))
    ap.add_argument("--calibration", type=int, default=100, help="calibration inputs")
    ap.add_argument("--samples", type=int, default=500, help="inputs compared with fp32")
    ap.add_argument("--method", default="percentile", choices=["minmax", "percentile", "kl"])
    ap.add_argument("--requant", default="multiplier", choices=["multiplier", "shift"])
    ap.add_argument("--no-skip-first", action="store_true", help="quantize the first conv too")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs of each build")
    ap.add_argument("--out", help="write the report as JSON")
    args = ap.parse_args(argv)

    model = MODELS[args.model]()
    module, params = from_onnx(model)
    start = time.perf_counter()
    q_module, q_params, cal = quantize(
        module,
        params,
        _inputs(model, args.calibration, 10_000),
        method=args.method,
        requant=args.requant,
        skip_first=not args.no_skip_first,
        engine="cpu",
    )
    quantize_s = time.perf_counter() - start
    start = time.perf_counter()
    report = accuracy_report(
        module, params, q_module, q_params, _inputs(model, args.samples, 0), engine="cpu"
    )
    report["compare_s"] = time.perf_counter() - start
    report.update(
        model=args.model,
        method=args.method,
        requant=args.requant,
        skip_first=not args.no_skip_first,
        calibration_inputs=cal.samples,
        quantize_s=quantize_s,
        int8_ops=sum(k.endswith(".weight") and v.dtype == np.int8 for k, v in q_params.items()),
        times=run_times(module, params, q_module, q_params, random_inputs(model), args.repeat),
    )
    print(json.dumps(report, indent=1, sort_keys=True))
    if args.out:
        write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
