"""The nnvm.symbol builder: generated op functions, operators, groups, shape inference, and
errors that name the symbol and the op."""

from __future__ import annotations

import numpy as np
import pytest

import nnvm.symbol as sym
from nnvm.dialects.nnvm import ALL_OPS
from nnvm.reference import run_reference
from nnvm.support.errors import UserError


def test_one_function_per_graph_op():
    names = {cls.name.removeprefix("nnvm.") for cls in ALL_OPS} - {"param", "constant"}
    missing = [n for n in sorted(names) if not callable(getattr(sym, n, None))]
    assert not missing
    assert "strides" in sym.conv2d.__doc__


def test_build_and_run_matches_numpy():
    rng = np.random.default_rng(0)
    x = sym.Variable("x", shape=(2, 4))
    w = sym.Variable("w")
    y = sym.relu(sym.dense(x, w)) * 2 + 1
    assert y.list_arguments() == ["x", "w"]
    args, outs = y.infer_shape(w=(3, 4))
    assert args == {"x": (2, 4), "w": (3, 4)} and outs == [(2, 3)]
    W = rng.standard_normal((3, 4)).astype("f4")
    X = rng.standard_normal((2, 4)).astype("f4")
    module, params = y.to_module(params={"w": W})
    assert set(params) == {"w"}
    (out,) = run_reference(module, params, {"x": X})
    np.testing.assert_allclose(out, np.maximum(X @ W.T, 0) * 2 + 1, rtol=1e-6)


def test_group_split_and_reverse_operators():
    x = sym.Variable("x", shape=(4, 2))
    a, b = sym.split(x, axis=0, sizes=[1, 3])
    g = sym.Group([1 - a, b / 2, -x])
    assert len(g.list_outputs()) == 3
    module, _ = g.to_module()
    X = np.arange(8, dtype="f4").reshape(4, 2)
    outs = run_reference(module, {}, {"x": X})
    np.testing.assert_allclose(outs[0], 1 - X[:1])
    np.testing.assert_allclose(outs[1], X[1:] / 2)
    np.testing.assert_allclose(outs[2], -X)


def test_gradient_symbols():
    x = sym.Variable("x", shape=(3,), dtype="float64")
    loss = sym.sum(x * x, axes=[0])
    module, _ = sym.Group([loss, sym.gradient(loss, [x])]).to_module()
    X = np.array([1.0, -2.0, 3.0])
    value, grad = run_reference(module, {}, {"x": X})
    assert value == pytest.approx(14.0)
    np.testing.assert_allclose(grad, 2 * X)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: sym.relu(sym.Variable("a", shape=(2,)), sym.Variable("b", shape=(2,))),
            "takes 1 inputs",
        ),
        (
            lambda: sym.conv2d(sym.Variable("a"), sym.Variable("b"), stride=[2, 2]),
            "no attribute 'stride'",
        ),
        (lambda: sym.Variable(""), "non-empty name"),
        (lambda: sym.Variable("a", dtype="complex-ish"), "unknown dtype"),
    ],
)
def test_bad_symbols_are_named_errors(build, message):
    with pytest.raises(UserError, match=message):
        build()


def test_shape_errors_name_the_symbol_and_op():
    x = sym.Variable("x", shape=(2, 4))
    w = sym.Variable("w", shape=(3, 5))
    y = sym.dense(x, w, name="proj")
    with pytest.raises(UserError, match=r"symbol proj \(nnvm.dense\).*K = 4"):
        y.to_module()
    with pytest.raises(UserError, match="Variable 'z' has no shape"):
        (sym.Variable("z") + 1).to_module()


def test_gradient_stops_at_integer_values():
    """argmax's result is an index: nothing flows back through it, the gradient is zero."""
    x = sym.Variable("x", shape=(2, 4))
    loss = sym.sum(sym.cast(sym.argmax(x, axis=1), to="float32"), axes=[0, 1])
    module, _ = sym.Group([loss, sym.gradient(loss, [x])]).to_module()
    _, grad = run_reference(module, {}, {"x": np.ones((2, 4), "f4")})
    assert grad.shape == (2, 4) and not grad.any()


def test_gradient_reports_ops_without_a_vjp():
    x = sym.Variable("x", shape=(2, 3))
    loss = sym.sum(sym.sin(x), axes=[0, 1])
    with pytest.raises(UserError, match=r"no vector-Jacobian product for nnvm.sin"):
        sym.Group([loss, sym.gradient(loss, [x])]).to_module()
