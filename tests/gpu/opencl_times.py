#!/usr/bin/env python
"""OpenCL-on-PoCL times beside CPU times for the benchmark models (bench.models): each built
for the CPU alone and with devices=["opencl"], outputs compared (rtol 1e-3, atol 1e-4), then
the median of a few runs after one warm-up. PoCL runs on the same CPU: a sanity figure.
`--scalar` also builds each model with the OpenCL target's vector types off (scalar injective
kernels) and times both builds in interleaved rounds.

    python tests/gpu/opencl_times.py [--models mlp,resnet18] [--runs 3] [--scalar]
        [--target 'opencl -tiles=registers']
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))


def _timed(graph, lib, params, inputs, device, runs: int):  # noqa: ANN001
    from nnvm.runtime import graph_runtime

    m = graph_runtime.create(graph, lib, device)
    m.set_input(**params)
    m.run(**inputs)  # warm-up (PoCL compiles each program on first use)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        m.run(**inputs)
        times.append(time.perf_counter() - start)
    outs = [m.get_output(k) for k in range(m.get_num_outputs())]
    return statistics.median(times) * 1e3, outs


def _vectors_against_scalar(module, params, inputs, want, runs: int, target: str):  # noqa: ANN001, ANN202
    """Medians (ms) of the vector and the scalar OpenCL builds, timed in alternate rounds."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.runtime import graph_runtime
    from nnvm.targets.gpu.opencl.target import OpenCLTarget

    runners = []
    for vectors in (True, False):
        OpenCLTarget.vectors = vectors  # type: ignore[misc]
        try:
            g, lib, p = build(module, target="llvm", params=params, devices=[target])
        finally:
            OpenCLTarget.vectors = True  # type: ignore[misc]
        m = graph_runtime.create(g, lib, nnvm.opencl(0))
        m.set_input(**p)
        m.run(**inputs)
        for k, w in enumerate(want):
            np.testing.assert_allclose(m.get_output(k), w, rtol=1e-3, atol=1e-4)
        runners.append(m)
    times: list[list[float]] = [[], []]
    for _ in range(runs):
        for m, t in zip(runners, times, strict=True):
            start = time.perf_counter()
            m.run(**inputs)
            t.append(time.perf_counter() - start)
    return statistics.median(times[0]) * 1e3, statistics.median(times[1]) * 1e3


def main(argv: list[str] | None = None) -> int:
    from bench.models import MODELS

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scalar", action="store_true", help="also time scalar kernels")
    parser.add_argument("--target", default="opencl", help="e.g. 'opencl -tiles=registers'")
    args = parser.parse_args(argv)

    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.testing import onnx_models

    extra = f"{'scalar ms':>12}" if args.scalar else ""
    print(f"{'model':<14}{'CPU ms':>10}{'OpenCL ms':>12}{extra}{'kernels on OpenCL':>20}")
    for name in args.models.split(","):
        model = MODELS[name]()
        inputs = onnx_models.random_inputs(model, seed=0)
        module, params = from_onnx(model)
        g, lib, p = build(module, target="llvm", params=params)
        cpu_ms, want = _timed(g, lib, p, inputs, nnvm.cpu(0), args.runs)
        g, lib, p = build(module, target="llvm", params=params, devices=[args.target])
        placed = sum(1 for n in g.nodes if n.device)
        cl_ms, got = _timed(g, lib, p, inputs, nnvm.opencl(0), args.runs)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
        if args.scalar:
            cl_ms, scalar_ms = _vectors_against_scalar(
                module, params, inputs, want, args.runs, args.target
            )
            extra = f"{scalar_ms:>12.2f}"
        print(f"{name:<14}{cpu_ms:>10.2f}{cl_ms:>12.2f}{extra}{f'{placed}/{len(g.nodes)}':>20}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
