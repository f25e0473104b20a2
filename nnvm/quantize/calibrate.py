"""Calibration: run the float graph on sample inputs and record, per tensor that int8
quantization needs (passes/quantize_calibration.py), its min/max and |x| histogram, from which
the percentile and KL-divergence (TensorRT's entropy method) thresholds are chosen."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr

from nnvm.passes.quantize_calibration import (
    Calibration,
    TensorRange,
    anchor_tensors,
    find_anchors,
)
from nnvm.support.errors import UserError
from nnvm.support.ir import argument_names, find_function

BINS = 2048
"""Histogram bins of |x| (TensorRT's default count)."""

LEVELS = 128
"""Quantization levels of |x| the KL search compares against (int8: 0..127)."""


class RangeObserver:
    """Streaming min, max and a histogram of |x| over [0, top), top a power of two above every
    |x| seen; when a sample reaches top, top doubles and pairs of bins merge, so the histogram
    is exactly the one a single pass over all samples would have made."""

    def __init__(self, bins: int = BINS):
        self.bins = bins
        self.min = np.inf
        self.max = -np.inf
        self.top = 0.0
        self.hist = np.zeros(bins, np.int64)
        self.zeros = 0
        """How many |x| were exactly 0 (in bin 0 too): they quantize exactly at every scale."""

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float64).reshape(-1)
        if not x.size:
            return
        if not np.all(np.isfinite(x)):
            raise UserError("calibration saw a non-finite value (inf or NaN) in the float model")
        self.min, self.max = min(self.min, float(x.min())), max(self.max, float(x.max()))
        a = np.abs(x)
        self.zeros += int(np.count_nonzero(a == 0))
        peak = float(a.max())
        if self.top == 0.0 and peak > 0:
            self.top = float(2.0 ** (np.floor(np.log2(peak)) + 1))
        while peak >= self.top > 0:
            self.hist = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.concatenate([self.hist, np.zeros(self.bins // 2, np.int64)])
            self.top *= 2
        if self.top == 0.0:
            self.hist[0] += a.size
            return
        idx = np.minimum((a / self.top * self.bins).astype(np.int64), self.bins - 1)
        self.hist += np.bincount(idx, minlength=self.bins)

    def percentile(self, p: float) -> float:
        """The upper edge of the bin where the cumulative share of |x| reaches p percent."""
        total = self.hist.sum()
        if not total or self.top == 0.0:
            return 0.0
        k = int(np.searchsorted(np.cumsum(self.hist), total * p / 100.0))
        return min(k + 1, self.bins) * self.top / self.bins

    def kl(self, levels: int = LEVELS) -> float:
        """The KL threshold of the nonzero |x| (a ReLU's zeros would otherwise dominate bin 0
        and push the cut down, though they cost nothing at any scale)."""
        hist = self.hist.copy()
        hist[0] -= self.zeros
        return kl_threshold(hist, self.top, levels)

    def result(self, p: float) -> TensorRange:
        """The range record; the bin-edge thresholds are capped at the largest |x| seen."""
        peak = max(abs(self.min), abs(self.max))
        return TensorRange(self.min, self.max, min(self.percentile(p), peak), min(self.kl(), peak))


def kl_threshold(hist: np.ndarray, top: float, levels: int = LEVELS) -> float:
    """The |x| threshold whose int8 quantization loses least information: for each candidate
    cut i (levels..bins), P is the histogram up to i with the clipped tail added to its last
    bin; Q is the histogram up to i (without the tail) merged into `levels` equal groups and
    spread back evenly over each group's nonzero bins. The i with the smallest KL(P || Q) wins
    and its upper edge is the threshold: a cut that clips much mass pays in P's last bin, one
    that keeps a long sparse tail pays in the coarse groups."""
    hist = np.asarray(hist, np.float64)
    bins = hist.size
    if top == 0.0 or hist.sum() == 0:
        return 0.0
    last = int(np.nonzero(hist)[0][-1]) + 1
    if last <= levels:
        return last * top / bins
    tails = np.concatenate([np.cumsum(hist[::-1])[::-1], [0.0]])  # tails[i] = hist[i:].sum()
    best, best_i = np.inf, bins
    for i in range(levels, last + 1):
        src = hist[:i]
        p = src.copy()
        p[-1] += tails[i]
        edges = np.linspace(0, i, levels + 1).astype(np.int64)
        group = np.repeat(np.arange(levels), np.diff(edges))
        nonzero = src > 0
        sums = np.bincount(group, weights=src, minlength=levels)
        counts = np.bincount(group, weights=nonzero, minlength=levels)
        q = np.where(nonzero, sums[group] / np.maximum(counts[group], 1), 0.0)
        mask = p > 0
        # a bin with mass in P and none in Q (P's last bin when only the tail fills it) gets a
        # small share instead of an infinite divergence
        q = np.where(mask & (q == 0), 1e-4 * q[q > 0].min(initial=1.0), q)
        pn = p[mask] / p.sum()
        qn = q[mask] / q.sum()
        d = float(np.sum(pn * np.log(pn / qn)))
        if d < best:
            best, best_i = d, i
    return best_i * top / bins


def observer_module(module: ModuleOp) -> tuple[ModuleOp, list[str], int]:
    """A copy of `module` whose @main also returns every observed tensor: (the copy, their
    names in return order, how many results @main had before)."""
    copy = module.clone()
    names_values = dict(anchor_tensors(find_anchors(copy)))
    fn = find_function(copy, "main")
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    names = list(names_values)
    original = len(ret.operands)
    new_ret = func.ReturnOp(*ret.operands, *names_values.values())
    fn.body.block.insert_op_before(new_ret, ret)
    fn.body.block.erase_op(ret)
    base = list(fn.res_attrs.data) if fn.res_attrs is not None else []
    base += [DictionaryAttr({}) for _ in range(original - len(base))]
    fn.res_attrs = ArrayAttr(
        [*base, *(DictionaryAttr({"nnvm.name": StringAttr(f"observe.{n}")}) for n in names)]
    )
    fn.function_type = func.FunctionType.from_lists(
        fn.function_type.inputs.data, [v.type for v in new_ret.operands]
    )
    return copy, names, original


def _runner(module: ModuleOp, params: Mapping[str, np.ndarray], engine: str):
    """A function inputs -> list of all results of @main, on the chosen engine."""
    if engine == "reference":
        from nnvm.reference import run_reference

        return lambda feed: run_reference(module, params, feed)
    if engine == "cpu":
        from nnvm.compiler import build
        from nnvm.runtime import graph_runtime

        graph, lib, p = build(module, "llvm", params=params)
        m = graph_runtime.create(graph, lib, graph_runtime.cpu(0))
        m.set_input(**p)

        def run(feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
            m.run(**feed)
            return [np.array(m.get_output(k)) for k in range(m.get_num_outputs())]

        return run
    raise UserError(f"unknown calibration engine {engine!r}; use 'reference' or 'cpu'")


def calibrate(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    inputs: Iterable[Mapping[str, np.ndarray]],
    *,
    percentile: float = 99.99,
    bins: int = BINS,
    engine: str = "reference",
) -> Calibration:
    """Run the float `module` on each input dict (name -> array) and record the ranges of the
    tensors int8 quantization reads. `engine` is "reference" (numpy, exact) or "cpu" (a build)."""
    if not 0 < percentile <= 100:
        raise UserError(f"percentile must be in (0, 100], got {percentile}")
    if bins < 2 * LEVELS or bins % 2:
        raise UserError(f"bins must be an even number >= {2 * LEVELS}, got {bins}")
    fn = find_function(module, "main")
    arg_names = argument_names(fn)
    observed, names, original = observer_module(module)
    anchors = find_anchors(module)
    if not names:
        raise UserError("the graph has no conv2d, dense or matmul to calibrate")
    run = _runner(observed, params, engine)
    observers = {n: RangeObserver(bins) for n in names}
    samples = 0
    for k, feed in enumerate(inputs):
        if not isinstance(feed, Mapping):
            raise UserError(f"calibration input {k} is not a dict of input name -> array")
        unknown = sorted(set(feed) - set(arg_names))
        missing = [n for n in arg_names if n not in feed]
        if unknown or missing:
            raise UserError(
                f"calibration input {k} does not match @main({', '.join(arg_names)}): "
                + (f"unknown {unknown} " if unknown else "")
                + (f"missing {missing}" if missing else "")
            )
        outs = run(feed)
        for n, value in zip(names, outs[original:], strict=True):
            observers[n].add(value)
        samples += 1
    if samples == 0:
        raise UserError("calibration needs at least one input (the iterable was empty)")
    return Calibration(
        tensors={n: o.result(percentile) for n, o in observers.items()},
        signatures={a.key: a.signature() for a in anchors},
        samples=samples,
        percentile=percentile,
    )
