"""The te op tests (tests/te/test_ops.py) on the wasm target: each test's op module is built
with build(target="wasm") and run under node instead of the CPU JIT, against the same reference
results and tolerances. A representative case of each op family runs in the fast tier, every
case in the slow tier."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from wasm_harness import build_wasm, requires_wasm, run_node
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

from nnvm.reference import run_reference

pytestmark = requires_wasm

TE_TESTS = Path(__file__).parents[1] / "te"


def _load_te_ops() -> Any:
    sys.path.insert(0, str(TE_TESTS))  # test_ops imports its harness by name
    spec = importlib.util.spec_from_file_location("te_test_ops", TE_TESTS / "test_ops.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


te_ops = _load_te_ops()
from harness import assert_close  # noqa: E402  (tests/te's, on the path now)


@pytest.fixture(autouse=True)
def on_wasm(tmp_path: Path, tmp_path_factory, monkeypatch):
    """te_ops.check runs the module on wasm for the duration of a test."""
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))
    count = iter(range(1000))

    def check_on_wasm(
        module: Any,
        inputs: Sequence[np.ndarray] | None = None,
        *,
        schedule: str | None = "default",
        rtol: float = 1e-4,
        atol: float = 1e-5,
        positive: bool = False,
        name: str = "k",
        want: Sequence[np.ndarray] | None = None,
        **_: Any,
    ) -> None:
        assert schedule == "default", "the wasm build applies the default schedule"
        if inputs is None:
            inputs = te_ops.random_inputs(module, name, positive=positive)
        if want is None:
            want = run_reference(module, {}, list(inputs), function=name)
        graph = module.clone()
        fn = next(o for o in graph.ops if isinstance(o, func.FuncOp) and o.sym_name.data == name)
        fn.sym_name = StringAttr("main")
        built = build_wasm(graph, {}, tmp_path / f"case{next(count)}")
        got, _ = run_node(built, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_close(g, w.astype(g.dtype) if g.dtype != w.dtype else w, rtol, atol)

    monkeypatch.setattr(te_ops, "check", check_on_wasm)


def cases(table: list, fast: set[int]) -> list:
    """The table's rows as params; rows not in `fast` are slow-marked."""
    return [
        pytest.param(*row, marks=() if k in fast else pytest.mark.slow, id=f"{k}")
        for k, row in enumerate(table)
    ]


@pytest.mark.parametrize(("cls", "props", "elt", "positive"), cases(te_ops.UNARY, {0, 5, 9, 12}))
def test_unary(cls, props, elt, positive) -> None:
    te_ops.test_unary(cls, props, elt, positive)


@pytest.mark.parametrize(
    ("cls", "props", "elt", "rhs", "positive"), cases(te_ops.BINARY, {0, 4, 8, 14})
)
def test_binary(cls, props, elt, rhs, positive) -> None:
    te_ops.test_binary(cls, props, elt, rhs, positive)


@pytest.mark.parametrize(("x", "w", "props"), cases(te_ops.CONV, {0, 2, 5}))
def test_conv2d(x, w, props) -> None:
    te_ops.test_conv2d(x, w, props)


@pytest.mark.parametrize(("cls", "shapes", "props"), cases(te_ops.NN, {0, 3, 9, 13}))
def test_nn(cls, shapes, props) -> None:
    te_ops.test_nn(cls, shapes, props)


@pytest.mark.parametrize(("cls", "shape", "props"), cases(te_ops.POOL, {0, 4, 9}))
def test_pooling(cls, shape, props) -> None:
    te_ops.test_pooling(cls, shape, props)


@pytest.mark.parametrize(("cls", "props", "elt"), cases(te_ops.REDUCE, {0, 4, 10}))
def test_reduce(cls, props, elt) -> None:
    te_ops.test_reduce(cls, props, elt)


@pytest.mark.parametrize(("cls", "shapes", "props"), cases(te_ops.TRANSFORM, {9, 10, 17, 21}))
def test_transform(cls, shapes, props) -> None:
    te_ops.test_transform(cls, shapes, props)


@pytest.mark.parametrize("props", cases([(p,) for p in te_ops.RESIZE], {2}))
def test_resize(props) -> None:
    te_ops.test_resize(props)


@pytest.mark.parametrize(
    "test",
    [
        "test_gather",
        "test_constants",
        *(
            pytest.param(n, marks=pytest.mark.slow)
            for n in ("test_where_and_add_n", "test_split", "test_gather_nd")
        ),
    ],
)
def test_single(test: str) -> None:
    getattr(te_ops, test)()


@pytest.mark.slow
@pytest.mark.parametrize("props", [{"hidden_size": 3}, {"hidden_size": 3, "direction": "reverse"}])
def test_lstm(props) -> None:
    te_ops._check_lstm(props, batch=2, inp=4)


@pytest.mark.slow
@pytest.mark.parametrize("props", [{"hidden_size": 3}, {"hidden_size": 2, "layout": 1}])
def test_gru(props) -> None:
    te_ops.test_gru(props)


@pytest.mark.slow
@pytest.mark.parametrize("elt", ["f16", "f64"])
def test_other_float_types(elt: str) -> None:
    te_ops.test_other_float_types(getattr(te_ops, elt))
