"""fold-scale-axis: fold a per-channel scale into the weight of the conv2d or dense next to it.

Convolution and dense are linear in their weight, so a scale that varies only along the output
channel axis can be applied to the weight instead of the (much larger) output:

* backward: `mul(conv2d(x, w), s)` -> `conv2d(x, w * reshape(s, [O, 1, 1, 1]))`, also through a
  bias: `mul(add(conv2d(x, w), b), s)` -> `add(conv2d(x, w * s'), b * s)` (and `bias_add`);
  the same for `dense` with the scale along its last axis (`w * reshape(s, [N, 1])`).
* forward: a scale along the *input* channels of a conv2d or dense: `conv2d(mul(x, s), w)` ->
  `conv2d(x, w * s[i])`. conv2d pads with zeros and a scaled zero is still zero, so this holds
  for any padding; it holds for every `groups` too (each output channel's group picks its slice
  of the scale: reshape to [G, 1, I], broadcast_to [G, O/G, I], reshape to [O, I, 1, 1]).

Requirements (else the ops are left alone): `s` is constant-like (only params and constants
upstream), broadcasts along the channel axis alone and does not grow the result; the values
between the linear op and the scale have no other uses; conv2d is NCHW/OIHW. The weight
arithmetic is emitted as graph ops: fold-constants precomputes it. Scales are only folded when
they multiply (a division by a constant, or a scale behind a relu, is not handled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.base import NNVMOp, is_static, normalize_axis, shape_of
from nnvm.dialects.nnvm.binary import AddOp, MulOp
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.nn import BiasAddOp, DenseOp
from nnvm.dialects.nnvm.repeat import BroadcastToOp
from nnvm.dialects.nnvm.reshape import ReshapeOp
from nnvm.passes.graph_utils import is_constant_like, rebuild, single_use
from nnvm.support.pass_statistics import record_statistic


def channel_extent(scale: Sequence[int], out: Sequence[int], axis: int) -> int | None:
    """The extent of `scale` along `axis` of a tensor shaped `out` (1 or out[axis]) when it
    broadcasts to exactly `out` and varies along no other axis; None otherwise."""
    if len(scale) > len(out):
        return None
    offset = len(out) - len(scale)
    extent = 1
    for k, d in enumerate(scale):
        if offset + k == axis:
            if d not in (1, out[axis]):
                return None
            extent = d
        elif d != 1:
            return None
    return extent


def _linear_channel_axes(op: Operation) -> tuple[int, int] | None:
    """For a foldable linear op: (output channel axis, input channel axis of its data)."""
    if isinstance(op, Conv2DOp):
        if op.attr("data_layout") != "NCHW" or op.attr("kernel_layout") != "OIHW":
            return None
        return 1, 1
    if isinstance(op, DenseOp):
        rank = len(shape_of(op.results[0]))
        return rank - 1, len(shape_of(op.operands[0])) - 1
    return None


def _static(*values: SSAValue) -> bool:
    return all(is_static(v.type) for v in values)


class _Emitter:
    """Collects the new ops of one rewrite in order and names their results."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def __call__(self, op: Operation, hint: str | None = None) -> SSAValue:
        self.ops.append(op)
        if hint:
            op.results[0].name_hint = hint
        return op.results[0]


def _hint(value: SSAValue, suffix: str) -> str | None:
    return f"{value.name_hint}_{suffix}" if value.name_hint else None


@dataclass
class _Stats:
    backward: int = 0
    forward: int = 0


@dataclass
class FoldScaleBackward(RewritePattern):
    """mul(linear(x, w) [+ b], s) -> linear(x, w * s') [+ b * s] for a per-output-channel s."""

    stats: _Stats
    cache: dict[SSAValue, bool] = field(default_factory=dict)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        if not _static(*op.operands, op.result):
            return
        for produced, scale in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if self._try(op, produced, scale, rewriter):
                return

    def _try(
        self, mul: MulOp, produced: SSAValue, scale: SSAValue, rewriter: PatternRewriter
    ) -> bool:
        if not isinstance(produced, OpResult) or not single_use(produced):
            return False
        bias_op: NNVMOp | None = None
        linear = produced.op
        if isinstance(linear, AddOp | BiasAddOp):
            bias_op = linear
            inner = linear.operands[:1] if isinstance(linear, BiasAddOp) else linear.operands
            found = [
                v
                for v in inner
                if isinstance(v, OpResult)
                and _linear_channel_axes(v.op) is not None
                and single_use(v)
            ]
            if not found:
                return False
            linear = found[0].op
        axes = _linear_channel_axes(linear)
        if axes is None or not _static(*linear.operands):
            return False
        out_axis = axes[0]
        out_shape = shape_of(linear.results[0])
        if shape_of(mul.result) != out_shape or not is_constant_like(scale, self.cache):
            return False
        extent = channel_extent(shape_of(scale), out_shape, out_axis)
        if extent is None:
            return False
        bias: SSAValue | None = None
        if bias_op is not None:
            bias = self._bias_operand(bias_op, linear.results[0], out_shape, out_axis)
            if bias is None:
                return False

        emit = _Emitter()
        data, weight = linear.operands
        w_rank = len(shape_of(weight))
        w_scale = emit(
            ReshapeOp.make(scale, shape=[extent] + [1] * (w_rank - 1)), _hint(scale, "w")
        )
        new_w = emit(MulOp.make(weight, w_scale), _hint(weight, "scaled"))
        new_linear = emit(
            rebuild(linear, [data, new_w]),  # type: ignore[arg-type]
            linear.results[0].name_hint if bias_op is not None else None,
        )
        if bias_op is not None and bias is not None:
            if isinstance(bias_op, BiasAddOp):
                vec = emit(ReshapeOp.make(scale, shape=[extent]), _hint(scale, "vec"))
                new_bias = emit(MulOp.make(bias, vec), _hint(bias, "scaled"))
                emit(rebuild(bias_op, [new_linear, new_bias]))
            else:
                new_bias = emit(MulOp.make(bias, scale), _hint(bias, "scaled"))
                emit(AddOp.make(new_linear, new_bias))
        rewriter.replace(mul, emit.ops)
        if bias_op is not None:
            rewriter.erase(bias_op)
        rewriter.erase(linear)
        self.stats.backward += 1
        return True

    @staticmethod
    def _bias_operand(
        bias_op: NNVMOp, linear_out: SSAValue, out_shape: tuple[int, ...], axis: int
    ) -> SSAValue | None:
        """The bias of `linear + bias` when it is a per-output-channel vector, else None."""
        if shape_of(bias_op.results[0]) != out_shape:
            return None
        if isinstance(bias_op, BiasAddOp):
            if normalize_axis(bias_op.attr("axis"), len(out_shape)) != axis:
                return None
            return bias_op.operands[1]
        a, b = bias_op.operands
        bias = b if a is linear_out else a
        if channel_extent(shape_of(bias), out_shape, axis) is None:
            return None
        return bias


@dataclass
class FoldScaleForward(RewritePattern):
    """linear(mul(x, s), w) -> linear(x, w * s') for a per-input-channel s."""

    stats: _Stats
    cache: dict[SSAValue, bool] = field(default_factory=dict)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        axes = _linear_channel_axes(op)
        if axes is None or not _static(*op.operands):
            return
        scaled, weight = op.operands
        mul = scaled.owner
        if not isinstance(mul, MulOp) or not single_use(scaled):
            return
        in_axis = axes[1]
        in_shape = shape_of(scaled)
        for data, scale in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            if not _static(data, scale) or shape_of(data) != in_shape:
                continue
            extent = channel_extent(shape_of(scale), in_shape, in_axis)
            if extent is None or not is_constant_like(scale, self.cache):
                continue
            emit = _Emitter()
            w_scale = self._weight_scale(op, scale, extent, shape_of(weight), emit)
            new_w = emit(MulOp.make(weight, w_scale), _hint(weight, "scaled"))
            emit(rebuild(op, [data, new_w]))  # type: ignore[arg-type]
            rewriter.replace(op, emit.ops)
            rewriter.erase(mul)
            self.stats.forward += 1
            return

    @staticmethod
    def _weight_scale(
        op: Operation, scale: SSAValue, extent: int, w_shape: tuple[int, ...], emit: _Emitter
    ) -> SSAValue:
        """The scale reshaped to multiply the weight along its input-channel axis."""
        if isinstance(op, DenseOp):  # w [N, K]
            return emit(ReshapeOp.make(scale, shape=[1, extent]), _hint(scale, "w"))
        o, i = w_shape[0], w_shape[1]
        groups = op.attr("groups")
        if extent == 1 or groups == 1:
            return emit(ReshapeOp.make(scale, shape=[1, extent, 1, 1]), _hint(scale, "w"))
        # Output channel o of group g reads input channels g*i .. g*i + i - 1.
        grouped = emit(ReshapeOp.make(scale, shape=[groups, 1, i]), _hint(scale, "groups"))
        spread = emit(
            BroadcastToOp.make(grouped, shape=[groups, o // groups, i]), _hint(scale, "spread")
        )
        return emit(ReshapeOp.make(spread, shape=[o, i, 1, 1]), _hint(scale, "w"))


@dataclass(frozen=True)
class FoldScaleAxisPass(ModulePass):
    """Fold per-channel scales into conv2d/dense weights (and biases), both directions."""

    name = "fold-scale-axis"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = _Stats()
        cache: dict[SSAValue, bool] = {}
        applier = GreedyRewritePatternApplier(
            [FoldScaleBackward(stats, cache), FoldScaleForward(stats, cache)], dce_enabled=False
        )
        PatternRewriteWalker(applier).rewrite_module(op)
        record_statistic(op, self.name, "backward", stats.backward, "output-channel scales folded")
        record_statistic(op, self.name, "forward", stats.forward, "input-channel scales folded")
