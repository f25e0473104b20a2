"""nnvm-compile: compile an ONNX model into a library, a graph and params, and optionally run
and time it against the reference.

    nnvm-compile model.onnx -o out/ --shape data=1,3,224,224 --opt-level 3 --run
    nnvm-compile --run            # the built-in demo model (README's main job)

The output folder holds model.so (the C ABI of nnvm_runtime.h), graph.json, model.params (tied
to this build), nnvm_runtime.h and model.h. Errors print `error: ...` and exit 1."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nnvm.support.errors import UserError
from nnvm.tools.common import ArgumentParser, commit_folder, parse_shapes, run_tool


class Progress:
    """A progress bar on a terminal, plain lines otherwise (logs, CI)."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.tty:
            width = 30
            filled = width * done // max(total, 1)
            self.stream.write(
                f"\r{stage:<40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
            )
            if done == total and stage == "kernels":
                self.stream.write("\n")
            self.stream.flush()
        elif stage != self.last and done == 0:
            self.stream.write(f"{stage} ({total} {'kernels' if stage == 'kernels' else 'steps'})\n")
            self.stream.flush()
        self.last = stage


def _load_model(path: str | None):
    import onnx

    if path is None:
        from nnvm.testing.onnx_models import resnet_like

        return resnet_like(image=64, width=16, stages=(1, 1, 1), num_classes=100), "demo-resnet"
    try:
        return onnx.load(path), Path(path).stem
    except FileNotFoundError:
        raise UserError("no such model file", path) from None
    except Exception as err:
        raise UserError(f"not a readable ONNX model: {type(err).__name__}: {err}", path) from None


def _write_outputs(out: Path, graph, lib, params) -> None:
    from nnvm.compiler import save_param_dict
    from nnvm.targets.cpu.entry_point import include_dir, model_header

    commit_folder(
        out,
        {
            "graph.json": graph.to_json().encode(),
            "model.params": save_param_dict(params, graph.model_hash),
            "model.h": model_header(graph).encode(),
            "nnvm_runtime.h": (include_dir() / "nnvm_runtime.h").read_bytes(),
            "model.so": lib.path.read_bytes(),
        },
    )


def _run_and_time(model, graph, lib, params, repeat: int) -> bool:
    import nnvm
    from nnvm.frontend import from_onnx
    from nnvm.reference import run_reference
    from nnvm.runtime import graph_runtime
    from nnvm.testing.onnx_models import random_inputs

    inputs = random_inputs(model, seed=0)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    ours = [m.get_output(k) for k in range(m.get_num_outputs())]
    bench = m.benchmark(number=max(1, repeat), repeat=3)
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = nnvm.get_num_threads()  # the same threads as ours
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        expected = session.run(None, inputs)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(max(1, repeat)):
                session.run(None, inputs)
            times.append((time.perf_counter() - start) * 1e3 / max(1, repeat))
        reference, ref_ms = "onnxruntime", statistics.median(times)
    except ImportError:
        module, ref_params = from_onnx(model)
        start = time.perf_counter()
        expected = run_reference(module, ref_params, inputs)
        reference, ref_ms = "reference executor", (time.perf_counter() - start) * 1e3
    print(
        f"run: nnvm {bench['median_ms']:.3f} ms (median; min {bench['min_ms']:.3f}), "
        f"{reference} {ref_ms:.3f} ms, {nnvm.get_num_threads()} thread(s)"
    )
    ok = True
    for k, (got, want) in enumerate(zip(ours, expected, strict=True)):
        close = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-4)
        err = float(np.max(np.abs(got - want))) if got.size and got.shape == want.shape else 0.0
        print(
            f"output {k}: {list(got.shape)} max abs error {err:.2e} vs {reference}: "
            f"{'OK' if close else 'MISMATCH'}"
        )
        ok &= close
    return ok


def _on_devices(graph) -> str:
    counts = {d: sum(n.device == d for n in graph.nodes) for d in graph.devices}
    return "".join(f" ({k} on {d})" for d, k in counts.items())


def _thread_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def run(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="nnvm-compile", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="ONNX model (default: a built-in demo model)")
    parser.add_argument("-o", "--output", default="nnvm-out", help="output folder")
    parser.add_argument("--target", default="llvm", help="host target, e.g. 'llvm -mcpu=x86-64-v3'")
    parser.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="TARGET",
        help="a device target (a plugin's name) for the kernels it accepts (repeatable)",
    )
    parser.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="load a plugin (targets, passes, dialects) that is not installed (repeatable)",
    )
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="input shape (repeatable)",
    )
    parser.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), default=3)
    parser.add_argument("--run", action="store_true", help="run, check and time the model")
    parser.add_argument("--repeat", type=int, default=10, help="runs per timing round")
    parser.add_argument(
        "--threads",
        type=_thread_count,
        help="threads for parallel kernels in --run (default: NNVM_NUM_THREADS, else all "
        "CPUs); onnxruntime gets the same number",
    )
    parser.add_argument("--timing", action="store_true", help="print where compile time went")
    parser.add_argument("--dump-ir", metavar="DIR", help="write the IR after every stage")
    args = parser.parse_args(argv)
    if args.threads is not None:
        import nnvm

        nnvm.set_num_threads(args.threads)

    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.support.plugins import load_plugin_module

    for plugin in args.load_plugin:
        load_plugin_module(plugin)

    model, name = _load_model(args.model)
    start = time.perf_counter()
    module, params = from_onnx(model, shape=parse_shapes(args.shape) or None)
    import_s = time.perf_counter() - start
    graph, lib, params = build(
        module,
        target=args.target,
        devices=args.device,
        params=params,
        opt_level=args.opt_level,
        dump_ir=args.dump_ir,
        progress=Progress(),
    )
    total_s = time.perf_counter() - start
    _write_outputs(Path(args.output), graph, lib, params)
    times = lib.build_times
    print(
        f"compiled {name} at O{args.opt_level} in {total_s:.2f} s: {len(graph.nodes)} kernel "
        f"calls{_on_devices(graph)}, {len(graph.kernels)} kernels ({times.kernels_cached} from "
        "cache), arena "
        f"{graph.arena_bytes / 2**20:.2f} MiB (naive {graph.naive_bytes / 2**20:.2f} MiB) "
        f"-> {args.output}/"
    )
    if args.timing:
        print(f"  import           {import_s:8.2f} s")
        print(f"  graph passes     {times.graph_passes:8.2f} s")
        for stage, seconds in times.stages.items():
            print(f"    {stage:<18} {seconds:8.2f} s")
        workers = (
            f" (CPU time; {times.kernels_compiled_parallel} kernels in worker processes)"
            if times.kernels_compiled_parallel
            else ""
        )
        print(f"  kernel lowering  {times.lowering:8.2f} s{workers}")
        print(f"  LLVM codegen     {times.codegen:8.2f} s{workers}")
        print(f"  link             {times.link:8.2f} s")
    if args.run:
        return 0 if _run_and_time(model, graph, lib, params, args.repeat) else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool("nnvm-compile", run, argv)


if __name__ == "__main__":
    sys.exit(main())
