"""convert-affine-to-scf: all of affine to scf/arith/memref/vector, including what xDSL's
`lower-affine` does not handle.

xDSL 0.74's `lower-affine` covers for/load/store/apply/yield, but evaluates loop bounds without
their operands (so `affine.for %j = %i to min(%i + 32, 100)`, the shape of every tiled loop with a
tail, crashes or is wrong), ignores symbols in load/store maps, lowers `mod` to `remsi` (wrong for
negative values), and has no affine.min, affine.if, affine.parallel or vector_load/store. This
pass handles all of those; affine.parallel becomes `scf.parallel`, the loop construct that
`convert-parallel-to-threads` runs on nnvm's thread pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, memref, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.ir.affine.affine_set import AffineConstraintKind
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.to_llvm.conversion import replace_op


class _Emitter:
    """Materializes affine expressions as index arithmetic, appending ops to `ops`."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, v: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(v, IndexType())))

    def expr(self, e: AffineExpr, dims: Sequence[SSAValue], syms: Sequence[SSAValue]) -> SSAValue:
        if isinstance(e, AffineConstantExpr):
            return self.const(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymExpr):
            return syms[e.position]
        assert isinstance(e, AffineBinaryOpExpr)
        lhs = self.expr(e.lhs, dims, syms)
        rhs = self.expr(e.rhs, dims, syms)
        match e.kind:
            case AffineBinaryOpKind.Add:
                return self.add(arith.AddiOp(lhs, rhs))
            case AffineBinaryOpKind.Mul:
                return self.add(arith.MuliOp(lhs, rhs))
            case AffineBinaryOpKind.FloorDiv:
                return self.add(arith.FloorDivSIOp(lhs, rhs))
            case AffineBinaryOpKind.CeilDiv:
                return self.add(arith.CeilDivSIOp(lhs, rhs))
            case AffineBinaryOpKind.Mod:
                # affine `mod` is never negative for a positive divisor; remsi can be
                rem = self.add(arith.RemSIOp(lhs, rhs))
                zero = self.const(0)
                neg = self.add(arith.CmpiOp(rem, zero, "slt"))
                return self.add(arith.SelectOp(neg, self.add(arith.AddiOp(rem, rhs)), rem))

    def map_results(self, m: AffineMap, operands: Sequence[SSAValue]) -> list[SSAValue]:
        dims = operands[: m.num_dims]
        syms = operands[m.num_dims :]
        return [self.expr(e, dims, syms) for e in m.results]

    def fold(self, values: Sequence[SSAValue], op_type: type[Operation]) -> SSAValue:
        acc = values[0]
        for v in values[1:]:
            acc = self.add(op_type(acc, v))
        return acc


def _replace(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Operation | Sequence[Operation],
    results: Sequence[SSAValue],
) -> None:
    """Replace `op`, keeping its result names and source position on the new ops."""
    ops = [new_ops] if isinstance(new_ops, Operation) else list(new_ops)
    replace_op(rewriter, op, ops, list(results))


def _indices(op: Operation, m: AffineMap | None, operands: Sequence[SSAValue], e: _Emitter):
    if m is None:
        return list(operands)
    return e.map_results(m, operands)


class LowerFor(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ForOp, rewriter: PatternRewriter) -> None:
        e = _Emitter()
        lbs = e.map_results(op.lowerBoundMap.data, op.lowerBoundOperands)
        ubs = e.map_results(op.upperBoundMap.data, op.upperBoundOperands)
        lb = e.fold(lbs, arith.MaxSIOp)
        ub = e.fold(ubs, arith.MinSIOp)
        step = e.const(op.step.value.data)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = scf.ForOp(lb, ub, step, list(op.inits), body)
        _replace(rewriter, op, [*e.ops, new], list(new.results))


class LowerParallel(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ParallelOp, rewriter: PatternRewriter) -> None:
        if op.res or op.reductions.data:
            raise LoweringError(
                op,
                "affine.parallel with reductions is not supported; reduce inside the body "
                "into a buffer, or use affine.for",
            )
        e = _Emitter()
        lb_map = op.lowerBoundsMap.data
        ub_map = op.upperBoundsMap.data
        n_lb = lb_map.num_dims + lb_map.num_symbols
        operands = list(op.map_operands)
        lb_vals = e.map_results(lb_map, operands[:n_lb])
        ub_vals = e.map_results(ub_map, operands[n_lb:])
        lbs = _grouped(lb_vals, op.lowerBoundsGroups.get_values(), e, arith.MaxSIOp)
        ubs = _grouped(ub_vals, op.upperBoundsGroups.get_values(), e, arith.MinSIOp)
        steps = [e.const(s.value.data) for s in op.steps.data]
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = scf.ParallelOp(lbs, ubs, steps, body)
        _replace(rewriter, op, [*e.ops, new], [])


def _grouped(values: list[SSAValue], groups, e: _Emitter, combine) -> list[SSAValue]:
    out: list[SSAValue] = []
    pos = 0
    for g in groups:
        out.append(e.fold(values[pos : pos + g], combine))
        pos += g
    return out


class LowerIf(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.IfOp, rewriter: PatternRewriter) -> None:
        e = _Emitter()
        aset = op.condition.data
        dims = list(op.args)[: aset.num_dims]
        syms = list(op.args)[aset.num_dims :]
        cond: SSAValue | None = None
        for c in aset.constraints:
            lhs = e.expr(c.lhs, dims, syms)
            rhs = e.expr(c.rhs, dims, syms)
            pred = {
                AffineConstraintKind.ge: "sge",
                AffineConstraintKind.le: "sle",
                AffineConstraintKind.eq: "eq",
            }[c.kind]
            test = e.add(arith.CmpiOp(lhs, rhs, pred))
            cond = test if cond is None else e.add(arith.AndIOp(cond, test))
        if cond is None:
            cond = e.add(arith.ConstantOp.from_int_and_width(1, 1))
        then_region = rewriter.move_region_contents_to_new_regions(op.then_region)
        else_region = rewriter.move_region_contents_to_new_regions(op.else_region)
        new = scf.IfOp(
            cond,
            [r.type for r in op.res],
            then_region,
            else_region if else_region.blocks else None,
        )
        _replace(rewriter, op, [*e.ops, new], list(new.results))


class LowerYield(RewritePattern):
    """affine.yield becomes the terminator its new parent expects."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.YieldOp, rewriter: PatternRewriter) -> None:
        parent = op.parent_op()
        if isinstance(parent, scf.ParallelOp):
            _replace(rewriter, op, scf.ReduceOp(), [])
        elif isinstance(parent, scf.ForOp | scf.IfOp):
            _replace(rewriter, op, scf.YieldOp(*op.arguments), [])


class LowerMin(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.MinOp, rewriter: PatternRewriter) -> None:
        e = _Emitter()
        vals = e.map_results(op.map.data, list(op.arguments))
        result = e.fold(vals, arith.MinSIOp)
        _replace(rewriter, op, e.ops, [result])


class LowerApply(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ApplyOp, rewriter: PatternRewriter) -> None:
        e = _Emitter()
        (result,) = e.map_results(op.map.data, list(op.mapOperands))
        _replace(rewriter, op, e.ops, [result])


class LowerLoadStore(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(
            op, affine.LoadOp | affine.StoreOp | affine.VectorLoadOp | affine.VectorStoreOp
        ):
            return
        e = _Emitter()
        m = op.map.data if op.map is not None else None
        idx = _indices(op, m, list(op.indices), e)
        if isinstance(op, affine.LoadOp):
            new: Operation = memref.LoadOp.get(op.memref, idx)
        elif isinstance(op, affine.StoreOp):
            new = memref.StoreOp.get(op.value, op.memref, idx)
        elif isinstance(op, affine.VectorLoadOp):
            new = vector.LoadOp(op.memref, idx, op.result.type)
        else:
            new = vector.StoreOp.build(operands=[op.value, op.memref, idx])
        _replace(rewriter, op, [*e.ops, new], list(new.results))


@dataclass(frozen=True)
class ConvertAffineToScf(ModulePass):
    """Lower every affine op (loops with min/max bounds, parallel, if, min, vector access)."""

    name = "convert-affine-to-scf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    LowerFor(),
                    LowerParallel(),
                    LowerIf(),
                    LowerMin(),
                    LowerApply(),
                    LowerLoadStore(),
                ]
            )
        ).rewrite_module(op)
        PatternRewriteWalker(LowerYield()).rewrite_module(op)
