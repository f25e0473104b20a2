"""Lane patterns of vectorized indices (lowering/te_to_loops/index_math.py): a lane index
divided by a divisor of its base is base + a constant per lane, and so are its products and
sums with uniform indices; every lane of the result is the scalar arithmetic of that lane.
A sum of two patterns, or a pattern subtracted, is not a pattern: those loops stay scalar."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects import arith
from xdsl.ir import SSAValue

from nnvm.lowering.te_to_loops.emitter import NotVectorizable, Val
from nnvm.lowering.te_to_loops.index_math import IndexMath, known_multiple

LANES = 16


def _emitter() -> IndexMath:
    gen = IndexMath(None, None, 512)  # type: ignore[arg-type]
    gen.lanes = LANES
    return gen


def _lane_index(gen: IndexMath, base: int) -> Val:
    ssa = gen.index(base)
    return Val(ssa, "l", known_multiple(ssa))


_FOLD = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.FloorDivSIOp: lambda a, b: a // b,
    arith.RemSIOp: lambda a, b: a % b,
}


def _value(v: SSAValue) -> int:
    """An index computed from constants by the ops the emitter builds."""
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data  # type: ignore[union-attr]
    return _FOLD[type(op)](*(_value(o) for o in op.operands))


def _lanes(gen: IndexMath, v: Val) -> list[int]:
    """Each lane's value of an index whose base is computed from constants."""
    base = _value(v.ssa)
    if v.kind == "u":
        return [base] * LANES
    if v.kind == "l":
        return [base + k for k in range(LANES)]
    assert v.kind == "p"
    return [base + p for p in v.pattern]


@given(
    block=st.integers(0, 40),
    width=st.sampled_from([2, 4, 8, 16, 32]),
    channel=st.integers(0, 31),
)
def test_group_lanes_are_each_lanes_arithmetic(block: int, width: int, channel: int) -> None:
    """(lane // og) * og + ic, and lane % og, for a lane index starting at a block."""
    gen = _emitter()
    base = block * LANES
    lane = _lane_index(gen, base)
    grouped = gen.iadd(gen.imul(gen.idiv(lane, width), width), gen.cval(channel))
    assert _lanes(gen, grouped) == [(base + k) // width * width + channel for k in range(LANES)]
    rest = gen.irem(_lane_index(gen, base), width)
    assert _lanes(gen, rest) == [(base + k) % width for k in range(LANES)]


def test_groups_of_a_block_are_a_pattern() -> None:
    gen = _emitter()
    v = gen.idiv(_lane_index(gen, 0), 8)
    assert v.kind == "p" and v.pattern == (0,) * 8 + (1,) * 8


@pytest.mark.parametrize("case", ["pattern-plus-pattern", "minus-pattern", "unaligned-base"])
def test_what_is_not_a_pattern_stays_scalar(case: str) -> None:
    gen = _emitter()
    p = gen.idiv(_lane_index(gen, 0), 8)
    with pytest.raises(NotVectorizable):
        if case == "pattern-plus-pattern":
            gen.iadd(p, gen.idiv(_lane_index(gen, 0), 4))
        elif case == "minus-pattern":
            gen.isub(gen.cval(5), p)
        else:  # a base not a multiple of the divisor: lanes would straddle groups unevenly
            gen.idiv(_lane_index(gen, 4), 8)
