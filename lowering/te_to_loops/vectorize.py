"""Vectorized loops: a short loop becomes one vector per formula op (a register tile), a long
one a loop of native-width vectors; a tail (a split that does not divide its axis, the rest of
a long loop) is one masked vector, so a register tile at a tensor's edge stays a register
tile. Loads, stores and data ops on lanes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    VectorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.te import exprs
from nnvm.dialects.te.exprs import native_lanes
from nnvm.dialects.te.stage_tree import IterVar
from nnvm.lowering.te_to_loops.emitter import (
    BIG,
    INDEX,
    Nest,
    NotVectorizable,
    Val,
    discard,
    hint,
)
from nnvm.lowering.te_to_loops.index_math import IndexMath

MAX_LANES = 64
"""A vectorized loop of at most this many iterations becomes one vector (LLVM splits it into
native registers); longer loops step by the native width."""
MAX_DISTINCT = 4
"""A load whose lanes read a pattern of positions (see _pattern_load) at most this many
distinct ones, when they do not fit one vector: one broadcast each."""
NATIVE_BITS = 256
"""The default width of one vector register (AVX2)."""


_INT_DIVISIONS = (
    arith.DivSIOp,
    arith.DivUIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.FloorDivSIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
)


def _linear(v: SSAValue, depth: int = 8) -> tuple[dict[SSAValue, int], int] | None:
    """`v` as sum(coefficient * leaf) + constant over index adds, subtracts and products by
    constants (a tile position is (x + offset) - offset), or None."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return {}, int(op.value.value.data)
    if depth and isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        a, b = _linear(op.lhs, depth - 1), _linear(op.rhs, depth - 1)
        if a is None or b is None:
            return None
        if isinstance(op, arith.MuliOp):
            if a[0] and b[0]:
                return None
            (terms, c), k = (a, b[1]) if not b[0] else (b, a[1])
            return {x: n * k for x, n in terms.items()}, c * k
        sign = 1 if isinstance(op, arith.AddiOp) else -1
        terms = dict(a[0])
        for x, n in b[0].items():
            terms[x] = terms.get(x, 0) + sign * n
        return {x: n for x, n in terms.items() if n}, a[1] + sign * b[1]
    return {v: 1}, 0


def _constant_index(v: SSAValue) -> int | None:
    form = _linear(v)
    return form[1] if form is not None and not form[0] else None


class VectorEmitter(IndexMath):
    """Emits values that may be vectors: a formula that would need gathers, lane-dependent
    conditions or guards raises NotVectorizable and its loop is emitted scalar, so vectorizing
    is always correct and only sometimes fast."""

    lane_permutes: Mapping[int, str] = MappingProxyType({})
    """The target's f32 lane permutes by run-time indices, by lane count (Target.lane_permutes)."""

    def emit_vector_leaf(
        self,
        nest: Nest,
        leaf: IterVar,
        static: int,
        ub_dyn: SSAValue | None,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        inner: Callable[..., None],
        masked_tail: bool = True,
    ) -> None:
        """The innermost, vectorized loop over `leaf`: the body `inner(base)` is built once
        with lanes (a "base + lane" index), and falls back to a scalar loop where it cannot.
        A tail of `count` < lanes iterations is one vector with the lanes below `count` masked
        in (where `masked_tail`), else a scalar loop."""

        def scalar_loop(lb: SSAValue, ub: SSAValue) -> None:
            self.emit_for(leaf, lb, ub, 1, lambda iv: inner(Val(iv)))

        def tail(lb: SSAValue, ub: SSAValue, lanes: int) -> None:
            """Iterations lb..ub (fewer than `lanes`): masked, else scalar."""
            if masked_tail:
                count = ub if self.const_of(Val(lb)) == 0 else self.add1(arith.SubiOp(ub, lb))
                mask = vector.CreateMaskOp([count], VectorType(i1, [lanes]))
                self.add(mask)
                self.mask = mask.results[0]
                try:
                    ok = try_vector(Val(lb, "l", BIG if lanes == static else lanes), lanes)
                finally:
                    self.mask = None
                if ok:
                    return
                mask.detach()
                mask.erase()
            scalar_loop(lb, ub)

        def try_vector(base: Val, lanes: int) -> bool:
            block = Block()
            saved_lanes = self.lanes
            self.lanes = lanes
            try:
                with self.at(block):
                    inner(base)
            except NotVectorizable:
                discard(block)
                return False
            finally:
                self.lanes = saved_lanes
            for op in list(block.ops):
                op.detach()
                self.add(op)
            return True

        native = native_lanes(nest.elt, self.vector_bits)
        if ub_dyn is None:
            if static <= MAX_LANES:
                if static > native and static % native and masked_tail:
                    # whole native vectors, the last lanes masked off: a <29 x float> is
                    # split by LLVM into 16 + 8 + 4 + 1 lanes, four registers per value (a
                    # 14-row register tile of them spills; LLaMA's 29-token attention ran at 2%
                    # of peak)
                    tail(self.index(0), self.index(static), -(-static // native) * native)
                elif static == 1 or not try_vector(Val(self.index(0), "l", BIG), static):
                    scalar_loop(self.index(0), self.index(static))
                return
            main = static - static % native
            block = Block(arg_types=[INDEX])
            block.args[0].name_hint = hint(leaf.name)
            ok = False
            with self.at(block):
                ok = try_vector(Val(block.args[0], "l", native), native)
                self.add(scf.YieldOp())
            if ok:
                self.add(
                    scf.ForOp(
                        self.index(0), self.index(main), self.index(native), [], Region(block)
                    )
                )
                if main < static:
                    tail(self.index(main), self.index(static), native)
            else:
                discard(block)
                scalar_loop(self.index(0), self.index(static))
            return
        if static <= MAX_LANES:

            def whole() -> None:
                if not try_vector(Val(self.index(0), "l", BIG), static):
                    scalar_loop(self.index(0), self.index(static))

            full = self.add1(arith.CmpiOp(ub_dyn, self.index(static), "eq"))
            self.emit_if(full, whole, lambda: tail(self.index(0), ub_dyn, static))
            return
        rem = self.add1(arith.RemSIOp(ub_dyn, self.index(native)))
        main_ub = self.add1(arith.SubiOp(ub_dyn, rem))
        block = Block(arg_types=[INDEX])
        with self.at(block):
            ok = try_vector(Val(block.args[0], "l", native), native)
            self.add(scf.YieldOp())
        if ok:
            self.add(scf.ForOp(self.index(0), main_ub, self.index(native), [], Region(block)))
            tail(main_ub, ub_dyn, native)
        else:
            discard(block)
            scalar_loop(self.index(0), ub_dyn)

    # -- memory ---------------------------------------------------------------------------

    def load(self, buffer: SSAValue, idx: list[Val], passthru: SSAValue | None = None) -> Val:
        """A scalar or vector load; with `passthru` (a scalar, under a mask) a masked vector
        load whose masked-off lanes hold it: a select on lanes in a range."""
        idx = self._unit_dims_zero(buffer, idx)
        if all(i.kind == "u" for i in idx):
            if passthru is not None:
                raise NotVectorizable
            return Val(self.add1(memref.LoadOp.get(buffer, [i.ssa for i in idx])))
        if self._vector_access(buffer, idx):
            elt = buffer.type.element_type  # type: ignore[attr-defined]
            t = VectorType(elt, [self.lanes])
            indices = [i.ssa for i in idx]
            if self.mask is not None and (passthru is not None or not self._inside(buffer, idx)):
                fill = passthru if passthru is not None else self.add1(exprs.constant(0, elt))
                splat = self.add1(vector.BroadcastOp(fill, t))
                return Val(
                    self.add1(vector.MaskedLoadOp(buffer, indices, self.mask, splat, t)), "v"
                )
            return Val(self.add1(vector.LoadOp(buffer, indices, t)), "v")
        if idx[-1].kind == "p" and all(i.kind == "u" for i in idx[:-1]) and passthru is None:
            return self._pattern_load(buffer, idx)
        raise NotVectorizable

    def _pattern_load(self, buffer: SSAValue, idx: list[Val]) -> Val:
        """A load whose lanes read base + pattern[lane] along the last index: a grouped conv's
        16 output channels over two groups of 8 read input channel c of one group in lanes
        0-7, of the other in lanes 8-15. With a constant base whose lanes fit one vector
        inside the buffer: that vector, shuffled. With a base known at run time (a group's
        channel loop) and a last dimension of one vector: the whole of it, permuted by
        base + pattern through the target's lane permute (vpermps) where it has one.
        Otherwise, up to MAX_DISTINCT positions: a broadcast of each, blended by shuffles."""
        assert self.lanes is not None
        last = idx[-1]
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        elt = buffer.type.element_type  # type: ignore[attr-defined]
        t = VectorType(elt, [self.lanes])
        uniform = [i.ssa for i in idx[:-1]]
        base = self.const_of(Val(last.ssa))
        lo, hi = min(last.pattern), max(last.pattern)
        if base is not None and shape[-1] >= self.lanes and 0 <= base + lo:
            start = min(base + lo, shape[-1] - self.lanes)
            if base + hi < start + self.lanes:
                v = self.add1(vector.LoadOp(buffer, [*uniform, self.index(start)], t))
                return Val(self._shuffle(v, v, [base + p - start for p in last.pattern]), "v")
        permute = self.lane_permutes.get(self.lanes) if elt == f32 else None
        if permute is not None and shape[-1] == self.lanes:
            # every lane's position is a valid index of the last dimension
            v = self.add1(vector.LoadOp(buffer, [*uniform, self.index(0)], t))
            it = VectorType(i32, [self.lanes])
            first = self.add1(vector.BroadcastOp(self.add1(arith.IndexCastOp(last.ssa, i32)), it))
            offsets = DenseIntOrFPElementsAttr.from_list(it, list(last.pattern))
            lanes = self.add1(arith.AddiOp(first, self.add1(arith.ConstantOp(offsets, it))))
            return Val(self.add1(llvm.CallIntrinsicOp(permute, [v, lanes], [t])), "v")
        positions = sorted(set(last.pattern))
        if len(positions) > MAX_DISTINCT or self.mask is not None:
            raise NotVectorizable  # a masked tail's lanes past the count may read past the end
        splats = {}
        for p in positions:
            at = self.iadd(Val(last.ssa, "u", last.mult), self.cval(p))
            x = self.add1(memref.LoadOp.get(buffer, [*uniform, at.ssa]))
            splats[p] = self.add1(vector.BroadcastOp(x, t))
        v = splats[positions[0]]
        for p in positions[1:]:
            mask = [k + self.lanes if q == p else k for k, q in enumerate(last.pattern)]
            v = self._shuffle(v, splats[p], mask)
        return Val(v, "v")

    def _shuffle(self, a: SSAValue, b: SSAValue, mask: list[int]) -> SSAValue:
        return self.add1(
            vector.ShuffleOp(a, b, DenseArrayBase.from_list(i64, mask), result_type=a.type)
        )

    def _unit_dims_zero(self, buffer: SSAValue, idx: list[Val]) -> list[Val]:
        """Index 0 along a buffer's dimensions of size 1, the only position there: a tile
        buffer's batch index (the tile's own, decoded from a fused parallel index) is then
        a constant, so every access to the buffer is at a constant offset and LLVM keeps it
        in registers instead of memory (the accumulators of a conv tile's epilogue)."""
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        return [
            self.cval(0) if n == 1 and i.kind == "u" and self.const_of(i) != 0 else i
            for n, i in zip(shape, idx, strict=True)
        ]

    def store(self, buffer: SSAValue, idx: list[Val], value: Val) -> None:
        idx = self._unit_dims_zero(buffer, idx)
        if all(i.kind == "u" for i in idx):
            if value.kind != "u":
                raise NotVectorizable
            self.add(memref.StoreOp.get(value.ssa, buffer, [i.ssa for i in idx]))
            return
        if self._vector_access(buffer, idx):
            v = self.to_vector(value)
            if self.mask is not None and not self._inside(buffer, idx):
                self.add(vector.MaskedStoreOp(buffer, [i.ssa for i in idx], self.mask, v))
            else:
                self.add(vector.StoreOp(v, buffer, [i.ssa for i in idx]))
            return
        raise NotVectorizable

    def _inside(self, buffer: SSAValue, idx: list[Val]) -> bool:
        """Does a whole vector at these indices stay inside the buffer? Yes when its first lane
        is a constant position with room for every lane: a register tile's own buffer, whose
        extra lanes hold values no one reads; such accesses stay plain (the tile then lives in
        registers). A tensor's, at a position known only at run time, is masked."""
        assert self.lanes is not None
        first = _constant_index(idx[-1].ssa)
        shape = buffer.type.get_shape()  # type: ignore[attr-defined]
        return first is not None and 0 <= first and first + self.lanes <= shape[-1]

    def _vector_access(self, buffer: SSAValue, idx: list[Val]) -> bool:
        """A contiguous vector access: lanes along the last index only. (Not for i1: memrefs
        hold a byte per i1, a vector of i1 in memory is a bitfield.)"""
        if self.lanes is None or not idx or idx[-1].kind != "l":
            return False
        if any(i.kind != "u" for i in idx[:-1]):
            return False
        return not exprs.is_bool_type(buffer.type.element_type)  # type: ignore[attr-defined]

    def to_vector(self, v: Val) -> SSAValue:
        if v.kind == "v":
            return v.ssa
        if v.kind in ("l", "p") or self.lanes is None:
            raise NotVectorizable
        return self.add1(vector.BroadcastOp(v.ssa, VectorType(v.ssa.type, [self.lanes])))

    def data_op(self, build: Callable[..., Operation], operands: list[Val]) -> Val:
        """Apply a scalar op builder to values that may be vectors. (xDSL 0.74's arith does
        not take vectors everywhere: no vector compares, selects on vector conditions or
        int/float conversions; such a loop stays scalar.)"""
        if all(o.kind == "u" for o in operands):
            return Val(self.add1(build(*[o.ssa for o in operands])))
        op = build(*[self.to_vector(o) for o in operands])
        if self.mask is not None and isinstance(op, _INT_DIVISIONS):
            # a masked-off lane holds 0: dividing by it would trap
            op.drop_all_references()
            raise NotVectorizable
        try:
            op.verify()
        except VerifyException:
            op.drop_all_references()
            raise NotVectorizable from None
        return Val(self.add1(op), "v")
