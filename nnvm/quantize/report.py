"""The accuracy report of a quantized graph against its float original: per output, the cosine
similarity, top-1 agreement and largest absolute error over a set of inputs (JSON-ready)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from nnvm.support.errors import UserError


def _runner(module: ModuleOp, params: Mapping[str, np.ndarray], engine: str):
    if engine == "reference":
        from nnvm.reference import run_reference

        return lambda feed: [np.asarray(v) for v in run_reference(module, params, feed)]
    from nnvm.compiler import build
    from nnvm.runtime import graph_runtime

    devices: list[str] = []
    if engine != "cpu":
        from nnvm.support.target import parse_target

        try:
            device = parse_target(engine)
        except UserError:
            device = None
        if device is None or device.is_host:
            raise UserError(
                f"unknown engine {engine!r}; use 'cpu', 'reference' or a device target "
                "('accel', ...)"
            )
        devices = [engine]
    graph, lib, p = build(module, "llvm", params=params, devices=devices)
    m = graph_runtime.create(graph, lib, graph_runtime.cpu(0))
    m.set_input(**p)

    def run(feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        m.run(**feed)
        return [np.array(m.get_output(k)) for k in range(m.get_num_outputs())]

    return run


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two arrays, flattened (1.0 for two zero arrays)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(a @ b / (na * nb))


def _compare(want: np.ndarray, got: np.ndarray) -> dict:
    """Metrics of stacked outputs [samples, ...]: per-sample cosine (mean, min), top-1
    agreement of the last axis with the number of distinct fp32 classes, max abs error."""
    cos = [cosine(w, g) for w, g in zip(want, got, strict=True)]
    out = {"cosine_mean": float(np.mean(cos)), "cosine_min": float(np.min(cos))}
    if want.ndim >= 2 and want.shape[-1] > 1:
        top_w, top_g = want.argmax(-1), got.argmax(-1)
        out["top1_agreement"] = float(np.mean(top_w == top_g))
        out["top1_classes"] = int(np.unique(top_w).size)
    return out


def accuracy_report(
    float_module: ModuleOp,
    float_params: Mapping[str, np.ndarray],
    q_module: ModuleOp,
    q_params: Mapping[str, np.ndarray],
    inputs: Iterable[Mapping[str, np.ndarray]],
    *,
    engine: str = "cpu",
) -> dict:
    """Run both graphs on every input (built for the CPU, for the CPU with a device target such
    as 'accel' running what it takes, or on the reference executor) and compare output by
    output: cosine similarity per sample (mean, min), top-1 agreement (argmax of the last axis)
    with how many distinct classes fp32 picked, and the max abs error.

    `centered` repeats the metrics on the outputs minus the fp32 mean output over the inputs:
    the input-dependent part. A network with random weights on random inputs gives nearly one
    output for every input (one class wins everywhere, so plain agreement says little); the
    centered metrics measure whether int8 keeps what varies. `relative_error` is
    ||int8 - fp32|| / ||fp32|| and `varying_share` ||fp32 - mean|| / ||fp32|| over all samples:
    when the error is near the share, the centered metrics are near chance."""
    run_float = _runner(float_module, float_params, engine)
    run_q = _runner(q_module, q_params, engine)
    wants: list[list[np.ndarray]] = []
    gots: list[list[np.ndarray]] = []
    for feed in inputs:
        want, got = run_float(feed), run_q(feed)
        if len(want) != len(got):
            raise UserError(f"the graphs have {len(want)} and {len(got)} outputs")
        if not wants:
            wants, gots = [[] for _ in want], [[] for _ in want]
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            wants[k].append(np.asarray(w, np.float64))
            gots[k].append(np.asarray(g, np.float64))
    if not wants:
        raise UserError("accuracy_report needs at least one input")
    outputs = []
    for k in range(len(wants)):
        want, got = np.stack(wants[k]), np.stack(gots[k])
        mean = want.mean(axis=0)
        row = {"output": k, **_compare(want, got)}
        row["max_abs_error"] = float(np.max(np.abs(want - got), initial=0.0))
        norm = float(np.linalg.norm(want)) or 1.0
        row["relative_error"] = float(np.linalg.norm(got - want)) / norm
        row["varying_share"] = float(np.linalg.norm(want - mean)) / norm
        row["centered"] = _compare(want - mean, got - mean)
        outputs.append(row)
    return {"samples": len(wants[0]), "engine": engine, "outputs": outputs}


def write_report(report: Mapping, path: str | Path) -> None:
    """Write an accuracy report as JSON."""
    Path(path).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
