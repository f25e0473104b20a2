"""Vectorized loops: a short loop becomes one vector per formula op (a register tile), a long
one a loop of native-width vectors with a scalar tail; loads, stores and data ops on lanes."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import VectorType
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
NATIVE_BITS = 256
"""The default width of one vector register (AVX2)."""


class VectorEmitter(IndexMath):
    """Emits values that may be vectors: a formula that would need gathers, lane-dependent
    conditions or guards raises NotVectorizable and its loop is emitted scalar, so vectorizing
    is always correct and only sometimes fast."""

    def emit_vector_leaf(
        self,
        nest: Nest,
        leaf: IterVar,
        static: int,
        ub_dyn: SSAValue | None,
        vals: dict[IterVar, Val],
        handled: frozenset[int],
        inner: Callable[..., None],
    ) -> None:
        """The innermost, vectorized loop over `leaf`: the body `inner(base)` is built once
        with lanes (a "base + lane" index), and falls back to a scalar loop where it cannot."""

        def scalar_loop(lb: SSAValue, ub: SSAValue) -> None:
            self.emit_for(leaf, lb, ub, 1, lambda iv: inner(Val(iv)))

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
                if static == 1 or not try_vector(Val(self.index(0), "l", BIG), static):
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
                    scalar_loop(self.index(main), self.index(static))
            else:
                discard(block)
                scalar_loop(self.index(0), self.index(static))
            return
        if static <= MAX_LANES:
            full = self.add1(arith.CmpiOp(ub_dyn, self.index(static), "eq"))
            then_block, else_block = Block(), Block()
            with self.at(then_block):
                ok = try_vector(Val(self.index(0), "l", BIG), static)
                if not ok:
                    scalar_loop(self.index(0), self.index(static))
                self.add(scf.YieldOp())
            with self.at(else_block):
                scalar_loop(self.index(0), ub_dyn)
                self.add(scf.YieldOp())
            self.add(scf.IfOp(full, [], Region(then_block), Region(else_block)))
            return
        rem = self.add1(arith.RemSIOp(ub_dyn, self.index(native)))
        main_ub = self.add1(arith.SubiOp(ub_dyn, rem))
        block = Block(arg_types=[INDEX])
        with self.at(block):
            ok = try_vector(Val(block.args[0], "l", native), native)
            self.add(scf.YieldOp())
        if ok:
            self.add(scf.ForOp(self.index(0), main_ub, self.index(native), [], Region(block)))
            scalar_loop(main_ub, ub_dyn)
        else:
            discard(block)
            scalar_loop(self.index(0), ub_dyn)

    # -- memory ---------------------------------------------------------------------------

    def load(self, buffer: SSAValue, idx: list[Val]) -> Val:
        if all(i.kind == "u" for i in idx):
            return Val(self.add1(memref.LoadOp.get(buffer, [i.ssa for i in idx])))
        if self._vector_access(buffer, idx):
            elt = buffer.type.element_type  # type: ignore[attr-defined]
            t = VectorType(elt, [self.lanes])
            return Val(self.add1(vector.LoadOp(buffer, [i.ssa for i in idx], t)), "v")
        raise NotVectorizable

    def store(self, buffer: SSAValue, idx: list[Val], value: Val) -> None:
        if all(i.kind == "u" for i in idx):
            if value.kind != "u":
                raise NotVectorizable
            self.add(memref.StoreOp.get(value.ssa, buffer, [i.ssa for i in idx]))
            return
        if self._vector_access(buffer, idx):
            v = self.to_vector(value)
            self.add(vector.StoreOp(v, buffer, [i.ssa for i in idx]))
            return
        raise NotVectorizable

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
        if v.kind == "l" or self.lanes is None:
            raise NotVectorizable
        return self.add1(vector.BroadcastOp(v.ssa, VectorType(v.ssa.type, [self.lanes])))

    def data_op(self, build: Callable[..., Operation], operands: list[Val]) -> Val:
        """Apply a scalar op builder to values that may be vectors. (xDSL 0.74's arith does
        not take vectors everywhere: no vector compares, selects on vector conditions or
        int/float conversions; such a loop stays scalar.)"""
        if all(o.kind == "u" for o in operands):
            return Val(self.add1(build(*[o.ssa for o in operands])))
        op = build(*[self.to_vector(o) for o in operands])
        try:
            op.verify()
        except VerifyException:
            op.drop_all_references()
            raise NotVectorizable from None
        return Val(self.add1(op), "v")
