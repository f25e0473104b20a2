"""The fixes nnvm applies to the pinned xDSL (nnvm/support/xdsl_fixes.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, DenseIntOrFPElementsAttr, TensorType, f16, f32, f64
from xdsl.parser import Parser

import nnvm.support  # noqa: F401  (applies the fixes)
from nnvm.frontend.onnx_backend import NNVMCompiledBackend


@pytest.mark.parametrize("elt", [f16, f32, f64])
def test_non_finite_dense_floats_survive_print_and_parse(elt) -> None:
    values = [-math.inf, math.inf, 1.5, -0.0]
    attr = DenseIntOrFPElementsAttr.from_list(TensorType(elt, [5]), [*values, math.nan])
    ctx = Context()
    ctx.load_dialect(Builtin)
    back = Parser(ctx, str(attr)).parse_attribute()
    got = list(back.get_values())  # type: ignore[attr-defined]
    assert got[:4] == values and math.isnan(got[4])
    assert math.copysign(1.0, got[3]) == -1.0


def test_a_kernel_with_minus_infinity_computes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """max(x, -inf) is x. Kernels compiled in worker processes travel as IR text, so the -inf
    constant is printed and parsed back (it read as 4286578688.0 before the fix)."""
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "2")
    monkeypatch.setenv("NNVM_CACHE_DIR", "off")
    x = np.random.default_rng(0).standard_normal((2, 4, 4)).astype(np.float32)
    minus_inf = helper.make_tensor("m", TensorProto.FLOAT, [1], [-np.inf])
    nodes = [
        helper.make_node("Constant", [], ["minus_inf"], value=minus_inf),
        helper.make_node("Max", ["x", "minus_inf"], ["same"]),
        helper.make_node("MatMul", ["same", "x"], ["mixed"]),
        helper.make_node("ReduceMax", ["mixed"], ["top"], axes=[2], keepdims=1),
        helper.make_node("Sub", ["mixed", "top"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (got,) = NNVMCompiledBackend.prepare(model).run([x])
    mixed = x @ x
    np.testing.assert_allclose(got, mixed - mixed.max(2, keepdims=True), rtol=1e-5, atol=1e-5)
