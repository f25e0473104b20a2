"""Property: any well-typed graph prints, parses back and prints to the same text, in custom
and in generic form, and verifies."""

from __future__ import annotations

import io

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer

from nnvm.dialects.nnvm.binary import (
    AddOp,
    DivOp,
    GreaterOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    SubOp,
    WhereOp,
)
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.elementwise import (
    ClipOp,
    ErfOp,
    ExpOp,
    LeakyReluOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
)
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.registry import make_context

UNARY = [ReluOp, SigmoidOp, TanhOp, ErfOp, ExpOp]
BINARY = [AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp]

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4)
finite = st.floats(-8, 8, allow_nan=False, width=32)


def _partner_shape(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against `shape`: a suffix with some dims set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = list(shape[len(shape) - keep :])
    return tuple(d if draw(st.booleans()) else 1 for d in suffix)


@st.composite
def graphs(draw) -> ModuleOp:
    n_args = draw(st.integers(1, 2))
    arg_types = [TensorType(f32, draw(shapes)) for _ in range(n_args)]
    block = Block(arg_types=arg_types)
    values: list[SSAValue] = list(block.args)
    n_params = 0

    def add(op):
        block.add_op(op)
        values.extend(op.results)
        return op

    for _ in range(draw(st.integers(1, 8))):
        x = draw(st.sampled_from([v for v in values if v.type.element_type == f32]))
        shape = tuple(x.type.get_shape())
        kind = draw(st.sampled_from(["unary", "binary", "clip", "leaky", "where", "conv", "const"]))
        if kind == "unary":
            add(draw(st.sampled_from(UNARY)).make(x))
        elif kind == "clip":
            lo = draw(finite)
            add(ClipOp.make(x, min=lo, max=lo + draw(st.floats(0, 8, width=32))))
        elif kind == "leaky":
            add(LeakyReluOp.make(x, alpha=draw(finite)))
        elif kind in ("binary", "where"):
            other_shape = _partner_shape(draw, shape)
            n_params += 1
            y = add(ParamOp(f"p{n_params}", TensorType(f32, other_shape))).result
            lhs, rhs = (x, y) if draw(st.booleans()) else (y, x)
            if kind == "binary":
                add(draw(st.sampled_from(BINARY)).make(lhs, rhs))
            else:
                cond = add(GreaterOp.make(lhs, rhs)).result
                add(WhereOp.make(cond, lhs, rhs))
        elif kind == "const":
            value = np.asarray(draw(finite), dtype=np.float32).reshape((1,) * len(shape))
            c = add(ConstantOp(value)).result
            add(AddOp.make(x, c))
        elif kind == "conv" and len(shape) == 4 and min(shape[2:]) >= 1:
            kh = draw(st.integers(1, shape[2]))
            kw = draw(st.integers(1, shape[3]))
            groups = draw(st.sampled_from([g for g in (1, shape[1]) if shape[1] % g == 0]))
            out_c = groups * draw(st.integers(1, 2))
            n_params += 1
            w = add(ParamOp(f"w{n_params}", TensorType(f32, [out_c, shape[1] // groups, kh, kw])))
            pad = draw(st.lists(st.integers(0, 1), min_size=4, max_size=4))
            add(
                Conv2DOp.make(
                    x,
                    w.result,
                    strides=draw(st.lists(st.integers(1, 2), min_size=2, max_size=2)),
                    padding=pad,
                    groups=groups,
                )
            )
    outs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True))
    block.add_op(func.ReturnOp(*outs))
    fn = func.FuncOp("main", (list(arg_types), [o.type for o in outs]), Region(block))
    return ModuleOp([fn])


def _text(module: ModuleOp, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_print_parse_print_is_a_fixed_point(module: ModuleOp) -> None:
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
