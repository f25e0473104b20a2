"""Index arithmetic of loop bodies, aware of lanes: an index is uniform, "base + lane" or
"base + a constant per lane" (a lane index divided by a divisor of its base), and folds
constants and known multiples so a tile offset plus a lane index stays aligned."""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from nnvm.lowering.te_to_loops.emitter import BIG, Emitter, NotVectorizable, Val


def known_multiple(v: SSAValue, depth: int = 4) -> int:
    """A number the index `v` is known to be a multiple of, from its defining ops (a tile
    offset `j.o * 32` is a multiple of 32): lets a lane index plus that offset stay aligned."""
    op = v.owner
    if depth == 0 or not isinstance(op, Operation):
        return 1
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        c = abs(int(op.value.value.data))
        return min(c, BIG) if c else BIG
    if isinstance(op, arith.MuliOp):
        a, b = (known_multiple(o, depth - 1) for o in op.operands)
        return min(a * b, BIG)
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        return math.gcd(*(known_multiple(o, depth - 1) for o in op.operands))
    return 1


class IndexMath(Emitter):
    """`iadd`, `isub`, `imul`, `idiv`, `irem` of index values; a combination that would make
    an index depend on the lane in a non-contiguous way raises NotVectorizable."""

    def const_of(self, v: Val) -> int | None:
        """The value of `v` when it is a uniform index constant."""
        op = v.ssa.owner
        if v.kind == "u" and isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            return int(op.value.value.data)
        return None

    def lane_pattern(self, base: Val, pattern: tuple[int, ...]) -> Val:
        """base + pattern[lane] in its simplest kind: uniform when every lane is the same,
        base + lane when the pattern counts up by one, else a pattern ('p')."""
        first = pattern[0]
        start = self.iadd(base, self.cval(first)) if first else base
        if all(p == first for p in pattern):
            return start
        if all(p == first + k for k, p in enumerate(pattern)):
            return Val(start.ssa, "l", start.mult)
        return Val(start.ssa, "p", start.mult, tuple(p - first for p in pattern))

    def _lanes_of(self, a: Val) -> tuple[int, ...]:
        assert self.lanes is not None
        return a.pattern if a.kind == "p" else tuple(range(self.lanes))

    def _pattern_add(self, a: Val, b: Val, sign: int) -> Val:
        """A pattern plus or minus a uniform index (never minus a pattern, nor two patterns):
        the pattern over the sum of the bases."""
        if {a.kind, b.kind} != {"p", "u"} or (sign < 0 and b.kind == "p"):
            raise NotVectorizable
        pattern = a.pattern if a.kind == "p" else b.pattern
        base = self.iadd(Val(a.ssa, "u", a.mult), Val(b.ssa, "u", b.mult), sign)
        return Val(base.ssa, "p", base.mult, pattern)

    def iadd(self, a: Val, b: Val, sign: int = 1) -> Val:
        if "p" in (a.kind, b.kind):
            return self._pattern_add(a, b, sign)
        if a.kind == "v" or b.kind == "v" or (a.kind == "l" and b.kind == "l"):
            raise NotVectorizable
        if sign < 0 and b.kind == "l":
            raise NotVectorizable
        if sign < 0 and a.ssa is b.ssa and a.kind == b.kind:
            return self.cval(0)
        if sign < 0 and b.kind == "u" and isinstance(a.ssa.owner, arith.AddiOp):
            # (x + y) - y = x: a tile buffer's index, the region's offset added and taken off
            # again, stays the unrolled constant (so hoist-loop-invariant-accesses sees it);
            # for a vector's lanes too (a column tile's first lane): a register tile with a
            # row tail and a column tail kept its accumulators in memory, MobileViT's
            # 64x240 . 240x240 0.143 -> 0.101 ms
            lhs, rhs = a.ssa.owner.lhs, a.ssa.owner.rhs
            if rhs is b.ssa or lhs is b.ssa:
                x = lhs if rhs is b.ssa else rhs
                return Val(x, a.kind, known_multiple(x))
        cb = self.const_of(b)
        if cb == 0:
            return a
        ca = self.const_of(a)
        if ca == 0 and sign > 0:
            return b
        op = arith.AddiOp(a.ssa, b.ssa) if sign > 0 else arith.SubiOp(a.ssa, b.ssa)
        kind = "l" if "l" in (a.kind, b.kind) else "u"
        return Val(self.add1(op), kind, math.gcd(a.mult, b.mult))

    def isub(self, a: Val, b: Val) -> Val:
        return self.iadd(a, b, -1)

    def imul(self, a: Val, c: int) -> Val:
        if c == 1:
            return a
        if a.kind == "p":
            base = self.imul(Val(a.ssa, "u", a.mult), c)
            return self.lane_pattern(base, tuple(p * c for p in a.pattern))
        if a.kind != "u":
            raise NotVectorizable
        ca = self.const_of(a)
        if ca is not None:
            return self.cval(ca * c)
        return Val(self.add1(arith.MuliOp(a.ssa, self.index(c))), "u", min(a.mult * abs(c), BIG))

    def idiv(self, a: Val, c: int) -> Val:
        if c == 1:
            return a
        if a.kind == "l":
            if self.lanes and a.mult % self.lanes == 0 and c % self.lanes == 0:
                return Val(self.add1(arith.FloorDivSIOp(a.ssa, self.index(c))), "u", 1)
        if a.kind in ("l", "p"):
            # (base + p) // c = base // c + p // c when c divides the base
            if not self.lanes or a.mult % c:
                raise NotVectorizable
            base = self.idiv(Val(a.ssa, "u", a.mult), c)
            return self.lane_pattern(base, tuple(p // c for p in self._lanes_of(a)))
        if a.kind != "u":
            raise NotVectorizable
        ca = self.const_of(a)
        if ca is not None:
            return self.cval(ca // c)
        mult = a.mult // c if a.mult % c == 0 else 1
        return Val(self.add1(arith.FloorDivSIOp(a.ssa, self.index(c))), "u", max(mult, 1))

    def irem(self, a: Val, c: int) -> Val:
        if a.kind == "l":
            if self.lanes and a.mult % self.lanes == 0 and c % self.lanes == 0:
                r = self.add1(arith.RemSIOp(a.ssa, self.index(c)))
                return Val(r, "l", math.gcd(a.mult, c))
        if a.kind in ("l", "p"):
            # (base + p) % c = p % c when c divides the base
            if not self.lanes or a.mult % c:
                raise NotVectorizable
            return self.lane_pattern(self.cval(0), tuple(p % c for p in self._lanes_of(a)))
        if a.kind != "u":
            raise NotVectorizable
        ca = self.const_of(a)
        if ca is not None:
            return self.cval(ca % c)
        if a.mult % c == 0:
            return self.cval(0)
        return Val(self.add1(arith.RemSIOp(a.ssa, self.index(c))), "u", math.gcd(a.mult, c))
