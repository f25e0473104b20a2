"""Refit the polynomial coefficients of `math_approx.py` (a development tool, not imported).

    python -m nnvm.lowering.to_llvm.math_fit

Each approximation has the form f(x) ~= g(x) + m(x) * P(u(x)) on [a, b]; the coefficients of
P minimize the maximum *relative* error of the whole expression. Weighted least squares on
Chebyshev nodes, reweighted by the current error (Lawson's iteration) so the fit approaches the
minimax polynomial, against Python's double-precision `math` functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Fn = Callable[[float], float]


def fit(
    f: Fn,
    g: Fn,
    m: Callable[[np.ndarray], np.ndarray],
    u: Callable[[np.ndarray], np.ndarray],
    a: float,
    b: float,
    degree: int,
    nodes: int = 3000,
    iterations: int = 300,
) -> tuple[np.ndarray, float]:
    """Coefficients c0..c_degree of P, and the max relative error reached (in float64)."""
    k = np.arange(nodes)
    x = (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / nodes)
    x = x[np.abs(x) > 1e-9]
    fx = np.array([f(v) for v in x])
    gx = np.array([g(v) for v in x])
    design = (m(x)[:, None] * np.vander(u(x), degree + 1, increasing=True)) / np.abs(fx)[:, None]
    target = (fx - gx) / np.abs(fx)
    weights = np.full(len(x), 1.0 / len(x))
    best: tuple[np.ndarray, float] | None = None
    for _ in range(iterations):
        sw = np.sqrt(weights)
        coef, *_ = np.linalg.lstsq(design * sw[:, None], target * sw, rcond=None)
        err = np.abs(design @ coef - target)
        worst = float(err.max())
        if best is None or worst < best[1]:
            best = (coef, worst)
        weights = weights * (err + 1e-3 * worst)
        weights /= weights.sum()
    assert best is not None
    return best


def main() -> None:
    half_ln2 = math.log(2) / 2
    fits = {
        "EXP_P": fit(math.exp, lambda r: 1 + r, lambda r: r * r, lambda r: r,
                     -half_ln2, half_ln2, 4),
        "LOG_Q": fit(math.log1p, lambda t: t - t * t / 2, lambda t: t**3, lambda t: t,
                     math.sqrt(0.5) - 1, math.sqrt(2) - 1, 7),
        "TANH_P": fit(math.tanh, lambda x: x, lambda x: x**3, lambda x: x * x, 0, 0.625, 4),
        "ERF_SMALL": fit(math.erf, lambda x: x, lambda x: x, lambda x: x * x, 0, 1.0, 6),
        "ERF_LARGE": fit(math.erf, lambda x: 1.0, lambda x: -np.exp(-x * x), lambda x: 1 / x,
                         1.0, 4.0, 6),
    }  # fmt: skip
    for name, (coef, err) in fits.items():
        values = ", ".join(repr(float(np.float32(c))) for c in coef)
        print(f"{name} = ({values})  # max rel. error {err:.2e} before f32 rounding")


if __name__ == "__main__":
    main()
