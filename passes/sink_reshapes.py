"""sink-reshapes: move reshapes that only add or drop leading unit dimensions below the
elementwise ops that read them, where consecutive ones cancel.

A model that flattens [1, S, H] to [S, H] for a matmul and back reads, after quantization,

    y = reshape<1xSxN>(dequantize(requantize(dense(...))))   then bias, GELU, quantize, ...

The fuser gives an op its elementwise epilogue only while the shape stays the same, so the
reshape ended the dense's kernel and GELU ran as a kernel of its own over memory (bert2 int8:
0.27 ms of 3.1, twice). `ew(reshape(a), b) -> reshape(ew(a, b))` when the reshape only changes
leading 1s and b broadcasts into a as it did into reshape(a) (its rank is at most a's without
the unit dims, so it aligns with the same trailing dimensions); the reshapes then meet and
compose (`reshape(reshape(x))`), an identity one disappears, and the chain is one epilogue.
Elementwise and broadcast ops (by their fusion pattern kind) with one result are moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.base import NNVMOp, is_static, shape_of
from nnvm.dialects.nnvm.reshape import ReshapeOp
from nnvm.dialects.nnvm.traits import OpPatternKind, pattern_kind
from nnvm.passes.graph_utils import rebuild
from nnvm.support.pass_statistics import record_statistic


def _core(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape without its leading unit dimensions."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


def _unit_reshape(v: SSAValue) -> SSAValue | None:
    """a when v = reshape(a) only adds or drops leading 1s (static shapes)."""
    op = v.owner
    if not isinstance(op, ReshapeOp) or not (is_static(op.input.type) and is_static(v.type)):
        return None
    a = op.input
    return a if _core(shape_of(a)) == _core(shape_of(v)) and shape_of(a) != shape_of(v) else None


@dataclass
class SinkReshape(RewritePattern):
    """ew(.., reshape(a), ..) -> reshape(ew(.., a, ..)) for an elementwise or broadcast op."""

    stats: dict[str, int]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, NNVMOp) or len(op.results) != 1 or not op.operands:
            return
        if pattern_kind(op) not in (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST):
            return
        out = op.results[0]
        if not all(is_static(v.type) for v in [*op.operands, out]):
            return
        sources = [_unit_reshape(v) for v in op.operands]
        if not any(s is not None for s in sources):
            return
        # the shape the op computes in: a reshaped operand's own shape, the same for all
        first = next(s for s in sources if s is not None)
        inner = shape_of(first)
        if shape_of(out) != shape_of(op.operands[sources.index(first)]):
            return  # the op broadcasts the reshaped operand up: not a plain sink
        operands = []
        for v, s in zip(op.operands, sources, strict=True):
            if s is not None:
                if shape_of(s) != inner:
                    return
                operands.append(s)
            elif len(shape_of(v)) > len(_core(inner)) or _broadcast(shape_of(v), inner) != inner:
                return
            else:
                operands.append(v)
        moved = rebuild(op, operands)
        back = ReshapeOp.make(moved.results[0], shape=list(shape_of(out)))
        moved.results[0].name_hint = f"{out.name_hint}_{len(inner)}d" if out.name_hint else None
        back.results[0].name_hint = out.name_hint
        rewriter.replace(op, [moved, back])
        self.stats["sunk"] += 1


@dataclass
class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x); a reshape to its input's own shape -> the input."""

    stats: dict[str, int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if not (is_static(op.input.type) and is_static(op.results[0].type)):
            return
        inner = op.input.owner
        if isinstance(inner, ReshapeOp) and is_static(inner.input.type):
            rewriter.replace(op, [rebuild(op, [inner.input])])
            self.stats["composed"] += 1
        elif shape_of(op.input) == shape_of(op.results[0]):
            rewriter.replace(op, [], [op.input])
            self.stats["composed"] += 1


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes (None-free: the callers' shapes are static)."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            return ()
        out.append(max(x, y))
    return tuple(out)


@dataclass(frozen=True)
class SinkReshapesPass(ModulePass):
    """Reshapes of leading unit dimensions sink below elementwise ops and compose away."""

    name = "sink-reshapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = {"sunk": 0, "composed": 0}
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [SinkReshape(stats), ComposeReshapes(stats)], dce_enabled=True
            )
        )
        walker.rewrite_module(op)
        record_statistic(
            op, self.name, "sunk", stats["sunk"], "elementwise ops moved above a reshape"
        )
        record_statistic(
            op, self.name, "composed", stats["composed"], "reshapes composed or removed"
        )
