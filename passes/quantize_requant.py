"""The integer arithmetic of int8 quantization as numpy: symmetric scales, per-channel weights,
int32 biases and the two requantizers (fixed-point multiplier + shift, or a shift alone).

The quantize-int8 pass computes its constants here, and the tests' int8 reference replays the
same formulas, so the graph and the reference agree bit for bit."""

from __future__ import annotations

import numpy as np

QMAX = 127
"""Symmetric int8: values in [-127, 127], so a product of two fits 14 bits plus sign."""

MULTIPLIER_BITS = 31
"""The fixed-point multiplier m of `requant="multiplier"` lies in [2^30, 2^31)."""


def activation_scale(threshold: float, power_of_two: bool) -> float:
    """The scale mapping [-threshold, threshold] onto [-127, 127] (rounded up to a power of two
    for the shift-only requantizer; 1.0 for an all-zero tensor)."""
    if not threshold > 0:
        return 1.0
    scale = threshold / QMAX
    return float(2.0 ** np.ceil(np.log2(scale))) if power_of_two else float(scale)


def weight_scales(w: np.ndarray, axis: int, power_of_two: bool) -> np.ndarray:
    """Per-channel symmetric scales along `axis` (float64)."""
    moved = np.moveaxis(np.asarray(w, np.float64), axis, 0)
    absmax = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1, initial=0.0)
    return np.array([activation_scale(float(t), power_of_two) for t in absmax])


def quantize_weight(w: np.ndarray, scales: np.ndarray, axis: int) -> np.ndarray:
    """round(w / scale) per channel, clipped to [-127, 127], as int8."""
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.round(np.asarray(w, np.float64) / scales.reshape(shape))
    return np.clip(q, -QMAX, QMAX).astype(np.int8)


def quantize_bias(b: np.ndarray, x_scale: float, w_scales: np.ndarray) -> np.ndarray:
    """The bias in accumulator units x_scale * w_scale[c], as int32."""
    q = np.round(np.asarray(b, np.float64) / (x_scale * w_scales))
    return np.clip(q, -(2**31), 2**31 - 1).astype(np.int32)


def fixed_point(ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ratio ~= m * 2^-n with m an int32 in [2^30, 2^31) and 0 <= n <= 62 (int64 arrays); a zero
    ratio gives m = 0."""
    ratio = np.asarray(ratio, np.float64)
    frac, exp = np.frexp(ratio)  # ratio = frac * 2^exp, frac in [0.5, 1)
    m = np.round(frac * 2.0**MULTIPLIER_BITS).astype(np.int64)
    carry = m == 2**MULTIPLIER_BITS
    m = np.where(carry, m // 2, m)
    exp = exp + carry
    n = MULTIPLIER_BITS - exp.astype(np.int64)
    # a tiny ratio needs a shift past 62: drop bits of m instead (the product still rounds once)
    excess = np.maximum(n - 62, 0)
    m = np.where(excess > 0, np.right_shift(m, np.minimum(excess, 62)), m)
    n = np.minimum(n, 62)
    if np.any(n < 0):
        raise ValueError(f"requantization ratio {ratio.max()} is too large for int32 accumulators")
    return m.astype(np.int64), n.astype(np.int64)


def power_of_two_shift(ratio: np.ndarray) -> np.ndarray:
    """n with ratio == 2^-n exactly (the shift requantizer's scales are powers of two)."""
    n = -np.log2(np.asarray(ratio, np.float64))
    exact = np.round(n)
    if not np.allclose(n, exact, rtol=0, atol=1e-9):
        raise ValueError("shift requantization needs power-of-two scales")
    return exact.astype(np.int64)


def rounding_half(n: np.ndarray) -> np.ndarray:
    """2^(n-1) for n > 0, else 0: added before a right shift by n it rounds to nearest (ties
    toward +inf)."""
    n = np.asarray(n, np.int64)
    return np.where(n > 0, np.left_shift(np.int64(1), np.maximum(n - 1, 0)), 0).astype(np.int64)


def accumulator_dtype(bound: int) -> str:
    """The float type in which the CPU's float kernels sum int8 products *exactly*, given a
    bound on the sum of |products| of one output: every partial sum (in any order) is then an
    integer below 2^24 (float32) or 2^53 (float64), so the result is the int32 accumulation."""
    return "float32" if bound < 2**24 else "float64"


def product_bound(wq: np.ndarray, axis: int) -> int:
    """max over output channels (along `axis` of the int8 weight) of 127 * sum |wq|: what the
    sum of |x * w| of one output can reach with inputs in [-127, 127]."""
    moved = np.moveaxis(np.abs(wq.astype(np.int64)), axis, 0)
    return int(QMAX * moved.reshape(moved.shape[0], -1).sum(axis=1).max(initial=0))


def requantize_multiplier(acc: np.ndarray, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """(acc * m + 2^(n-1)) >> n in int64, saturated to int8 (the reference of the graph's ops)."""
    t = acc.astype(np.int64) * m + rounding_half(n)
    return np.clip(np.right_shift(t, n), -128, 127).astype(np.int8)


def requantize_float(acc: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """round_half_even(f32(acc) * f32(ratio)), saturated to int8: onnxruntime's QLinearConv and
    QDQ semantics (the graph's float requantizer)."""
    t = acc.astype(np.float32) * np.asarray(ratio, np.float32)
    return np.clip(np.rint(t), -128, 127).astype(np.int8)


def requantize_shift(acc: np.ndarray, n: np.ndarray) -> np.ndarray:
    """(acc << -n) for n < 0, else (acc + 2^(n-1)) >> n, in int32, saturated to int8."""
    acc = acc.astype(np.int32)
    left = np.maximum(-n, 0).astype(np.int32)
    right = np.maximum(n, 0).astype(np.int32)
    t = np.left_shift(acc, left) + rounding_half(right).astype(np.int32)
    return np.clip(np.right_shift(t, right), -128, 127).astype(np.int8)
