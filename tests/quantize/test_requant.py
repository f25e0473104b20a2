"""The integer formulas of quantize-int8 (passes/quantize_requant.py) against float math."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm.passes import quantize_requant as rq


def test_fixed_point_multipliers_approximate_the_ratio() -> None:
    ratios = np.array([1e-9, 3.7e-5, 0.0123, 0.5, 0.999999, 1.0, 3.25])
    m, n = rq.fixed_point(ratios)
    assert np.all((m >= 2**30) & (m < 2**31)) and np.all((n >= 0) & (n <= 62))
    np.testing.assert_allclose(m * 2.0**-n, ratios, rtol=2**-30)
    acc = np.array([-(2**31) + 1, -12345, -1, 0, 1, 977, 2**31 - 1])
    for r, mm, nn in zip(ratios, m, n, strict=True):
        got = rq.requantize_multiplier(acc, mm, nn)
        want = np.clip(np.floor(acc * (mm * 2.0**-nn) + 0.5), -128, 127)
        np.testing.assert_array_equal(got, want, err_msg=f"ratio {r}")


def test_shift_requantization_rounds_to_nearest() -> None:
    acc = np.arange(-300, 301)
    for n in (-2, 0, 1, 3, 7):
        want = np.clip(np.floor(acc * 2.0**-n + 0.5), -128, 127)
        np.testing.assert_array_equal(rq.requantize_shift(acc, np.array(n)), want)
    assert rq.power_of_two_shift(np.array([2.0**-7, 4.0])).tolist() == [7, -2]
    with pytest.raises(ValueError, match="power-of-two"):
        rq.power_of_two_shift(np.array([0.3]))


def test_weights_are_symmetric_per_channel() -> None:
    w = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [3.0, 1.5, -0.75]], np.float32)
    s = rq.weight_scales(w, 0, power_of_two=False)
    np.testing.assert_allclose(s, [1 / 127, 1.0, 3 / 127])
    q = rq.quantize_weight(w, s, 0)
    assert q.dtype == np.int8 and q[0].tolist() == [64, -127, 32] and q[2, 0] == 127
    s2 = rq.weight_scales(w, 0, power_of_two=True)
    assert s2.tolist() == [2.0**-6, 1.0, 2.0**-5]  # rounded up: the range still fits


def test_the_accumulator_is_float32_only_where_its_sums_are_exact() -> None:
    spread = np.random.default_rng(0).integers(-20, 21, size=(4, 4608), dtype=np.int8)
    assert rq.accumulator_dtype(rq.product_bound(spread, 0)) == "float32"
    full = np.full((4, 1100), 127, np.int8)
    assert rq.product_bound(full, 0) == 127 * 127 * 1100
    assert rq.accumulator_dtype(rq.product_bound(full, 0)) == "float64"
    assert rq.accumulator_dtype(2**24 - 1) == "float32"
