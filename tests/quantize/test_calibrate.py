"""Calibration (nnvm/quantize/calibrate.py): ranges against numpy on a toy graph, the streaming
histogram, the percentile and KL thresholds, the JSON record, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnvm.frontend import from_onnx
from nnvm.quantize import Calibration, calibrate
from nnvm.quantize.calibrate import BINS, RangeObserver, kl_threshold
from nnvm.support.errors import UserError

RNG = np.random.default_rng(7)
W = (RNG.standard_normal((6, 5)) * 0.5).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)


def _toy():
    """y = relu(x @ W.T + b) @ W2.T: two dense anchors (Gemm)."""
    w2 = (RNG.standard_normal((3, 6)) * 0.5).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "toy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        [numpy_helper.from_array(a, n) for a, n in ((W, "w"), (B, "b"), (w2, "w2"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module, params = from_onnx(model)
    return module, params, w2


def _inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [{"x": (rng.standard_normal((4, 5)) * (1 + k)).astype(np.float32)} for k in range(n)]


def test_ranges_match_numpy_on_a_toy_graph() -> None:
    module, params, w2 = _toy()
    feeds = _inputs(5)
    cal = calibrate(module, params, feeds)
    xs = np.stack([f["x"] for f in feeds])
    h = xs @ W.T + B
    r = np.maximum(h, 0)
    y = r @ w2.T
    assert cal.samples == 5
    assert set(cal.tensors) == {"dense:0/in0", "dense:0/out", "dense:1/in0", "dense:1/out"}
    for name, want in (("dense:0/in0", xs), ("dense:0/out", h), ("dense:1/in0", r)):
        got = cal.tensors[name]
        assert got.min == pytest.approx(float(want.min()), rel=1e-6)
        assert got.max == pytest.approx(float(want.max()), rel=1e-6)
        top = float(np.abs(want).max())
        pct = float(np.percentile(np.abs(want), 99.99, method="inverted_cdf"))
        width = 2.0 ** (np.floor(np.log2(top)) + 1) / BINS  # the power-of-two range
        assert abs(got.percentile - pct) <= width + 1e-6
        assert 0 < got.kl <= top * (1 + 1e-6)
    assert cal.tensors["dense:1/out"].max == pytest.approx(float(y.max()), rel=1e-5)
    assert cal.signatures["dense:0"].startswith("nnvm.dense(")


def test_the_histogram_grows_by_doubling_and_stays_exact() -> None:
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal(1000) * s for s in (0.1, 1.0, 7.0, 3.0)]
    obs = RangeObserver(256)
    for b in batches:
        obs.add(b)
    a = np.abs(np.concatenate(batches))
    assert obs.hist.sum() == a.size
    assert obs.top >= a.max()
    want = np.bincount(np.minimum(np.floor(a / obs.top * 256).astype(np.int64), 255), minlength=256)
    np.testing.assert_array_equal(obs.hist, want)
    assert obs.min == np.concatenate(batches).min() and obs.max == np.concatenate(batches).max()


def test_kl_clips_outliers_and_keeps_a_compact_range() -> None:
    rng = np.random.default_rng(2)
    obs = RangeObserver()
    obs.add(np.concatenate([rng.standard_normal(200_000), [80.0]]))
    assert obs.kl() < 20.0  # the lone outlier at 80 is not worth the resolution
    assert obs.kl() > 2.0  # but the bulk of the gaussian is kept
    relu = RangeObserver()
    relu.add(np.maximum(rng.standard_normal(200_000), 0))
    assert relu.kl() > 2.0  # the exact zeros of a ReLU do not drag the cut down
    compact = np.zeros(BINS, np.int64)
    compact[:100] = 5  # everything within 128 bins: no information to lose, keep it all
    assert kl_threshold(compact, 2048.0) == pytest.approx(100.0)
    assert kl_threshold(np.zeros(BINS, np.int64), 0.0) == 0.0


def test_calibration_round_trips_through_json(tmp_path) -> None:
    module, params, _ = _toy()
    cal = calibrate(module, params, _inputs(2), percentile=99.0)
    path = tmp_path / "cal.json"
    cal.save(path)
    again = Calibration.load(path)
    assert again == cal and again.percentile == 99.0
    with pytest.raises(UserError, match="not a calibration record"):
        Calibration.from_json('{"tensors": 3}')
    with pytest.raises(UserError, match="cannot read calibration"):
        Calibration.load(tmp_path / "missing.json")


def test_calibration_refuses_bad_input() -> None:
    module, params, _ = _toy()
    with pytest.raises(UserError, match="at least one input"):
        calibrate(module, params, [])
    with pytest.raises(UserError, match=r"unknown \['y'\].*missing \['x'\]"):
        calibrate(module, params, [{"y": np.zeros((4, 5), np.float32)}])
    with pytest.raises(UserError, match="not a dict"):
        calibrate(module, params, [np.zeros((4, 5), np.float32)])
    with pytest.raises(UserError, match="percentile"):
        calibrate(module, params, _inputs(1), percentile=0)
