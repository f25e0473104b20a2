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
    if engine != "cpu":
        raise UserError(f"unknown engine {engine!r}; use 'cpu' or 'reference'")
    from nnvm.compiler import build
    from nnvm.runtime import graph_runtime

    graph, lib, p = build(module, "llvm", params=params)
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


def accuracy_report(
    float_module: ModuleOp,
    float_params: Mapping[str, np.ndarray],
    q_module: ModuleOp,
    q_params: Mapping[str, np.ndarray],
    inputs: Iterable[Mapping[str, np.ndarray]],
    *,
    engine: str = "cpu",
) -> dict:
    """Run both graphs on every input (built for the CPU, or on the reference executor) and
    compare output by output: mean and min cosine similarity per sample, top-1 agreement (argmax
    of the last axis, for outputs of rank >= 1) with the number of distinct fp32 classes, and
    the max absolute error."""
    run_float = _runner(float_module, float_params, engine)
    run_q = _runner(q_module, q_params, engine)
    cosines: list[list[float]] = []
    agree: list[list[float]] = []
    classes: list[set[int]] = []
    max_err: list[float] = []
    samples = 0
    for feed in inputs:
        want, got = run_float(feed), run_q(feed)
        if len(want) != len(got):
            raise UserError(f"the graphs have {len(want)} and {len(got)} outputs")
        if not cosines:
            cosines = [[] for _ in want]
            agree = [[] for _ in want]
            classes = [set() for _ in want]
            max_err = [0.0 for _ in want]
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            cosines[k].append(cosine(w, g))
            if w.ndim >= 1 and w.shape[-1] > 1:
                agree[k].extend((w.argmax(-1) == g.argmax(-1)).ravel().astype(float))
                classes[k].update(int(c) for c in np.ravel(w.argmax(-1)))
            max_err[k] = max(max_err[k], float(np.max(np.abs(w - g), initial=0.0)))
        samples += 1
    if samples == 0:
        raise UserError("accuracy_report needs at least one input")
    outputs = []
    for k in range(len(cosines)):
        outputs.append(
            {
                "output": k,
                "cosine_mean": float(np.mean(cosines[k])),
                "cosine_min": float(np.min(cosines[k])),
                "top1_agreement": float(np.mean(agree[k])) if agree[k] else None,
                # how many distinct classes fp32 picked: agreement over one class says little
                "top1_classes": len(classes[k]),
                "max_abs_error": max_err[k],
            }
        )
    return {"samples": samples, "engine": engine, "outputs": outputs}


def write_report(report: Mapping, path: str | Path) -> None:
    """Write an accuracy report as JSON."""
    Path(path).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
