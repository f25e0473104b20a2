"""sink-reshapes: move reshapes below the elementwise ops that read them (where consecutive
ones compose and cancel, and where the ops join the epilogue of what produced the reshaped
value).

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

import math
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

from nnvm.dialects.nnvm.base import NNVMOp, ShapeError, broadcast_shapes, is_static, shape_of
from nnvm.dialects.nnvm.nn import BiasAddOp
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


def _prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading dimensions two shapes share."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def _suffix(a: tuple[int, ...], b: tuple[int, ...], prefix: int) -> int:
    """How many trailing dimensions two shapes share, after their first `prefix`."""
    k = 0
    while k < min(len(a), len(b)) - prefix and a[-1 - k] == b[-1 - k]:
        k += 1
    return k


@dataclass
class SinkReshape(RewritePattern):
    """ew(.., reshape(a), ..) -> reshape(ew(.., a, ..)) for an elementwise or broadcast op,
    in two cases:

    * the reshape only adds or drops leading 1s, and every other operand aligns with the same
      trailing dimensions in a (rank at most a's without its unit dimensions);
    * the reshape keeps a prefix and a suffix of dimensions and splits or merges the middle
      ([N, C, H*W] -> [N, C, H, W] after a pointwise conv run as a matmul; [H*W, C] ->
      [1, H, W, C] around a channels-last MLP's matmuls, as ConvNeXt's), and every other
      operand is constant along the middle (a per-channel bias): it is reshaped to a's rank.
      bias_add along an axis of the prefix moves as it is."""

    stats: dict[str, int]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, NNVMOp) or len(op.results) != 1 or not op.operands:
            return
        if pattern_kind(op) not in (OpPatternKind.ELEMWISE, OpPatternKind.BROADCAST):
            return
        out = op.results[0]
        if not all(is_static(v.type) for v in [*op.operands, out]):
            return
        reshaped = [v.owner.input if isinstance(v.owner, ReshapeOp) else None for v in op.operands]
        first = next(
            (
                k
                for k, a in enumerate(reshaped)
                if a is not None and shape_of(op.operands[k]) == shape_of(out)
            ),
            None,
        )
        if first is None:
            return  # nothing to move, or the op broadcasts the reshaped operand up
        a_shape, b_shape = shape_of(reshaped[first]), shape_of(op.operands[first])
        if a_shape == b_shape:
            return
        axis = op.attr("axis") if isinstance(op, BiasAddOp) else None
        if axis is None and ("axis" in op.properties or "axes" in op.properties):
            return  # an op whose meaning depends on the rank
        new_ops: list[Operation] = []
        operands = self._operands(op, reshaped, a_shape, b_shape, axis, new_ops)
        if operands is None:
            return
        moved = rebuild(op, operands)
        back = ReshapeOp.make(moved.results[0], shape=list(b_shape))
        moved.results[0].name_hint = f"{out.name_hint}_{len(a_shape)}d" if out.name_hint else None
        back.results[0].name_hint = out.name_hint
        rewriter.replace(op, [*new_ops, moved, back])
        self.stats["sunk"] += 1

    def _operands(
        self,
        op: NNVMOp,
        reshaped: list[SSAValue | None],
        a_shape: tuple[int, ...],
        b_shape: tuple[int, ...],
        axis: int | None,
        new_ops: list[Operation],
    ) -> list[SSAValue] | None:
        """op's operands over a's shape, or None when the reshape cannot move."""
        unit = _core(a_shape) == _core(b_shape)
        prefix = _prefix(a_shape, b_shape)
        suffix = _suffix(a_shape, b_shape, prefix)
        if axis is not None:  # bias_add: its axis must index the same dimension in a
            axis = axis % len(b_shape)
            if unit or axis >= prefix:
                return None
        operands: list[SSAValue] = []
        for v, a in zip(op.operands, reshaped, strict=True):
            if a is not None:
                if shape_of(a) != a_shape or shape_of(v) != b_shape:
                    return None
                operands.append(a)
                continue
            c = shape_of(v)
            if axis is not None:  # the 1-D bias itself
                operands.append(v)
            elif unit:
                if len(c) > len(_core(a_shape)) or not _broadcasts_into(c, a_shape):
                    return None
                operands.append(v)
            else:
                aligned = (1,) * (len(b_shape) - len(c)) + c
                middle = aligned[prefix : len(b_shape) - suffix]
                if len(c) > len(b_shape) or any(d != 1 for d in middle):
                    return None
                if math.prod(c) >= math.prod(b_shape):
                    return None  # a full-size operand would be reshaped up: no gain, and the
                    # next match would move that reshape back down
                if len(c) <= suffix:
                    operands.append(v)  # a scalar, or one along the kept trailing dims: it
                    continue  # broadcasts into a as it did into the reshape
                kept = list(aligned[len(b_shape) - suffix :])
                target = [*aligned[:prefix], *([1] * (len(a_shape) - prefix - suffix)), *kept]
                r = ReshapeOp.make(v, shape=target)
                if v.name_hint:
                    r.results[0].name_hint = f"{v.name_hint}_{len(target)}d"
                new_ops.append(r)
                operands.append(r.results[0])
        return operands


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


def _broadcasts_into(c: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Does an operand of shape c broadcast against `shape` without growing it?"""
    try:
        return broadcast_shapes(c, shape) == shape
    except ShapeError:
        return False


@dataclass(frozen=True)
class SinkReshapesPass(ModulePass):
    """Reshapes sink below the elementwise ops that read them (see SinkReshape) and compose
    away."""

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
