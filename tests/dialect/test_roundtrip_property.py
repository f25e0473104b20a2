"""Property: any well-typed graph prints, parses back and prints to the same text, in custom
and in generic form, and verifies (random graphs from nnvm.testing.graph_strategies)."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from nnvm.registry import make_context
from nnvm.testing.graph_strategies import Program, programs


def _text(module: ModuleOp, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_print_parse_print_is_a_fixed_point(program: Program) -> None:
    module = program.module
    module.verify()
    ctx = make_context()
    custom = _text(module)
    reparsed = Parser(ctx, custom).parse_module()
    reparsed.verify()
    assert _text(reparsed) == custom
    generic = _text(module, generic=True)
    from_generic = Parser(ctx, generic).parse_module()
    from_generic.verify()
    assert _text(from_generic) == custom
    assert _text(from_generic, generic=True) == generic
