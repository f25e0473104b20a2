"""`fold-reciprocal-multiply`: `a * (1 / d)` -> `a / d` on floats (scalars and vectors).

A fused `x * sigmoid(x)` (SiLU, swish, SwiGLU's gate) lowers to `x * (1 / (1 + exp(-x)))`: one
division and one multiply per element. `x / (1 + exp(-x))` is the division alone, and is the
more accurate of the two (one rounding, not two). The rewrite applies only where it cannot add
divisions: the reciprocal has no other use and sits in the multiply's block, so it ran exactly
as often as the division that replaces it (a reciprocal hoisted out of a loop, as a softmax's
`1 / sum` is, stays a multiply inside the loop). The fast-math flags of the multiply carry
over.

With AVX-512 a 16-lane SiLU epilogue was 21 vector micro-ops and a division; this, the
sigmoid's exp(-x) with its negation folded (convert-math-to-llvm) and exp's rounding by a
multiply-add leave 17 and the division: EfficientNet-B0's 16 -> 96 1x1 conv + SiLU at 112x112
0.58 -> 0.49-0.53 ms alone, YOLO's 3 -> 16 stem + SiLU 0.34 -> 0.30 ms; EfficientNet-B0 end
to end 0.82 -> 0.78 of onnxruntime's time on one thread.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def float_constants(value: SSAValue) -> list[float] | None:
    """The values of a float constant (a scalar, the elements of a dense one), looking through
    vector.broadcasts of it; None when `value` is not one."""
    op = value.owner
    if isinstance(op, vector.BroadcastOp):
        return float_constants(op.source)
    if not isinstance(op, arith.ConstantOp):
        return None
    attr = op.value
    if isinstance(attr, FloatAttr):
        return [attr.value.data]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return list(attr.get_values()) or None
    return None


def is_one(value: SSAValue) -> bool:
    """Is `value` the float constant 1, a splat of it, or a vector.broadcast of it?"""
    values = float_constants(value)
    return values is not None and all(v == 1.0 for v in values)


class FoldReciprocalMultiply(RewritePattern):
    """mulf(a, divf(1, d)) or mulf(divf(1, d), a) -> divf(a, d)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.MulfOp, rewriter: PatternRewriter) -> None:
        for recip, other in ((op.rhs, op.lhs), (op.lhs, op.rhs)):
            div = recip.owner
            if not isinstance(div, arith.DivfOp) or not is_one(div.lhs):
                continue
            if not recip.has_one_use() or div.parent_block() is not op.parent_block():
                continue
            one = div.lhs
            rewriter.replace(op, arith.DivfOp(other, div.rhs, flags=op.fastmath))
            rewriter.erase(div)
            erase_if_unused(one, rewriter)
            return


def erase_if_unused(value: SSAValue, rewriter: PatternRewriter) -> None:
    """Erase a constant (and the broadcasts of it) that nothing reads any more."""
    op = value.owner
    if isinstance(op, arith.ConstantOp | vector.BroadcastOp) and not value.uses:
        sources = list(op.operands)
        rewriter.erase(op)
        for source in sources:
            erase_if_unused(source, rewriter)


class FoldReciprocalMultiplyPass(ModulePass):
    """`fold-reciprocal-multiply`: a float times a reciprocal used once, in its block, is a
    division (see the module docstring)."""

    name = "fold-reciprocal-multiply"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldReciprocalMultiply(), apply_recursively=False).rewrite_module(op)
