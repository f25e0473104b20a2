"""ResNet-18 (the bench model) with its convs on the simulated accelerator: quantize with the
accelerator's shift requantizer, build with `devices=["accel ..."]`, and report

* the accuracy against fp32 over N random inputs (cosine similarity, top-1 agreement, their
  centered forms; nnvm.quantize.accuracy_report with engine="accel"), and that the offloaded
  build equals the CPU build of the same int8 graph bit for bit;
* per offloaded layer, cycles and GEMM-core utilisation with 1 and 2 virtual threads (from the
  accelerator runtime's cycle reports of one inference), and the totals by occurrence.

    python -m bench.accel_resnet [--samples 500] [--calibration 50] [--out report.json]
"""

from __future__ import annotations

import argparse
import json
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


def _ran(module, params, feed, devices=()):
    """The graph module of `module` built with `devices`, after one run on `feed`."""
    graph, lib, p = build(module, params=params, devices=list(devices))
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(**feed)
    return m


def _layer_table(q_module, q_params, feed) -> tuple[list[dict], dict]:
    """Per distinct layer (in the order they run): geometry, occurrences, cycles and GEMM
    utilisation for 1 and 2 virtual threads; and the totals over every launch."""
    rows: dict[str, dict] = {}
    totals = {}
    outputs = []
    for vt in (1, 2):
        m = _ran(q_module, q_params, feed, [f"accel -virtual-threads={vt}"])
        outputs.append(m.get_output(0).copy())
        rt = m.device_runtime("accel")
        for launch in rt.reports:
            plan, _ = rt.plan(launch.kernel)
            L = plan.layer
            key = f"{L.in_channels}, {L.out_channels}, {L.height}, {L.kernel_h}, {L.stride}"
            row = rows.setdefault(key, {"layer (cin, cout, size, k, stride)": key, "count": 0})
            if vt == 1:
                row["count"] += 1
            row[f"vt{vt}_cycles"] = launch.report.total_cycles
            row[f"vt{vt}_utilization"] = round(launch.report.gemm_utilization, 4)
        s = rt.summary()
        totals[f"vt{vt}"] = {
            "launches": s["launches"],
            "cycles": s["cycles"],
            "gemm_utilization": round(s["gemm_utilization"], 4),
            "milliseconds_at_clock": round(s["seconds"] * 1e3, 2),
        }
    totals["vt1_equals_vt2"] = bool(np.array_equal(outputs[0], outputs[1]))
    return list(rows.values()), totals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18", choices=sorted(MODELS))
    ap.add_argument("--calibration", type=int, default=50, help="calibration inputs")
    ap.add_argument("--samples", type=int, default=500, help="inputs compared with fp32")
    ap.add_argument("--method", default="percentile", choices=["minmax", "percentile", "kl"])
    ap.add_argument("--out", help="write the report as JSON")
    args = ap.parse_args(argv)

    model = MODELS[args.model]()
    module, params = from_onnx(model)
    cal = (random_inputs(model, seed=10_000 + k) for k in range(args.calibration))
    q_module, q_params, _ = quantize(
        module, params, cal, method=args.method, requant="shift", engine="cpu"
    )
    feed = random_inputs(model, seed=123)
    layers, totals = _layer_table(q_module, q_params, feed)
    cpu_int8 = _ran(q_module, q_params, feed).get_output(0)
    on_accel = _ran(q_module, q_params, feed, ["accel"]).get_output(0)
    totals["accel_equals_cpu_int8"] = bool(np.array_equal(on_accel, cpu_int8))
    start = time.perf_counter()
    inputs = (random_inputs(model, seed=k) for k in range(args.samples))
    accuracy = accuracy_report(module, params, q_module, q_params, inputs, engine="accel")
    report = {
        "model": args.model,
        "method": args.method,
        "calibration_inputs": args.calibration,
        "accuracy": accuracy,
        "accuracy_s": round(time.perf_counter() - start, 1),
        "layers": layers,
        "totals": totals,
    }
    print(json.dumps(report, indent=1, sort_keys=True))
    if args.out:
        write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
