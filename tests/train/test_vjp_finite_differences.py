"""Every op class with a vector-Jacobian product, checked against central finite differences in
float64 through the reference executor: loss = sum(op(inputs) * R) for a random R, so each
input's gradient is the VJP of R."""

from __future__ import annotations

import numpy as np
import pytest

import nnvm.symbol as sym
from nnvm.dialects.nnvm import ALL_OPS
from nnvm.reference import run_reference

F = "float64"


def _pos(shape):  # strictly positive inputs (log, sqrt, rsqrt, pow bases)
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def _normal(shape):
    return lambda rng: rng.standard_normal(shape)


def _away_from(points, shape):  # kinks (relu at 0, clip bounds, hard ops) stay > 0.05 away
    def draw(rng):
        x = rng.uniform(-4, 4, shape)
        for p in points:
            near = np.abs(x - p) < 0.05
            x[near] += 0.2
        return x

    return draw


def _labels(n, c):
    return lambda rng: rng.integers(0, c, n).astype(np.int64)


def _distinct(shape):  # max/min/pools: no ties
    def draw(rng):
        return rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 + rng.uniform(
            0, 0.01, shape
        )

    return draw


S = (2, 3)
CASES: dict[str, list[tuple[list, dict]]] = {
    "add": [([_normal((2, 3)), _normal((3,))], {})],
    "sub": [([_normal((2, 1)), _normal((2, 3))], {})],
    "mul": [([_normal((2, 3)), _normal((1, 3))], {})],
    "div": [([_normal((2, 3)), _pos((2, 3))], {})],
    "pow": [([_pos((2, 3)), _normal((2, 3))], {})],
    "maximum": [([_distinct((2, 3)), _normal((2, 3))], {})],
    "minimum": [([_distinct((2, 3)), _normal((2, 3))], {})],
    "add_n": [([_normal((2, 3)), _normal((3,)), _normal((2, 1))], {})],
    "relu": [([_away_from([0], S)], {})],
    "leaky_relu": [([_away_from([0], S)], {"alpha": 0.1})],
    "clip": [([_away_from([-1, 1], S)], {"min": -1.0, "max": 1.0})],
    "sigmoid": [([_normal(S)], {})],
    "hard_sigmoid": [([_away_from([-2.5, 2.5], S)], {})],
    "hard_swish": [([_away_from([-3, 3], S)], {})],
    "tanh": [([_normal(S)], {})],
    "erf": [([_normal(S)], {})],
    "gelu": [([_normal(S)], {}), ([_normal(S)], {"approximate": "tanh"})],
    "exp": [([_normal(S)], {})],
    "log": [([_pos(S)], {})],
    "sqrt": [([_pos(S)], {})],
    "rsqrt": [([_pos(S)], {})],
    "reciprocal": [([_pos(S)], {})],
    "neg": [([_normal(S)], {})],
    "abs": [([_away_from([0], S)], {})],
    "floor": [([_away_from([-3, -2, -1, 0, 1, 2, 3], S)], {})],
    "ceil": [([_away_from([-3, -2, -1, 0, 1, 2, 3], S)], {})],
    "round": [([_away_from([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], S)], {})],
    "cast": [([_normal(S)], {"to": "float64"})],
    "identity": [([_normal(S)], {})],
    "dropout": [([_normal(S)], {})],
    "dense": [([_normal((2, 2, 4)), _normal((3, 4))], {})],
    "matmul": [
        ([_normal((2, 3, 4)), _normal((4, 2))], {}),
        ([_normal((4,)), _normal((2, 4, 3))], {}),
        ([_normal((3, 4)), _normal((4,))], {}),
    ],
    "batch_matmul": [
        ([_normal((2, 3, 4)), _normal((1, 4, 2))], {}),
        ([_normal((2, 4, 3)), _normal((2, 2, 4))], {"transpose_a": True, "transpose_b": True}),
        ([_normal((1, 4, 3)), _normal((2, 4, 2))], {"transpose_a": True}),
    ],
    "bias_add": [([_normal((2, 3, 2)), _normal((3,))], {"axis": 1})],
    "softmax": [([_normal((2, 4))], {"axis": -1}), ([_normal((3, 2, 2))], {"axis": 0})],
    "log_softmax": [([_normal((2, 4))], {"axis": 1})],
    "batch_norm": [
        (
            [_normal((2, 3, 2)), _normal((3,)), _normal((3,)), _normal((3,)), _pos((3,))],
            {"axis": 1},
        )
    ],
    "layer_norm": [([_normal((2, 3, 4)), _normal((4,)), _normal((4,))], {"axis": -1})],
    "conv2d": [
        ([_normal((1, 2, 5, 5)), _normal((3, 2, 3, 3))], {"padding": [1, 1, 1, 1]}),
        (
            [_normal((2, 4, 7, 6)), _normal((4, 2, 3, 2))],
            {"strides": [2, 2], "padding": [1, 0, 2, 1], "groups": 2},
        ),
        (
            [_normal((1, 3, 7, 7)), _normal((3, 1, 3, 3))],
            {"dilation": [2, 2], "groups": 3, "strides": [2, 1]},
        ),
    ],
    "max_pool2d": [
        ([_distinct((1, 2, 4, 4))], {"pool_size": [2, 2], "strides": [2, 2]}),
        (
            [_distinct((1, 1, 5, 5))],
            {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]},
        ),
        ([_distinct((1, 1, 6, 5))], {"pool_size": [3, 2], "strides": [2, 2], "ceil_mode": True}),
    ],
    "avg_pool2d": [
        ([_normal((1, 2, 4, 4))], {"pool_size": [2, 2], "strides": [2, 2]}),
        (
            [_normal((1, 1, 5, 5))],
            {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]},
        ),
        (
            [_normal((1, 1, 5, 5))],
            {"pool_size": [3, 3], "padding": [1, 1, 1, 1], "count_include_pad": True},
        ),
    ],
    "global_avg_pool2d": [([_normal((2, 3, 2, 3))], {})],
    "global_max_pool2d": [([_distinct((2, 3, 2, 3))], {})],
    "sum": [
        ([_normal((2, 3, 2))], {"axes": [0, 2]}),
        ([_normal((2, 3))], {"axes": [1], "keepdims": True}),
    ],
    "mean": [([_normal((2, 3, 2))], {"axes": [1]})],
    "max": [([_distinct((2, 3, 2))], {"axes": [1]})],
    "min": [([_distinct((2, 3, 2))], {"axes": [0, 2], "keepdims": True})],
    "reshape": [([_normal((2, 3, 2))], {"shape": [3, 4]})],
    "flatten": [([_normal((2, 3, 2))], {"axis": 2})],
    "squeeze": [([_normal((2, 1, 3))], {"axes": [1]})],
    "expand_dims": [([_normal((2, 3))], {"axes": [0, 2]})],
    "transpose": [([_normal((2, 3, 4))], {"perm": [2, 0, 1]})],
    "broadcast_to": [([_normal((3, 1))], {"shape": [2, 3, 4]})],
    "tile": [([_normal((2, 3))], {"repeats": [2, 1]})],
    "concat": [([_normal((2, 3)), _normal((2, 1)), _normal((2, 2))], {"axis": 1})],
    "split": [([_normal((5, 2))], {"axis": 0, "sizes": [2, 3]})],
    "slice": [
        ([_normal((4, 5))], {"starts": [1, 0], "ends": [3, -1], "axes": [0, 1], "steps": [1, 1]})
    ],
    "pad": [([_normal((3, 4))], {"pads": [1, -1, 0, 2]})],
    "where": [([lambda rng: rng.random((2, 3)) > 0.5, _normal((2, 3)), _normal((3,))], {})],
    "softmax_cross_entropy": [([_normal((4, 5)), _labels(4, 5)], {})],
    "mse_loss": [([_normal((2, 3)), _normal((2, 3))], {})],
}


def _vjp_ops() -> list[str]:
    return sorted(cls.name.removeprefix("nnvm.") for cls in ALL_OPS if cls.has_gradient())


def test_every_vjp_has_a_case():
    missing = [name for name in _vjp_ops() if name not in CASES]
    assert not missing, f"ops with a vjp but no finite-difference case: {missing}"


def _case_ids():
    return [(name, k) for name in sorted(CASES) for k in range(len(CASES[name]))]


def _loss_module(name, values, props, rng):
    names = [f"x{k}" for k in range(len(values))]
    variables = [
        sym.Variable(n, shape=v.shape, dtype=str(v.dtype))
        for n, v in zip(names, values, strict=True)
    ]
    out = getattr(sym, name)(*variables, **props)
    outs = list(out) if out._node.num_outputs > 1 else [out]
    # weight each output by a random tensor of its shape, then sum everything to a scalar
    _, shapes = sym.Group(outs).infer_shape()
    loss = None
    for o, shp in zip(outs, shapes, strict=True):
        r = sym.const(rng.standard_normal(shp), dtype=F)
        o64 = o if name != "cast" else sym.cast(o, to=F)
        term = sym.sum(o64 * r, axes=list(range(len(shp))))
        loss = term if loss is None else loss + term
    floats = [n for n, v in zip(names, values, strict=True) if v.dtype == np.float64]
    grads = sym.gradient(loss, floats)
    module, _ = sym.Group([loss, grads]).to_module()
    return module, names, floats


@pytest.mark.parametrize(("name", "k"), _case_ids())
def test_vjp_matches_finite_differences(name, k):
    makers, props = CASES[name][k]
    rng = np.random.default_rng(17 + k)
    values = []
    for make in makers:
        v = np.asarray(make(rng))
        values.append(v.astype(np.float64) if v.dtype.kind == "f" else v)
    module, names, floats = _loss_module(name, values, props, rng)
    feeds = dict(zip(names, values, strict=True))
    outs = run_reference(module, {}, feeds)
    analytic = dict(zip(floats, outs[1:], strict=True))

    def loss_at(feed):
        return float(run_reference(module, {}, feed)[0])

    eps = 1e-6
    for n in floats:
        x = feeds[n]
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[idx] += eps
            minus[idx] -= eps
            numeric[idx] = (loss_at({**feeds, n: plus}) - loss_at({**feeds, n: minus})) / (2 * eps)
        np.testing.assert_allclose(analytic[n], numeric, rtol=1e-5, atol=1e-6, err_msg=f"d/d{n}")
