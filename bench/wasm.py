"""The wasm target in node beside the native CPU target on one thread (issue 21): per model,
the median run latency of each, their ratio (and that of the best runs, steadier on a busy
machine), the .wasm's size, and the time node takes to
compile and instantiate it (fresh processes). Reports numbers; asserts nothing.

    python -m bench.wasm [--models mlp,resnet_like,transformer_encoder] [--bench-sizes]
                         [--runs 30] [--scalar] [--native-also 'llvm -mcpu=x86-64-v2']

The default models are the test models (nnvm.testing.onnx_models); --bench-sizes takes the
benchmark versions (bench.models: mlp, resnet18, bert2).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

import numpy as np

WARMUP = 5
"""Runs dropped before timing in node: V8 runs Liftoff code until TurboFan's is ready."""
INSTANTIATE_SAMPLES = 3


def _node_run(folder: Path, inputs: list[Path], runs: int) -> dict:
    runner = Path(str(resources.files("nnvm.targets.wasm") / "run_node.js"))
    cmd = ["node", str(runner), str(folder / "model.wasm"), str(folder / "model.params")]
    proc = subprocess.run(
        [*cmd, *map(str, inputs), "--repeat", str(runs)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"node failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _wasm(model, inputs: dict, folder: Path, target: str, runs: int) -> dict:
    from nnvm.compiler import build, save_param_dict
    from nnvm.frontend import from_onnx

    module, params = from_onnx(model)
    start = time.perf_counter()
    graph, lib, params = build(module, target=target, params=params)
    build_s = time.perf_counter() - start
    folder.mkdir(parents=True, exist_ok=True)
    lib.export_library(folder / "model.wasm")
    (folder / "model.params").write_bytes(save_param_dict(params, graph.model_hash))
    paths = []
    for k, info in enumerate(graph.inputs):
        path = folder / f"in{k}.bin"
        np.ascontiguousarray(inputs[info["name"]], dtype=info["dtype"]).tofile(path)
        paths.append(path)
    timed = _node_run(folder, paths, WARMUP + runs)
    instantiate = [timed["instantiate_ms"]]
    instantiate += [
        _node_run(folder, paths, 1)["instantiate_ms"] for _ in range(INSTANTIATE_SAMPLES - 1)
    ]
    return {
        "build_s": build_s,
        "run_ms": statistics.median(timed["run_ms"][WARMUP:]),
        "best_ms": min(timed["run_ms"][WARMUP:]),
        "instantiate_ms": statistics.median(instantiate),
        "wasm_kb": (folder / "model.wasm").stat().st_size / 1024,
        "params_kb": (folder / "model.params").stat().st_size / 1024,
    }


def _native_ms(model, inputs: dict, runs: int, target: str = "llvm") -> tuple[float, float]:
    """(median, best) of `runs` timed runs, in ms."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.rpc.timing import time_run
    from nnvm.runtime import graph_runtime

    nnvm.set_num_threads(1)
    module, params = from_onnx(model)
    graph, lib, params = build(module, target=target, params=params)
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.set_input(**inputs)
    result = time_run(m.run, number=1, repeat=runs)
    return statistics.median(result.results) * 1e3, min(result.results) * 1e3


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.wasm")
    p.add_argument("--models", help="comma-separated (default: the three of the chosen size)")
    p.add_argument("--bench-sizes", action="store_true", help="bench.models' full-size versions")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--scalar", action="store_true", help="also time a -mattr=-simd128 build")
    p.add_argument(
        "--native-also",
        default="",
        help="a second native target to time, e.g. 'llvm -mcpu=x86-64-v2' (128-bit SSE)",
    )
    args = p.parse_args(argv)

    from nnvm.testing import onnx_models

    if args.bench_sizes:
        from bench.models import MODELS

        names = (args.models or "mlp,resnet18,bert2").split(",")
        makers = {n: MODELS[n] for n in names}
    else:
        names = (args.models or "mlp,resnet_like,transformer_encoder").split(",")
        makers = {n: getattr(onnx_models, n) for n in names}
    tmp = Path(tempfile.mkdtemp(prefix="bench-wasm-"))
    head = "| model | native 1 thread ms |"
    rule = "|---|---:|"
    if args.native_also:
        head += f" {args.native_also} ms |"
        rule += "---:|"
    head += " wasm node ms | ratio | ratio of bests |"
    rule += "---:|---:|---:|"
    if args.scalar:
        head += " wasm no-SIMD ms |"
        rule += "---:|"
    head += " .wasm KiB | params KiB | instantiate ms | wasm build s |"
    rule += "---:|---:|---:|---:|"
    rows = [head, rule]
    for name, make in makers.items():
        model = make()
        inputs = onnx_models.random_inputs(model, seed=0)
        native, native_best = _native_ms(model, inputs, args.runs)
        row = f"| {name} | {native:.3f} |"
        if args.native_also:
            row += f" {_native_ms(model, inputs, args.runs, args.native_also)[0]:.3f} |"
        wasm = _wasm(model, inputs, tmp / name, "wasm", args.runs)
        row += f" {wasm['run_ms']:.3f} | {wasm['run_ms'] / native:.2f}x |"
        row += f" {wasm['best_ms'] / native_best:.2f}x |"
        if args.scalar:
            scalar = _wasm(model, inputs, tmp / f"{name}-scalar", "wasm -mattr=-simd128", args.runs)
            row += f" {scalar['run_ms']:.3f} |"
        row += (
            f" {wasm['wasm_kb']:.0f} | {wasm['params_kb']:.0f} | {wasm['instantiate_ms']:.1f} |"
            f" {wasm['build_s']:.1f} |"
        )
        rows.append(row)
        print(row, flush=True)
    print()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
