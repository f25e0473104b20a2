"""The compiled train step against the reference executor, and the digits CNN (docs example)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import nnvm.symbol as sym
from nnvm.reference import run_reference
from nnvm.support.errors import UserError
from nnvm.train import SGD, Adam, TrainStep, fit

ROOT = Path(__file__).resolve().parents[2]


def _mlp(batch=8):
    x = sym.Variable("x", shape=(batch, 6))
    y = sym.Variable("y", shape=(batch,), dtype="int64")
    h = sym.tanh(sym.bias_add(sym.dense(x, sym.Variable("w1")), sym.Variable("b1"), axis=1))
    return sym.softmax_cross_entropy(sym.dense(h, sym.Variable("w2")), y)


def _params(rng):
    return {
        "w1": (rng.standard_normal((5, 6)) * 0.5).astype("f4"),
        "b1": (rng.standard_normal(5) * 0.1).astype("f4"),
        "w2": (rng.standard_normal((3, 5)) * 0.5).astype("f4"),
    }


def test_sgd_step_matches_the_reference_gradient():
    rng = np.random.default_rng(3)
    loss = _mlp()
    params = _params(rng)
    x = rng.standard_normal((8, 6)).astype("f4")
    y = rng.integers(0, 3, 8)
    names = sorted(params)
    wrt = [sym.Variable(n) for n in names]  # same names: the gradient is taken by name
    module, used = sym.Group([loss, sym.gradient(loss, wrt)]).to_module(params=params)
    ref_loss, *grads = run_reference(module, used, {"x": x, "y": y})
    step = TrainStep(loss, params, SGD(lr=0.5, momentum=0.9))
    got = step(x=x, y=y)
    assert got == pytest.approx(float(ref_loss), rel=1e-5)
    for n, g in zip(names, grads, strict=True):
        np.testing.assert_allclose(step.params[n], params[n] - 0.5 * g, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(step.slots[f"{n}.momentum"], g, rtol=1e-4, atol=1e-6)


def test_adam_training_lowers_the_loss():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 6)).astype("f4")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0)
    step = TrainStep(_mlp(), _params(rng), Adam(lr=0.05))
    batches = [{"x": x[i : i + 8], "y": y[i : i + 8]} for i in range(0, 64, 8)]
    history = fit(step, batches, epochs=6, progress=False)
    assert history[-1] < 0.6 * history[0], history


def test_train_step_input_errors():
    rng = np.random.default_rng(5)
    step = TrainStep(_mlp(), _params(rng), SGD())
    with pytest.raises(UserError, match="missing \\['y'\\]"):
        step(x=np.zeros((8, 6), "f4"))
    with pytest.raises(UserError, match="params not used by the loss"):
        TrainStep(_mlp(), {**_params(rng), "extra": np.zeros(3, "f4")}, SGD())


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="scikit-learn (extra 'train') is not installed",
)
def test_digits_cnn_reaches_95_percent(tmp_path):
    sys.path.insert(0, str(ROOT / "examples" / "train_digits"))
    try:
        import train_digits
    finally:
        sys.path.pop(0)
    result = train_digits.train(epochs=8, progress=False)
    assert result["accuracy"] >= 0.95, result["history"]


def _residual_chain(rng, blocks, batch, width, act, scale):
    """(loss, params, inputs) of `blocks` residual blocks h + act(dense(h, w_i))."""
    h = sym.Variable("x", shape=(batch, width))
    params = {}
    for i in range(blocks):
        h = h + act(sym.dense(h, sym.Variable(f"w{i}")))
        params[f"w{i}"] = (rng.standard_normal((width, width)) * scale).astype("f4")
    inputs = {"x": rng.standard_normal((batch, width)).astype("f4")}
    return sym.mean(h * h, axes=[0, 1]), params, inputs


@pytest.mark.parametrize("segments", [2, 3, -1])
def test_checkpointed_gradients_equal_the_plain_ones(segments):
    """Recomputing segments in the backward pass changes where values come from, not what
    the gradients are (the op-by-op reference run of both modules)."""
    from nnvm.passes.gradient import differentiate

    rng = np.random.default_rng(6)
    loss, params, feeds = _residual_chain(rng, 5, batch=4, width=6, act=sym.tanh, scale=0.3)
    results = []
    for k in (0, segments):
        module, used = loss.to_module(params=params)
        differentiate(module, checkpoint=k)
        text = str(module)
        assert ("nnvm.recompute" in text) == (k != 0)
        results.append(run_reference(module, used, feeds))
    for plain, recomputed in zip(*results, strict=True):
        np.testing.assert_array_equal(plain, recomputed)


def test_checkpointing_shrinks_the_planned_arena():
    """A 12-block residual chain: with about sqrt(n) segments the step's arena is smaller and
    the updated params are the same."""
    rng = np.random.default_rng(7)
    loss, params, batch = _residual_chain(rng, 12, batch=8, width=16, act=sym.relu, scale=0.1)
    plain = TrainStep(loss, params, SGD(lr=0.1))
    lean = TrainStep(loss, params, SGD(lr=0.1), checkpoint=-1)
    assert plain(**batch) == lean(**batch)
    for k in params:
        np.testing.assert_array_equal(plain.params[k], lean.params[k])
    assert lean.arena_bytes < 0.7 * plain.arena_bytes, (lean.arena_bytes, plain.arena_bytes)
