"""A compute's formula evaluated at the loop indices, demand-driven from its yielded value:
reads become loads, inlined stages are evaluated where they are read."""

from __future__ import annotations

from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import IndexType, VectorType, i1
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import ComputeOp, ReadOp, YieldOp
from nnvm.lowering.te_to_loops.emitter import NotVectorizable, Scope, Val, discard
from nnvm.lowering.te_to_loops.vectorize import VectorEmitter
from nnvm.support.diagnostics import DiagnosticError


class FormulaEval:
    """Evaluates a compute's formula at given indices: demand-driven from the yielded value,
    so a `select` whose branches read memory becomes an `scf.if` (lazy, as te promises)."""

    def __init__(self, gen: VectorEmitter, compute: ComputeOp, args: list[Val], scope: Scope):
        self.gen = gen
        self.compute = compute
        self.scope = scope
        self.memo: dict[SSAValue, Val] = dict(zip(compute.block.args, args, strict=True))
        self._reads: dict[SSAValue, bool] = {}

    def result(self) -> Val:
        term = self.compute.block.last_op
        assert isinstance(term, YieldOp)
        return self.eval(term.value)

    def product_factors(self) -> tuple[Val, Val] | None:
        """The two factors when the formula is a float product (a sum of products is a
        chain of fused multiply-adds), else None."""
        term = self.compute.block.last_op
        assert isinstance(term, YieldOp)
        op = term.value.owner
        if not isinstance(op, arith.MulfOp) or not exprs.is_float_type(op.result.type):
            return None
        return self.eval(op.lhs), self.eval(op.rhs)

    def has_reads(self, v: SSAValue) -> bool:
        """Does computing v read an element that may lie outside its tensor (so a select
        must not compute its branches eagerly)? A read indexed by the axes themselves (each
        within the tensor's extent: a bit_shift's per-column amount, an operand of the same
        shape) or by constants inside the tensor (a broadcast [1, C, 1, 1] operand) is always
        in bounds: the branch may run as vector lanes."""
        if v in self._reads:
            return self._reads[v]
        op = v.owner
        found = False
        if isinstance(op, Operation) and op.parent_block() is self.compute.block:
            if isinstance(op, ReadOp) and not self._in_bounds(op):
                found = True
            else:
                found = any(self.has_reads(o) for o in op.operands)
        self._reads[v] = found
        return found

    def _in_bounds(self, read: ReadOp) -> bool:
        extents = [*self.compute.shape, *self.compute.reduce_shape]
        shape = read.tensor.type.get_shape()  # type: ignore[attr-defined]
        for i, dim in zip(read.indices, shape, strict=True):
            if isinstance(i, BlockArgument) and i.owner is self.compute.block:
                if extents[i.index] > dim:
                    return False
                continue
            c = exprs.constant_value(i.owner) if isinstance(i.owner, Operation) else None
            if not (isinstance(c, int) and not isinstance(c, bool) and 0 <= c < dim):
                return False  # a computed index (padding, a window) may leave the tensor
        return True

    def eval(self, v: SSAValue) -> Val:
        if v in self.memo:
            return self.memo[v]
        op = v.owner
        assert isinstance(op, Operation), f"unbound formula value {v}"
        result = self._eval_op(op)
        self.memo[v] = result
        return result

    def _eval_op(self, op: Operation) -> Val:
        gen = self.gen
        if isinstance(op, ReadOp):
            return self.read(op.tensor, [self.eval(i) for i in op.indices])
        if isinstance(op, arith.ConstantOp):
            c = exprs.constant_value(op)
            if isinstance(op.result.type, IndexType) and isinstance(c, int):
                return gen.cval(c)
            return Val(gen.add1(op.clone()))
        if isinstance(op, arith.SelectOp) and (self.has_reads(op.lhs) or self.has_reads(op.rhs)):
            return self.lazy_select(op)
        if isinstance(op, arith.SelectOp) and gen.lanes is not None:
            try:
                self.eval(op.cond)
            except NotVectorizable:
                return self.lane_range_select(op)
        if op.results and isinstance(op.results[0].type, IndexType):
            return self.index_op(op)
        operands = [self.eval(o) for o in op.operands]
        if any(o.kind in ("l", "p") for o in operands):
            raise NotVectorizable
        return gen.data_op(lambda *xs: _rebuild(op, list(xs)), operands)

    def index_op(self, op: Operation) -> Val:
        gen = self.gen
        a = [self.eval(o) for o in op.operands]
        consts = [gen.const_of(x) for x in a]
        if isinstance(op, arith.AddiOp):
            return gen.iadd(a[0], a[1])
        if isinstance(op, arith.SubiOp):
            return gen.isub(a[0], a[1])
        if isinstance(op, arith.MuliOp) and consts[1] is not None:
            return gen.imul(a[0], consts[1])
        if isinstance(op, arith.MuliOp) and consts[0] is not None:
            return gen.imul(a[1], consts[0])
        if (
            isinstance(op, arith.FloorDivSIOp | arith.DivSIOp)
            and consts[1] is not None
            and consts[1] > 0
        ):
            if consts[0] is not None:
                q = (
                    consts[0] // consts[1]
                    if isinstance(op, arith.FloorDivSIOp)
                    else int(consts[0] / consts[1])
                )
                return gen.cval(q)
            return gen.idiv(a[0], consts[1])
        if (
            isinstance(op, arith.RemSIOp)
            and consts[1] is not None
            and consts[1] > 0
            and a[0].kind in ("l", "p")
        ):
            return gen.irem(a[0], consts[1])
        if any(x.kind != "u" for x in a):
            raise NotVectorizable
        return Val(gen.add1(_rebuild(op, [x.ssa for x in a])))

    def read(self, tensor: SSAValue, idx: list[Val], passthru: SSAValue | None = None) -> Val:
        gen = self.gen
        stage = gen.state.by_value.get(tensor)
        if stage is None:
            raise DiagnosticError(self.compute, "te.read of a tensor that is not a stage")
        if stage.attach == "inline" and stage.compute is not None:
            return FormulaEval(gen, stage.compute, idx, self.scope).result()
        view = self.scope.views.get(stage)
        if view is None:
            raise DiagnosticError(
                self.compute,
                f"'{self.compute.stage_name}' reads '{stage.name}' where it is not computed "
                f"(compute '{stage.name}' at a loop that encloses this read)",
            )
        return gen.load(view.buffer, view_indices(gen, idx, view.offsets), passthru)

    def lazy_select(self, op: arith.SelectOp) -> Val:
        gen = self.gen
        try:
            cond = self.eval(op.cond)
        except NotVectorizable:
            return self.lane_range_select(op)
        if cond.kind != "u":
            raise NotVectorizable
        branches: list[tuple[Block, Val]] = []
        blocks = [Block(), Block()]
        try:
            for v, block in zip((op.lhs, op.rhs), blocks, strict=True):
                saved = dict(self.memo)
                with gen.at(block):
                    branches.append((block, self.eval(v)))
                self.memo = saved
            vector_result = any(val.kind == "v" for _, val in branches)
            results: list[SSAValue] = []
            for block, val in branches:
                with gen.at(block):
                    if val.kind in ("l", "p"):
                        raise NotVectorizable
                    ssa = gen.to_vector(val) if vector_result else val.ssa
                    results.append(ssa)
                    gen.add(scf.YieldOp(ssa))
        except NotVectorizable:
            # the branches are not in the IR yet: drop their ops' uses of outside values, or
            # they stay behind as phantom uses that later conversions trip over
            for block in blocks:
                discard(block)
            raise
        t = results[0].type
        if_op = scf.IfOp(cond.ssa, [t], Region(branches[0][0]), Region(branches[1][0]))
        return Val(gen.add1(if_op), "v" if vector_result else "u")

    def lane_range_select(self, op: arith.SelectOp) -> Val:
        """A select whose condition bounds the vectorized axis (a pad's `l >= 1 and l - 1 <
        W`, a causal mask's `j <= i`) and whose true branch reads a tensor, the false one a
        uniform value: one load masked to the lanes in range, the false value in the others
        (its passthru). Masked-off lanes are not read, so a pad's read before the row's first
        element or past its last is safe."""
        gen = self.gen
        read = op.lhs.owner
        if gen.lanes is None or not isinstance(read, ReadOp):
            raise NotVectorizable
        stage = gen.state.by_value.get(read.tensor)
        if stage is None or stage.attach == "inline":
            raise NotVectorizable  # an inlined formula: its masked-off lanes would not be it
        if self.has_reads(op.rhs):
            raise NotVectorizable  # the false value is computed for every lane: no read there
        other = self.eval(op.rhs)
        if other.kind != "u":
            raise NotVectorizable
        uniform: list[SSAValue] = []
        lows: list[SSAValue] = []
        highs: list[SSAValue] = []
        self._lane_bounds(op.cond, uniform, lows, highs)
        lo = gen.index(0)
        for x in lows:
            lo = gen.add1(arith.MaxSIOp(lo, x))
        hi = gen.index(gen.lanes)
        for x in highs:
            hi = gen.add1(arith.MinSIOp(hi, x))
        hi = gen.add1(arith.MaxSIOp(hi, lo))  # an empty range stays empty
        for u in uniform:
            hi = gen.add1(arith.SelectOp(u, hi, lo))
        mt = VectorType(i1, [gen.lanes])
        below_hi = gen.add1(vector.CreateMaskOp([hi], mt))
        below_lo = gen.add1(vector.CreateMaskOp([lo], mt))
        mask = gen.add1(arith.XOrIOp(below_hi, below_lo))  # lo <= lane < hi
        if gen.mask is not None:
            mask = gen.add1(arith.AndIOp(mask, gen.mask))
        idx = [self.eval(i) for i in read.indices]
        saved = gen.mask
        gen.mask = mask
        try:
            return self.read(read.tensor, idx, passthru=other.ssa)
        finally:
            gen.mask = saved

    def _lane_bounds(
        self, v: SSAValue, uniform: list[SSAValue], lows: list[SSAValue], highs: list[SSAValue]
    ) -> None:
        """Split a conjunction into uniform conditions and bounds on the lane number k of a
        "base + k" index: `base + k >= c` is k >= c - base (a low), `base + k < c` is
        k < c - base (a high). Anything else raises NotVectorizable."""
        gen = self.gen
        op = v.owner
        if isinstance(op, arith.AndIOp):
            self._lane_bounds(op.lhs, uniform, lows, highs)
            self._lane_bounds(op.rhs, uniform, lows, highs)
            return
        if isinstance(op, arith.CmpiOp) and isinstance(op.lhs.type, IndexType):
            a, b = self.eval(op.lhs), self.eval(op.rhs)
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            if a.kind == "u" and b.kind == "u":
                uniform.append(self.eval(v).ssa)
                return
            if a.kind == "u" and b.kind == "l":
                a, b = b, a
                pred = _FLIPPED.get(pred, pred)
            if a.kind != "l" or b.kind != "u" or pred not in _LANE_BOUND:
                raise NotVectorizable
            d = gen.isub(b, Val(a.ssa)).ssa  # c - base
            low, plus_one = _LANE_BOUND[pred]
            if plus_one:
                d = gen.add1(arith.AddiOp(d, gen.index(1)))
            (lows if low else highs).append(d)
            return
        val = self.eval(v)
        if val.kind != "u":
            raise NotVectorizable
        uniform.append(val.ssa)


_FLIPPED = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle"}
_LANE_BOUND = {
    "sge": (True, False),
    "sgt": (True, True),
    "slt": (False, False),
    "sle": (False, True),
}
"""base + k PRED c as a bound on k: (a low bound?, c - base plus one?)."""


def view_indices(gen: VectorEmitter, idx: list[Val], offsets) -> list[Val]:
    """Tensor indices into the buffer of a view that starts at `offsets` (None: at 0)."""
    return [
        i if off is None else gen.isub(i, Val(off)) for i, off in zip(idx, offsets, strict=True)
    ]


def _rebuild(op: Operation, operands: list[SSAValue]) -> Operation:
    """The same op over new operands; scalar result types widen to vectors with them."""
    lanes = None
    for o in operands:
        if isinstance(o.type, VectorType):
            lanes = o.type.get_shape()[0]
    types = [
        VectorType(t, [lanes]) if lanes is not None and not isinstance(t, VectorType) else t
        for t in op.result_types
    ]
    return op.__class__.create(
        operands=operands,
        result_types=types,
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
