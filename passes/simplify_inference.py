"""simplify-inference: rewrite inference-only ops into plain arithmetic the later passes understand.

* `nnvm.batch_norm` becomes `x * scale + shift` with scale = gamma * rsqrt(var + eps) and
  shift = beta - mean * scale, both reshaped to broadcast along the op's axis. The weight
  arithmetic stays as ordinary graph ops on the params: fold-scale-axis can then push the scale
  into a preceding conv2d, and fold-constants precomputes what is left. The params store is not
  touched here.
* `nnvm.dropout` and `nnvm.identity` are removed (their uses read the input instead).
* `nnvm.pow` by a constant exponent of 1, 2, 3, 4 or 0.5 becomes the identity, products or a
  square root (GPT-2's tanh-GELU cubes its input: powf per element, scalar, was most of its
  matmul's epilogue).

Layer and instance normalization compute statistics at run time, so they are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
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

from nnvm.dialects.nnvm.base import is_static, normalize_axis, shape_of
from nnvm.dialects.nnvm.binary import AddOp, MulOp, PowOp, SubOp
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.elementwise import RsqrtOp, SqrtOp
from nnvm.dialects.nnvm.nn import BatchNormOp
from nnvm.dialects.nnvm.passthrough import DropoutOp, IdentityOp
from nnvm.dialects.nnvm.reshape import ExpandDimsOp
from nnvm.dialects.nnvm.sources import ConstantOp
from nnvm.support.pass_statistics import record_statistic


class _Counter:
    """How many rewrites each pattern made (reported as pass statistics)."""

    def __init__(self) -> None:
        self.batch_norms = 0
        self.pass_throughs = 0
        self.powers = 0


@dataclass
class SimplifyBatchNorm(RewritePattern):
    """batch_norm(x, g, b, m, v) -> x * scale + shift, per channel along `axis`."""

    counter: _Counter

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BatchNormOp, rewriter: PatternRewriter) -> None:
        x, gamma, beta, mean, var = op.operands
        if not all(is_static(v.type) for v in op.operands):
            return  # run infer-shapes first; the rewrite needs the rank and channel count
        rank = len(shape_of(x))
        axis = normalize_axis(op.attr("axis"), rank)
        elt = x.type.element_type  # type: ignore[attr-defined]
        base = op.results[0].name_hint or "bn"
        new_ops: list[Operation] = []

        def emit(new: Operation, hint: str) -> SSAValue:
            new_ops.append(new)
            new.results[0].name_hint = f"{base}_{hint}"
            return new.results[0]

        eps = emit(ConstantOp(np.array(op.attr("epsilon"), dtype=numpy_dtype_of(elt))), "eps")
        inv_std = emit(RsqrtOp.make(emit(AddOp.make(var, eps), "var_eps")), "inv_std")
        scale = emit(MulOp.make(gamma, inv_std), "scale")
        shift = emit(SubOp.make(beta, emit(MulOp.make(mean, scale), "mean_scale")), "shift")
        trailing = rank - 1 - axis
        if trailing:  # [C] -> [C, 1, ..., 1] so the vector broadcasts along `axis`
            axes = list(range(1, trailing + 1))
            scale = emit(ExpandDimsOp.make(scale, axes=axes), "scale_b")
            shift = emit(ExpandDimsOp.make(shift, axes=axes), "shift_b")
        scaled = emit(MulOp.make(x, scale), "scaled")
        new_ops.append(AddOp.make(scaled, shift))
        rewriter.replace(op, new_ops)
        self.counter.batch_norms += 1


@dataclass
class RemovePassThrough(RewritePattern):
    """dropout(x) / identity(x) -> x: both are the identity at inference time."""

    counter: _Counter

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, DropoutOp | IdentityOp):
            return
        rewriter.replace(op, [], [op.operands[0]])
        self.counter.pass_throughs += 1


POWERS = (0.5, 1.0, 2.0, 3.0, 4.0)


@dataclass
class PowByConstant(RewritePattern):
    """pow(x, c) with c a constant of one value in POWERS that does not grow x's shape ->
    x, x*x, x*x*x, (x*x)*(x*x) or sqrt(x)."""

    counter: _Counter

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PowOp, rewriter: PatternRewriter) -> None:
        x, c = op.operands
        owner = c.owner
        if not isinstance(owner, ConstantOp) or op.results[0].type != x.type:
            return
        if numpy_dtype_of(x.type.element_type).kind != "f":  # type: ignore[attr-defined]
            return
        values = np.unique(owner.numpy())
        if values.size != 1 or float(values[0]) not in POWERS:
            return
        power = float(values[0])
        if power == 1.0:
            rewriter.replace(op, [], [x])
        elif power == 0.5:
            rewriter.replace(op, [SqrtOp.make(x)])
        else:
            square = MulOp.make(x, x)
            sq = square.results[0]
            if power == 2.0:
                rewriter.replace(op, [square])
            else:  # (an op built and dropped would leave its uses on sq behind)
                rewriter.replace(op, [square, MulOp.make(sq, x if power == 3.0 else sq)])
        self.counter.powers += 1


@dataclass(frozen=True)
class SimplifyInferencePass(ModulePass):
    """Lower batch_norm to scale-and-shift arithmetic, drop inference no-ops, and turn pow by
    small constant exponents into products."""

    name = "simplify-inference"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        counter = _Counter()
        applier = GreedyRewritePatternApplier(
            [SimplifyBatchNorm(counter), RemovePassThrough(counter), PowByConstant(counter)],
            dce_enabled=False,
        )
        PatternRewriteWalker(applier).rewrite_module(op)
        record_statistic(
            op, self.name, "batch-norms", counter.batch_norms, "batch_norm ops simplified"
        )
        record_statistic(
            op, self.name, "removed-ops", counter.pass_throughs, "dropout/identity ops removed"
        )
        record_statistic(
            op, self.name, "powers", counter.powers, "pow by 1, 2, 3, 4 or 0.5 simplified"
        )
