"""nnvm-compile: compile an ONNX model into a library, a graph and params, and optionally run
and time it against the reference.

    nnvm-compile model.onnx -o out/ --shape data=1,3,224,224 --opt-level 3 --run
    nnvm-compile --run            # the built-in demo model (README's main job)
    nnvm-compile bert.onnx --shape input_ids=1,128 --run --threads 1
    nnvm-compile --graph-svg fused.svg   # a picture of the fused graph (needs graphviz)
    nnvm-compile model.onnx --quantize shift --calibration calib.npz --device accel --run

The output folder holds libmodel.so (the C ABI of nnvm_runtime.h; `cc app.c -Iout -Lout -lmodel`,
docs/deploy-c.md), graph.json, model.params (tied to this build), nnvm_runtime.h and model.h.
Errors print `error: ...` and exit 1."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from nnvm.support.errors import UserError
from nnvm.tools.common import (
    ArgumentParser,
    OutputFiles,
    add_device_options,
    commit_folder,
    parse_shapes,
    run_tool,
)
from nnvm.tools.quantize_options import add_quantize_options, quantize_from_args


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
    from nnvm.targets.cpu.link import with_soname

    commit_folder(
        out,
        {
            "graph.json": graph.to_json().encode(),
            "model.params": save_param_dict(params, graph.model_hash),
            "model.h": model_header(graph).encode(),
            "nnvm_runtime.h": (include_dir() / "nnvm_runtime.h").read_bytes(),
            # lib<name>.so, SONAME included, so `-lmodel` links it and the program finds it on
            # its rpath (re-export under another name to link two models: docs/deploy-c.md)
            "libmodel.so": with_soname(lib.path.read_bytes(), "libmodel.so"),
        },
    )


def _graph_inputs(model) -> list:
    """The model's real inputs (initializers listed as inputs are weights, not inputs)."""
    initialized = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in initialized]


def _complete_shapes(model, shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """Every input needs concrete dims: the model's, --shape's (or an --input file's), or a
    symbolic dim's value bound by another input's shape (`--shape input_ids=1,128` gives
    attention_mask[batch, seq] too); a clear error naming the input, the dim and the flag
    otherwise."""
    shapes = dict(shapes)
    bound: dict[str, int] = {}
    inputs = _graph_inputs(model)
    for vi in inputs:
        given = shapes.get(vi.name)
        dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else []
        if given is not None and len(given) == len(dims):
            for d, value in zip(dims, given, strict=True):
                if d.dim_param and not d.HasField("dim_value"):
                    bound.setdefault(d.dim_param, value)
    for vi in inputs:
        if vi.name in shapes:
            continue
        ttype = vi.type.tensor_type
        if not ttype.HasField("shape"):
            raise UserError(
                f"input '{vi.name}' has no declared shape; pass --shape {vi.name}=D0,D1,..."
            )
        dims = list(ttype.shape.dim)
        concrete: list[int] = []
        for axis, d in enumerate(dims):
            if d.HasField("dim_value"):
                concrete.append(int(d.dim_value))
            elif d.dim_param in bound:
                concrete.append(bound[d.dim_param])
            else:
                example = ",".join(
                    str(e.dim_value) if e.HasField("dim_value") else str(bound.get(e.dim_param, 1))
                    for e in dims
                )
                what = (
                    f"a symbolic dimension '{d.dim_param}'"
                    if d.dim_param
                    else "an unknown dimension"
                )
                raise UserError(
                    f"input '{vi.name}' has {what} (axis {axis}); pass --shape {vi.name}={example}"
                )
        if any(not d.HasField("dim_value") for d in dims):
            shapes[vi.name] = concrete
    return shapes


def _load_input_files(specs: Sequence[str]) -> dict[str, np.ndarray]:
    """`--input name=file.npy` (repeatable)."""
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            raise UserError(f"--input expects NAME=FILE.npy, got {spec!r}")
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise UserError("no such input file", path) from None
        except (OSError, ValueError) as err:
            raise UserError(f"not a readable .npy array: {err}", path) from None
        if not isinstance(array, np.ndarray):
            raise UserError("holds several arrays (.npz); --input takes one .npy array", path)
        arrays[name] = array
    return arrays


def _check_input_files(model, files: dict[str, np.ndarray], shapes: dict[str, list[int]]) -> None:
    """--input files against the model's inputs, before the build."""
    from onnx.helper import tensor_dtype_to_np_dtype

    inputs = {vi.name: vi for vi in _graph_inputs(model)}
    for name, array in files.items():
        vi = inputs.get(name)
        if vi is None:
            raise UserError(
                f"--input {name}: the model has no input {name!r} (inputs: "
                f"{', '.join(inputs) or 'none'})"
            )
        if name in shapes and list(array.shape) != list(shapes[name]):
            raise UserError(
                f"--input {name}: the file holds shape {list(array.shape)}, the model was "
                f"compiled for {list(shapes[name])}"
            )
        elem = vi.type.tensor_type.elem_type
        if elem and array.dtype != np.dtype(tensor_dtype_to_np_dtype(elem)):
            raise UserError(
                f"--input {name}: the file holds {array.dtype}, the model takes "
                f"{np.dtype(tensor_dtype_to_np_dtype(elem))}"
            )


_PASS_THROUGH = {"Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Expand"}
"""Ops that keep index values as they are (a token id stays an index into the same table)."""


def _index_bound(model, name: str) -> int | None:
    """The smallest table an integer input indexes through Gather (the vocabulary of
    input_ids, the type-vocabulary of token_type_ids), following casts and reshapes; None when
    it indexes no table of known size."""
    import onnx
    from onnx import numpy_helper

    sizes: dict[str, list[int]] = {t.name: list(t.dims) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    sizes[node.output[0]] = list(numpy_helper.to_array(attr.t).shape)
    consumers: dict[str, list] = {}
    for node in model.graph.node:
        for k, value in enumerate(node.input):
            consumers.setdefault(value, []).append((node, k))
    bounds: list[int] = []
    seen, todo = {name}, [name]
    while todo:
        value = todo.pop()
        for node, k in consumers.get(value, []):
            if node.op_type == "Gather" and k == 1 and node.input[0] in sizes:
                axis = next(
                    (
                        onnx.helper.get_attribute_value(a)
                        for a in node.attribute
                        if a.name == "axis"
                    ),
                    0,
                )
                shape = sizes[node.input[0]]
                if -len(shape) <= axis < len(shape) and shape[axis] > 0:
                    bounds.append(shape[axis])
            elif node.op_type in _PASS_THROUGH and k == 0:
                for out in node.output:
                    if out not in seen:
                        seen.add(out)
                        todo.append(out)
    return min(bounds) if bounds else None


def _make_inputs(model, graph, files: dict[str, np.ndarray], seed: int = 0):
    """Inputs of the compiled shapes and the model's dtypes, keyed by our names and by the ONNX
    names: --input files where given; otherwise standard-normal floats, token ids in [0, vocab)
    for integer inputs that index a table (small non-negative integers for other integers, ones
    for integer masks), and mostly-true bool masks."""
    rng = np.random.default_rng(seed)
    onnx_names = [vi.name for vi in _graph_inputs(model)]
    if len(onnx_names) != len(graph.inputs):
        onnx_names = [str(inp["name"]) for inp in graph.inputs]
    known = set(onnx_names) | {str(inp["name"]) for inp in graph.inputs}
    for name in files:
        if name not in known:
            raise UserError(
                f"--input {name}: the model has no input {name!r} (inputs: "
                f"{', '.join(onnx_names) or 'none'})"
            )
    ours: dict[str, np.ndarray] = {}
    theirs: dict[str, np.ndarray] = {}
    for onnx_name, inp in zip(onnx_names, graph.inputs, strict=True):
        shape, dtype = tuple(inp["shape"]), np.dtype(inp["dtype"])
        array = files.get(onnx_name, files.get(str(inp["name"])))
        if array is not None:
            if array.shape != shape:
                raise UserError(
                    f"--input {onnx_name}: the file holds shape {list(array.shape)}, the model "
                    f"was compiled for {list(shape)} (pass --shape {onnx_name}=...)"
                )
            if array.dtype != dtype:
                raise UserError(
                    f"--input {onnx_name}: the file holds {array.dtype}, the model takes {dtype}"
                )
        elif dtype == np.bool_:
            array = rng.random(shape) < 0.75
        elif np.issubdtype(dtype, np.integer):
            bound = _index_bound(model, onnx_name)
            if bound is None and "mask" in onnx_name.lower():
                array = np.ones(shape, dtype)
            else:
                high = bound if bound is not None else 2
                if np.iinfo(dtype).max < high:
                    high = int(np.iinfo(dtype).max) + 1
                array = rng.integers(0, high, size=shape).astype(dtype)
        elif np.issubdtype(dtype, np.floating):
            array = rng.standard_normal(shape).astype(dtype)
        else:
            raise UserError(
                f"input '{onnx_name}' has dtype {dtype}, which --run cannot make up; pass "
                f"--input {onnx_name}=FILE.npy"
            )
        ours[str(inp["name"])] = array
        theirs[onnx_name] = array
    return ours, theirs


def _relative_error(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """max |got - want| / max |want| (NaN where both are NaN counts as equal, a lone NaN as an
    infinite error), and max |want|."""
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(got64) & np.isnan(want64)
    with np.errstate(invalid="ignore"):
        diff = np.where(both_nan, 0.0, np.abs(got64 - want64))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(want64[np.isfinite(want64)])
    scale = float(finite.max()) if finite.size else 0.0
    worst = float(diff.max()) if diff.size else 0.0
    return (worst / scale if scale > 0 else worst), scale


def _cosine(got: np.ndarray, want: np.ndarray) -> float:
    a = got.astype(np.float64).ravel()
    b = want.astype(np.float64).ravel()
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norms if norms > 0 else float(np.array_equal(a, b))


def _tolerance(dtype: np.dtype) -> float:
    if dtype == np.float16:
        return 1e-2
    if np.issubdtype(dtype, np.floating):
        return 1e-3
    return 0.0  # integers and bools must match exactly


def _reference_outputs(model, shapes, inputs_onnx, repeat: int):
    """The outputs of onnxruntime (with our thread count) or, without it, of the reference
    executor; with the reference's name and its median time per run."""
    import nnvm

    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = nnvm.get_num_threads()  # the same threads as ours
        options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(
                model.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
            expected = session.run(None, inputs_onnx)
        except Exception as err:  # onnxruntime's own errors: fall back to our reference
            text = " ".join(str(err).split())[:200]
            print(f"onnxruntime cannot run this model ({text}); using the reference executor")
        else:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(max(1, repeat)):
                    session.run(None, inputs_onnx)
                times.append((time.perf_counter() - start) * 1e3 / max(1, repeat))
            return expected, "onnxruntime", statistics.median(times)
    from nnvm.frontend import from_onnx
    from nnvm.reference import run_reference

    module, ref_params = from_onnx(model, shape=shapes or None)
    start = time.perf_counter()
    expected = run_reference(module, ref_params, inputs_onnx)
    return expected, "reference executor", (time.perf_counter() - start) * 1e3


def _run_and_time(
    model, graph, lib, params, repeat: int, shapes=None, files=None, quantized: bool = False
) -> bool:
    """Run, time and compare with onnxruntime (or the reference executor). A quantized
    build is compared with the float model: its error is what int8 costs, reported and not
    failed on."""
    import nnvm
    from nnvm.runtime import graph_runtime

    inputs, inputs_onnx = _make_inputs(model, graph, files or {})
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    ours = [m.get_output(k) for k in range(m.get_num_outputs())]
    bench = m.benchmark(number=max(1, repeat), repeat=3)
    expected, reference, ref_ms = _reference_outputs(model, shapes, inputs_onnx, repeat)
    print(
        f"run: nnvm {bench['median_ms']:.3f} ms (median; min {bench['min_ms']:.3f}), "
        f"{reference} {ref_ms:.3f} ms, {nnvm.get_num_threads()} thread(s)"
    )
    names = [o.name for o in model.graph.output]
    ok = True
    for k, (got, want) in enumerate(zip(ours, expected, strict=True)):
        want = np.asarray(want)
        label = f"output {k}" + (f" '{names[k]}'" if k < len(names) and names[k] else "")
        if got.shape != want.shape:
            print(
                f"{label}: shape {list(got.shape)}, {reference} gives {list(want.shape)}: MISMATCH"
            )
            ok = False
            continue
        rel, scale = _relative_error(got, want)
        close = rel <= _tolerance(want.dtype)
        verdict = "OK" if close else "MISMATCH"
        if quantized:
            verdict = f"int8 vs float, cosine similarity {_cosine(got, want):.5f}"
            close = True
        print(
            f"{label}: {list(got.shape)} {got.dtype} max relative error {rel:.2e} "
            f"(max |expected| {scale:.3g}) vs {reference}: {verdict}"
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
    add_device_options(
        parser, "a device target (a plugin's name) for the kernels it accepts (repeatable)"
    )
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="input shape (repeatable)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input for --run from a .npy file (repeatable; its shape is the input's shape "
        "unless --shape says otherwise); other inputs are made up in the model's dtypes",
    )
    parser.add_argument("--opt-level", type=int, choices=(0, 1, 2, 3), default=3)
    parser.add_argument(
        "--tuning-log",
        metavar="LOG.jsonl",
        help="schedules from nnvm-tune's log for the kernels it has records of",
    )
    add_quantize_options(parser)
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
    parser.add_argument(
        "--graph-svg",
        metavar="FILE.svg",
        help="draw the fused graph (kernels, the ops they fuse, shapes) as SVG through "
        "Graphviz's dot",
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        import nnvm

        nnvm.set_num_threads(args.threads)

    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.support.plugins import load_plugin_module

    for plugin in args.load_plugin:
        load_plugin_module(plugin)

    if args.graph_svg:
        from nnvm.support.graph_dot import dot_program

        dot_program()  # before the build: no graphviz, no waiting
    model, name = _load_model(args.model)
    shapes = parse_shapes(args.shape)
    if args.input and not args.run:
        raise UserError("--input gives inputs for --run; pass --run too")
    files = _load_input_files(args.input)
    _check_input_files(model, files, shapes)
    for key, array in files.items():
        shapes.setdefault(key, list(array.shape))
    shapes = _complete_shapes(model, shapes)
    start = time.perf_counter()
    module, params = from_onnx(model, shape=shapes or None)
    quantized = quantize_from_args(module, params, args)
    if quantized is not None:
        module, params = quantized.module, quantized.params
        print(quantized.summary)
    import_s = time.perf_counter() - start
    graph, lib, params = build(
        module,
        target=args.target,
        devices=args.device,
        params=params,
        opt_level=args.opt_level,
        dump_ir=args.dump_ir,
        progress=Progress(),
        tuning_log=args.tuning_log,
    )
    total_s = time.perf_counter() - start
    svg = None
    if args.graph_svg:
        from nnvm.support.graph_dot import executor_graph_to_dot, render

        svg = render(executor_graph_to_dot(graph, title=f"{name} (fused, O{args.opt_level})"))
    _write_outputs(Path(args.output), graph, lib, params)
    if svg is not None:
        files_out = OutputFiles()
        files_out.add(args.graph_svg, svg)
        files_out.commit()
    times = lib.build_times
    print(
        f"compiled {name} at O{args.opt_level} in {total_s:.2f} s: {len(graph.nodes)} kernel "
        f"calls{_on_devices(graph)}, {len(graph.kernels)} kernels ({times.kernels_cached} from "
        "cache), arena "
        f"{graph.arena_bytes / 2**20:.2f} MiB (naive {graph.naive_bytes / 2**20:.2f} MiB) "
        f"-> {args.output}/"
    )
    if args.tuning_log:
        print(
            f"  tuning log: {times.kernels_tuned} kernels tuned, {times.kernels_untuned} with "
            "their default schedule"
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
        quantized_run = quantized is not None
        ok = _run_and_time(model, graph, lib, params, args.repeat, shapes, files, quantized_run)
        return 0 if ok else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool("nnvm-compile", run, argv)


if __name__ == "__main__":
    sys.exit(main())
