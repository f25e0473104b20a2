"""`--quantize` and `--calibration` for nnvm-compile and nnvm-tune: the int8 graph of
nnvm.quantize (docs/quantization.md) from the command line, so a model can be built, run and
tuned for the accelerator (`--device accel`, which takes shift-requantized layers) without
Python.

    nnvm-compile model.onnx --quantize shift --calibration calib.npz --device accel --run
    nnvm-tune model.onnx --quantize shift --calibration calib.npz --device accel --log t.jsonl

The calibration is a `.npz` of inputs (each model input by name, with the samples on a first
axis, or one sample of the input's own shape), a calibration saved earlier for this graph
(`.json`, `Calibration.save`), or `random:N`: N seeded standard-normal inputs. Random data fits
the scales to noise: enough to time and tune (only shapes decide a schedule), not for accuracy."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from nnvm.support.errors import UserError

REQUANTS = ("multiplier", "float", "shift")
METHODS = ("percentile", "minmax", "kl")
RANDOM_PREFIX = "random:"


def add_quantize_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("int8 quantization (docs/quantization.md)")
    group.add_argument(
        "--quantize",
        choices=REQUANTS,
        metavar="REQUANT",
        help="quantize conv2d/dense/matmul to int8 with this requantizer: multiplier (int32 "
        "fixed point), float (as onnxruntime) or shift (powers of two: the accelerator's)",
    )
    group.add_argument(
        "--calibration",
        metavar="FILE.npz|FILE.json|random:N",
        help="what sets the activation scales: inputs (.npz, samples on a first axis), a saved "
        "calibration (.json), or N random inputs (timing and tuning only)",
    )
    group.add_argument("--calibration-method", choices=METHODS, default="percentile")
    group.add_argument(
        "--quantize-first",
        action="store_true",
        help="quantize the first conv/dense too (by default it stays float)",
    )


@dataclass
class Quantized:
    module: ModuleOp
    params: dict[str, np.ndarray]
    summary: str
    """One line for the tool's output: requantizer, method and what calibrated it."""


def quantize_from_args(
    module: ModuleOp, params: Mapping[str, np.ndarray], args: argparse.Namespace
) -> Quantized | None:
    """The quantized graph the options ask for, or None without --quantize."""
    if args.quantize is None:
        if args.calibration is not None:
            raise UserError("--calibration sets the scales of --quantize: pass --quantize too")
        return None
    if args.calibration is None:
        raise UserError(
            "--quantize needs --calibration: inputs (FILE.npz), a saved calibration "
            "(FILE.json) or random:N"
        )
    from nnvm.quantize import quantize

    source, described = _calibration_source(args.calibration, _input_specs(module))
    qm, qp, cal = quantize(
        module,
        params,
        source,
        method=args.calibration_method,
        requant=args.quantize,
        skip_first=not args.quantize_first,
    )
    summary = (
        f"quantized to int8 ({args.quantize} requantization, {args.calibration_method} ranges "
        f"from {described}, {cal.samples} sample{'s' if cal.samples != 1 else ''})"
    )
    return Quantized(qm, dict(qp), summary)


def _input_specs(module: ModuleOp) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
    from nnvm.support.ir import argument_names, find_function

    fn = find_function(module)
    specs = {}
    for name, arg in zip(argument_names(fn), fn.body.block.args, strict=True):
        t = arg.type
        shape = tuple(int(d) for d in t.get_shape())  # type: ignore[attr-defined]
        specs[name] = (shape, numpy_dtype_of(t.element_type))  # type: ignore[attr-defined]
    return specs


def _calibration_source(text: str, specs: dict[str, tuple[tuple[int, ...], np.dtype]]):
    """(what quantize() takes as calibration, a description of it)."""
    if text.startswith(RANDOM_PREFIX):
        count = text[len(RANDOM_PREFIX) :]
        if not count.isdigit() or int(count) < 1:
            raise UserError(f"--calibration {text}: random:N needs a count N >= 1")
        for name, (_, dtype) in specs.items():
            if not np.issubdtype(dtype, np.floating):
                raise UserError(
                    f"--calibration random:N makes float inputs; input {name!r} is {dtype}: "
                    "give inputs in a .npz"
                )
        return _random_inputs(specs, int(count)), f"{count} random inputs"
    path = Path(text)
    if not path.is_file():
        raise UserError("no such calibration file", text)
    if path.suffix == ".json":
        from nnvm.quantize import Calibration

        return Calibration.load(path), path.name
    if path.suffix != ".npz":
        raise UserError("a calibration is a .npz of inputs or a saved .json calibration", text)
    try:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as err:
        raise UserError(f"not a readable .npz: {type(err).__name__}: {err}", text) from None
    return _samples(arrays, specs, text), path.name


def _samples(
    arrays: dict[str, np.ndarray], specs: dict[str, tuple[tuple[int, ...], np.dtype]], where: str
) -> list[dict[str, np.ndarray]]:
    unknown = sorted(set(arrays) - set(specs))
    missing = [n for n in specs if n not in arrays]
    problems = [f"missing {', '.join(missing)}"] if missing else []
    problems += [f"unknown {', '.join(unknown)}"] if unknown else []
    if problems:
        raise UserError(
            f"the calibration inputs do not match the model's ({', '.join(specs)}): "
            + "; ".join(problems),
            where,
        )
    counts = {}
    for name, (shape, _) in specs.items():
        a = arrays[name]
        if a.shape == shape:
            arrays[name] = a[None]
        elif a.shape[1:] != shape:
            raise UserError(
                f"calibration input {name!r} has shape {list(a.shape)}; the model takes "
                f"{list(shape)} (one sample) or [N, {', '.join(map(str, shape))}]",
                where,
            )
        counts[name] = arrays[name].shape[0]
    if len(set(counts.values())) > 1:
        raise UserError(f"the calibration inputs hold different sample counts: {counts}", where)
    n = next(iter(counts.values()), 0)
    return [
        {name: arrays[name][k].astype(specs[name][1], copy=False) for name in specs}
        for k in range(n)
    ]


def _random_inputs(
    specs: dict[str, tuple[tuple[int, ...], np.dtype]], count: int
) -> Iterator[dict[str, np.ndarray]]:
    for k in range(count):
        rng = np.random.default_rng(k)
        yield {n: rng.standard_normal(s).astype(d) for n, (s, d) in specs.items()}
