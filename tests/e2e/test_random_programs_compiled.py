"""Random DAGs of graph ops (branches, shared uses, broadcasting, convs, dense, pools; from
nnvm.testing.graph_strategies), compiled by build() and run as machine code, compute what the
reference executor computes: the whole pipeline (fusion of chains and diamonds, layouts,
default schedules, code generation, memory planning) on graphs nobody wrote by hand.

Fast tier: a few examples per opt level; full tier (`-m slow`): many more."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from xdsl.parser import Parser
from xdsl.printer import Printer

import nnvm
from nnvm.compiler import build
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.runtime import graph_runtime
from nnvm.testing.graph_strategies import Program, programs


def _fresh_module(program: Program):
    out = io.StringIO()
    Printer(stream=out).print_op(program.module)
    return Parser(make_context(), out.getvalue()).parse_module()


def check_compiled(program: Program, opt_level: int) -> None:
    want = run_reference(program.module, program.params, program.inputs)
    graph, lib, params = build(
        _fresh_module(program),
        target="llvm",
        params={k: v.copy() for k, v in program.params.items()},
        opt_level=opt_level,
    )
    rt = graph_runtime.create(graph, lib, nnvm.cpu(0))
    rt.set_input(**params)
    for k, value in enumerate(program.inputs):
        rt.set_input(k, value)
    rt.run()
    assert rt.get_num_outputs() == len(want)
    for k, expected in enumerate(want):
        got = rt.get_output(k)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


@pytest.mark.parametrize("opt_level", [0, 3])
@settings(max_examples=10, **SETTINGS)
@given(program=programs(max_steps=6))
def test_compiled_random_program_matches_reference(opt_level: int, program: Program) -> None:
    check_compiled(program, opt_level)


@pytest.mark.slow
@pytest.mark.parametrize("opt_level", [0, 3])
@settings(max_examples=100, **SETTINGS)
@given(program=programs(max_steps=10))
def test_compiled_random_program_matches_reference_many(opt_level: int, program: Program) -> None:
    check_compiled(program, opt_level)


@pytest.mark.slow
@settings(max_examples=100, **SETTINGS)
@given(program=programs(max_steps=10, image_inputs=True))
def test_compiled_random_cnn_matches_reference(program: Program) -> None:
    check_compiled(program, 3)
