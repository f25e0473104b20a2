"""Bound inference for `compute_at`: which part of a producer one iteration of a consumer's
loop reads, as an offset (affine in the loops outside the attach point) and a constant extent
per dimension.

Index formulas are analysed as linear forms over the consumer's leaf loops (and opaque SSA
offsets); anything non-linear (division, clamping, data-dependent indices) makes that dimension
fall back to the whole tensor, which is always correct, just not small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, SSAValue

from nnvm.dialects.te.ops import ComputeOp, ReadOp
from nnvm.dialects.te.stage_tree import Fuse, IterVar, Split, Stage

Key = Union[IterVar, SSAValue]  # noqa: UP007 - a runtime alias


@dataclass
class Linear:
    """sum(coef * key) + const."""

    terms: dict[Key, int] = field(default_factory=dict)
    const: int = 0

    @staticmethod
    def of(key: Key, coef: int = 1) -> Linear:
        return Linear({key: coef}, 0)

    def add(self, other: Linear, sign: int = 1) -> Linear:
        terms = dict(self.terms)
        for k, c in other.terms.items():
            terms[k] = terms.get(k, 0) + sign * c
            if terms[k] == 0:
                del terms[k]
        return Linear(terms, self.const + sign * other.const)

    def scale(self, c: int) -> Linear:
        if c == 0:
            return Linear()
        return Linear({k: v * c for k, v in self.terms.items()}, self.const * c)

    def is_const(self) -> bool:
        return not self.terms


Form = Linear | None


def root_forms(
    stage: Stage, ext: dict[IterVar, int], known: set[IterVar] | None = None
) -> dict[IterVar, Form]:
    """Each axis of a stage as a linear form over its leaf loops, for the axis extents `ext`
    of this emission. Axes in `known` (already computed where the form is used) are atomic;
    below a fuse whose result is not known, the form is None."""
    known = known or set()
    forms: dict[IterVar, Form] = {v: Linear.of(v) for v in stage.leaves}
    forms.update({v: Linear.of(v) for v in known})
    changed = True
    while changed:
        changed = False
        for rel in stage.relations:
            if isinstance(rel, Split):
                if rel.parent in forms or rel.outer not in forms or rel.inner not in forms:
                    continue
                o, i = forms[rel.outer], forms[rel.inner]
                forms[rel.parent] = (
                    None if o is None or i is None else o.scale(ext[rel.inner]).add(i)
                )
                changed = True
            elif isinstance(rel, Fuse) and rel.fused in forms and rel.outer not in forms:
                # (a known fused loop's halves are in `known`, so never reach here)
                forms[rel.outer] = None
                forms[rel.inner] = None
                changed = True
    return forms


def _index_const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        if isinstance(op.value.type, IndexType):
            return int(op.value.value.data)
    return None


def index_form(
    v: SSAValue, env: dict[SSAValue, Form], extents: dict[IterVar, int] | None = None
) -> Form:
    """An index value of a formula as a linear form of the values `env` knows (a formula's
    axes), through index constants, +, -, * by a constant, and // and % by a constant where
    `extents` bound the loops so that they stay linear (see formula_accesses); None where it
    is not linear. Memoized in `env`."""
    if v in env:
        return env[v]
    op = v.owner
    form: Form = None
    if isinstance(op, arith.ConstantOp):
        c = _index_const(v)
        form = Linear({}, c) if c is not None else None
    elif isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = index_form(op.lhs, env, extents), index_form(op.rhs, env, extents)
        sign = 1 if isinstance(op, arith.AddiOp) else -1
        form = None if a is None or b is None else a.add(b, sign)
    elif isinstance(op, arith.MuliOp):
        a, b = index_form(op.lhs, env, extents), index_form(op.rhs, env, extents)
        if a is not None and b is not None and b.is_const():
            form = a.scale(b.const)
        elif a is not None and b is not None and a.is_const():
            form = b.scale(a.const)
    elif isinstance(op, arith.FloorDivSIOp | arith.RemSIOp):
        a, b = index_form(op.lhs, env, extents), index_form(op.rhs, env, extents)
        parts = None
        if a is not None and b is not None and b.is_const() and b.const > 0:
            parts = _divmod(a, b.const, extents or {})
        if parts is not None:
            form = parts[0] if isinstance(op, arith.FloorDivSIOp) else parts[1]
    if not isinstance(v.type, IndexType):
        form = None
    env[v] = form
    return form


def formula_accesses(
    block: Block,
    args: list[Form],
    producer: SSAValue,
    inlined: dict[SSAValue, ComputeOp],
    out: list[list[Form]],
    extents: dict[IterVar, int] | None = None,
) -> None:
    """Collect the index forms of every read of `producer` in a formula (through inlined
    stages, whose formulas are followed with the read's indices as their arguments).
    With the loop `extents`, `x // c` and `x % c` stay linear where x's part that c does not
    divide provably lies in [0, c) (a packed layout read through a split loop)."""
    env: dict[SSAValue, Form] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, ReadOp):
            idx = [index_form(i, env, extents) for i in op.indices]
            if op.tensor == producer:
                out.append(idx)
            elif op.tensor in inlined:
                inner = inlined[op.tensor]
                formula_accesses(inner.block, idx, producer, inlined, out, extents)


def _divmod(a: Linear, c: int, extents: dict[IterVar, int]) -> tuple[Linear, Linear] | None:
    """(a // c, a % c) as linear forms, when the terms of a that c does not divide (and the
    constant's remainder) stay within [0, c) over the loops' ranges; None otherwise."""
    quot = Linear({}, a.const // c)
    rem = Linear({}, a.const % c)
    lo = hi = a.const % c
    for k, coef in a.terms.items():
        if coef % c == 0:
            quot = quot.add(Linear.of(k, coef // c))
            continue
        if not isinstance(k, IterVar) or k not in extents:
            return None
        span = coef * (extents[k] - 1)
        lo += min(0, span)
        hi += max(0, span)
        rem = rem.add(Linear.of(k, coef))
    if lo < 0 or hi >= c:
        return None
    return quot, rem


@dataclass
class DimRegion:
    """The part of one producer dimension an iteration reads: [offset, offset + extent)."""

    offset: Linear | None  # over outer loops and SSA offsets; None: the whole dimension
    extent: int
    guard_low: bool
    """Can offset + [0, extent) start below 0? (the producer's loops then need a guard)"""
    guard_high: bool
    """Can it end beyond the dimension's size?"""


def infer_region(
    forms: list[list[Form]],
    shape: tuple[int, ...],
    inner: dict[IterVar, int],
    outer_ranges: dict[IterVar, int],
) -> list[DimRegion]:
    """The region of a producer of `shape` read by accesses `forms`, with the loops in `inner`
    (var -> extent) relaxed over their whole range and those in `outer_ranges` fixed."""
    regions: list[DimRegion] = []
    for d, size in enumerate(shape):
        per_dim = [f[d] for f in forms]
        region = _one_dim(per_dim, size, inner, outer_ranges)
        regions.append(region)
    return regions


def _one_dim(
    forms: list[Form], size: int, inner: dict[IterVar, int], outer_ranges: dict[IterVar, int]
) -> DimRegion:
    full = DimRegion(None, size, False, False)
    if not forms or any(f is None for f in forms):
        return full
    sym: dict[Key, int] | None = None
    lo_c, hi_c = None, None
    for f in forms:
        assert f is not None
        s = {k: c for k, c in f.terms.items() if k not in inner}
        lo, hi = f.const, f.const
        for k, c in f.terms.items():
            if k in inner:
                span = c * (inner[k] - 1)
                lo += min(0, span)
                hi += max(0, span)
        if sym is None:
            sym = s
        elif s != sym:
            return full
        lo_c = lo if lo_c is None else min(lo_c, lo)
        hi_c = hi if hi_c is None else max(hi_c, hi)
    assert sym is not None and lo_c is not None and hi_c is not None
    extent = hi_c - lo_c + 1
    if extent >= size:
        return full
    # can offset + [0, extent) leave [0, size)? (then the producer's loops need a guard)
    min_off, max_off = lo_c, lo_c
    unknown = False  # an SSA offset: its sign is not known here
    for k, c in sym.items():
        if isinstance(k, IterVar) and k in outer_ranges:
            span = c * (outer_ranges[k] - 1)
            min_off += min(0, span)
            max_off += max(0, span)
        else:
            unknown = True
    low, high = unknown or min_off < 0, unknown or max_off + extent > size
    return DimRegion(Linear(dict(sym), lo_c), extent, low, high)
