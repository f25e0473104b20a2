"""Every graph pass, and the whole O3 pipeline, leaves what the reference executor computes
unchanged, on random DAGs of graph ops (broadcasting, branches, shared uses) and params."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from xdsl.parser import Parser
from xdsl.printer import Printer

from nnvm.reference import run_reference
from nnvm.registry import build_pipeline, make_context
from nnvm.support.param_store import attach_params, params_of
from nnvm.testing.graph_strategies import Program, programs

GRAPH_PASSES = [
    "simplify-inference",
    "fold-scale-axis",
    "prune-conv-taps",
    "alter-layout",
    "sink-reshapes",
    "integer-products",
    "fold-constants",
    "fuse",
    "cse",
    "dce",
    "plan-memory",
    "nnvm-O1",
    "nnvm-O2",
    "nnvm-O3",
]


def _copy(program: Program):
    """A fresh module (through the printer and parser) with its own params store."""
    out = io.StringIO()
    Printer(stream=out).print_op(program.module)
    module = Parser(make_context(), out.getvalue()).parse_module()
    return attach_params(module, {k: v.copy() for k, v in program.params.items()})


def check_pass_preserves(program: Program, pipeline: list[str]) -> None:
    before = run_reference(program.module, program.params, program.inputs)
    module = _copy(program)
    ctx = make_context()
    for p in build_pipeline(pipeline):
        p.apply(ctx, module)
        module.verify()
    after = run_reference(module, params_of(module), program.inputs)
    assert len(before) == len(after)
    for b, a in zip(before, after, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pass_name", GRAPH_PASSES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs())
def test_pass_preserves_semantics(pass_name: str, program: Program) -> None:
    check_pass_preserves(program, [pass_name])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs(max_steps=10, image_inputs=True))
def test_o3_preserves_semantics_on_cnn_like_graphs(program: Program) -> None:
    check_pass_preserves(program, ["nnvm-O3"])
