"""The learned cost model that guides the evolutionary search: trained online, per task, on
the candidates measured so far, it ranks proposals so that only the most promising are built
and timed. Features are the knob values (as numbers, with their log2) and the loop-nest
facts of the schedule text (how many splits, tiles, unrolls, vectorized and parallel loops,
the tile factors' product); the target is log(seconds), so the model learns ratios.

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

_PRIMS = ("te.split", "te.tile", "te.fuse", "te.unroll", "te.vectorize", "te.parallel")
_FACTORS = re.compile(r"by \(?([\d, ]+)\)?")


def features(task: Task, c: Candidate) -> list[float]:
    """A fixed-length vector for a candidate of `task`."""
    out: list[float] = []
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

    def fit(self, candidates: Sequence[Candidate], seconds: Sequence[float]) -> None:
        rows = [(c, s) for c, s in zip(candidates, seconds, strict=True) if math.isfinite(s)]
        if len(rows) < 4:
            self._model = self._ridge = None
            return
        x = np.array([features(self.task, c) for c, _ in rows], dtype=np.float64)
        y = np.log(np.array([s for _, s in rows], dtype=np.float64))
        if self.backend == "xgboost":
            import xgboost

            params = {"max_depth": 4, "eta": 0.2, "seed": self.seed, "nthread": 1}
            self._model = xgboost.train(params, xgboost.DMatrix(x, label=y), num_boost_round=60)
        else:
            self._ridge = _fit_ridge(x, y)

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


def _fit_ridge(x: np.ndarray, y: np.ndarray):
    """Ridge regression on the quadratic features, its strength chosen by leave-one-out error
    (closed form: residual_i / (1 - hat_ii)), so it follows the data from 4 points to 400."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    a = _expand((x - mean) / scale)
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
