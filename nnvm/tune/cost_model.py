"""The learned cost model that guides the evolutionary search: trained online, per task, on
the candidates measured so far (and, where other tasks of the same template were tuned before,
on theirs: transfer.py), it ranks proposals so that only the most promising are built and
timed. Features are the task's shape (log2 of its flops and dimensions), the knob values (as
numbers, with their log2) and the loop-nest facts of the schedule text (how many splits,
tiles, unrolls, vectorized and parallel loops, the tile factors' product); the target is
log(seconds), or log(seconds / the default's) when other tasks' rows join in, so the model
learns ratios.

The model is gradient-boosted trees from xgboost (the `tune` extra) where it is installed,
else a numpy fallback: ridge regression on the features and their pairwise products, which
captures the dominant interactions (rows x columns of a register tile) on small data."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnvm.tune.space import Candidate
from nnvm.tune.task import Task
from nnvm.tune.transfer import Row

OWN_WEIGHT = 4.0
"""How much more a row of the task being tuned counts than a row of another task."""

_PRIMS = ("te.split", "te.tile", "te.fuse", "te.unroll", "te.vectorize", "te.parallel")
_FACTORS = re.compile(r"by \(?([\d, ]+)\)?")


SHAPE_DIMS = 16
"""Dimensions of the tasks' argument shapes the features carry (log2, zero-padded): what lets
a model trained on other tasks of a template tell their shapes from this one's."""


def shape_features(task: Task) -> list[float]:
    dims = [math.log2(d + 1.0) for s in task.shapes for d in s][:SHAPE_DIMS]
    return [math.log2(task.flops + 1.0), *dims, *[0.0] * (SHAPE_DIMS - len(dims))]


def features(task: Task, c: Candidate) -> list[float]:
    """A fixed-length vector for a candidate of `task` (the same length for every task of a
    template and its knobs)."""
    out: list[float] = shape_features(task)
    for name in task.knobs:
        v = c.config.get(name, task.default_config.get(name, 0))
        x = float(v) if isinstance(v, int | float | bool) else 0.0
        out += [x, math.log2(x + 1.0)]
    out += [float(c.schedule.count(p + " ")) for p in _PRIMS]
    factors = [int(f) for m in _FACTORS.findall(c.schedule) for f in m.split(",") if f.strip()]
    out.append(math.log2(math.prod(factors) + 1.0) if factors else 0.0)
    return out


class CostModel:
    """Predicts log(seconds) of candidates; `fit` on measured ones, `rank` proposals."""

    def __init__(self, task: Task, backend: str = "auto", seed: int = 0):
        self.task = task
        self.seed = seed
        self.backend = _backend(backend)
        self._model: Any = None
        self._ridge: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def fit(
        self,
        candidates: Sequence[Candidate],
        seconds: Sequence[float],
        prior: Sequence[Row] = (),
        default_s: float = math.nan,
    ) -> None:
        """Fit on this task's measurements; with `prior` (other tasks' rows, times relative to
        their defaults), on both as times relative to the default (this task's own rows, once
        its default is measured, weighing OWN_WEIGHT times as much)."""
        rows = [(c, s) for c, s in zip(candidates, seconds, strict=True) if math.isfinite(s)]
        relative = bool(prior)
        if relative and not (math.isfinite(default_s) and default_s > 0):
            rows = []  # ranked by the other tasks alone until the default is measured
        if len(rows) + len(prior) < 4:
            self._model = self._ridge = None
            return
        x_rows = [features(self.task, c) for c, _ in rows]
        y_rows = [math.log(s / default_s) if relative else math.log(s) for _, s in rows]
        w_rows = [OWN_WEIGHT] * len(rows)
        if relative:
            x_rows += [features(r.task, r.candidate) for r in prior]
            y_rows += [math.log(r.relative) for r in prior]
            w_rows += [1.0] * len(prior)
        x = np.array(x_rows, dtype=np.float64)
        y = np.array(y_rows, dtype=np.float64)
        w = np.array(w_rows, dtype=np.float64)
        if self.backend == "xgboost":
            import xgboost

            params = {"max_depth": 4, "eta": 0.2, "seed": self.seed, "nthread": 1}
            data = xgboost.DMatrix(x, label=y, weight=w)
            self._model = xgboost.train(params, data, num_boost_round=60)
        else:
            self._ridge = _fit_ridge(x, y, w)

    @property
    def trained(self) -> bool:
        return self._model is not None or self._ridge is not None

    def predict(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """Predicted log(seconds) (zeros before the model has data: no preference)."""
        if not candidates:
            return np.zeros(0)
        x = np.array([features(self.task, c) for c in candidates], dtype=np.float64)
        if self._model is not None:
            import xgboost

            return np.asarray(self._model.predict(xgboost.DMatrix(x)), dtype=np.float64)
        if self._ridge is not None:
            mean, scale, w = self._ridge
            return _expand((x - mean) / scale) @ w
        return np.zeros(len(candidates))


def _backend(name: str) -> str:
    if name not in ("auto", "xgboost", "numpy"):
        from nnvm.support.errors import UserError

        raise UserError(f"cost model '{name}' is not one of auto, xgboost, numpy")
    if name == "numpy":
        return name
    try:
        import xgboost  # noqa: F401
    except ImportError:
        if name == "xgboost":
            from nnvm.support.errors import UserError

            raise UserError(
                "the xgboost cost model needs xgboost: pip install 'nnvm[tune]'"
            ) from None
        return "numpy"
    return "xgboost"


def _expand(z: np.ndarray) -> np.ndarray:
    """[1, z, z_i * z_j (i <= j)]: a quadratic model."""
    n, d = z.shape
    i, j = np.triu_indices(d)
    return np.hstack([np.ones((n, 1)), z, z[:, i] * z[:, j]])


def _fit_ridge(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None):
    """Ridge regression on the quadratic features (weighted least squares with `weight`), its
    strength chosen by leave-one-out error (closed form: residual_i / (1 - hat_ii)), so it
    follows the data from 4 points to 400."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    a = _expand((x - mean) / scale)
    if weight is not None:
        root = np.sqrt(weight)[:, None]
        a, y = a * root, y * root[:, 0]
    best: tuple[float, np.ndarray] | None = None
    for alpha in (0.01, 0.1, 1.0, 10.0):
        inverse = np.linalg.inv(a.T @ a + alpha * np.eye(a.shape[1]))
        w = inverse @ a.T @ y
        hat = np.einsum("ij,jk,ik->i", a, inverse, a)
        loo = np.mean(((y - a @ w) / np.maximum(1.0 - hat, 1e-6)) ** 2)
        if best is None or loo < best[0]:
            best = (loo, w)
    assert best is not None
    return mean, scale, best[1]
