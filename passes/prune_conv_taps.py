"""prune-conv-taps: drop the rows and columns of a convolution's window that only ever read
padding.

A tap (kh, kw) of a conv reads input row y * stride - pad_top + kh * dilation. When that row is
outside the input for every output row y, the tap multiplies zeros: it can go, with the weight
sliced and the padding shrunk so the output keeps its size. Atrous convolutions hit this
whenever the dilation reaches the feature map: DeepLab's ASPP branches (dilation 12, 24, 36)
on a 16x16 map are 3x3 convs of which only the centre tap (or the centre row) ever touches the
input, so after pruning they are 1x1 (or 3x1) convs with no padding at all.

The live taps along an axis are always one contiguous run (each tap's rows shift by the
dilation), so pruning is a slice of the weight along H and W plus new padding; fold-constants
precomputes the slice of a constant weight. Left alone: blocked layouts (run this before
alter-layout), a window with no live tap at all, and a run whose new padding would have to be
negative (the conv would then need its input cropped)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.base import is_static, shape_of
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.indexing import SliceOp
from nnvm.passes.graph_utils import rebuild
from nnvm.support.pass_statistics import record_statistic


def live_taps(
    size: int, out: int, kernel: int, stride: int, pad_lo: int, dilation: int
) -> tuple[int, int] | None:
    """[first, last] taps of one axis that read the input for some output position (None when
    none does)."""
    live = [
        t
        for t in range(kernel)
        if any(0 <= y * stride - pad_lo + t * dilation < size for y in range(out))
    ]
    return (live[0], live[-1]) if live else None


def pruned_axis(
    size: int, out: int, kernel: int, stride: int, pad_lo: int, dilation: int
) -> tuple[int, int, int, int] | None:
    """(first tap, new kernel extent, new pad_lo, new pad_hi) of one axis, or None when the
    axis cannot be pruned (nothing dead, nothing live, or a crop would be needed)."""
    taps = live_taps(size, out, kernel, stride, pad_lo, dilation)
    if taps is None or taps == (0, kernel - 1):
        return None
    first, last = taps
    extent = last - first + 1
    lo = pad_lo - first * dilation
    hi = (out - 1) * stride + dilation * (extent - 1) + 1 - size - lo  # keeps `out` outputs
    if lo < 0 or hi < 0:
        return None
    return first, extent, lo, hi


@dataclass
class PruneDeadTaps(RewritePattern):
    pruned: list[int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> None:
        if op.attr("data_layout") != "NCHW" or op.attr("kernel_layout") != "OIHW":
            return
        if op.attr("out_layout") not in ("", "NCHW"):
            return
        if not all(is_static(v.type) for v in (*op.operands, op.results[0])):
            return
        _, _, h, w = shape_of(op.operands[0])
        _, _, kh, kw = shape_of(op.operands[1])
        _, _, oh, ow = shape_of(op.results[0])
        (sh, sw), (dh, dw) = op.attr("strides"), op.attr("dilation")
        top, left, bottom, right = op.attr("padding")
        rows = pruned_axis(h, oh, kh, sh, top, dh)
        cols = pruned_axis(w, ow, kw, sw, left, dw)
        if rows is None and cols is None:
            return
        r0, rk, top, bottom = rows or (0, kh, top, bottom)
        c0, ck, left, right = cols or (0, kw, left, right)
        weight = SliceOp.make(
            op.operands[1], starts=[r0, c0], ends=[r0 + rk, c0 + ck], axes=[2, 3], steps=[1, 1]
        )
        hint = op.operands[1].name_hint
        weight.results[0].name_hint = f"{hint}_live" if hint else None
        conv = rebuild(
            op,
            [op.operands[0], weight.results[0]],
            padding=[top, left, bottom, right],
            dilation=[dh if rk > 1 else 1, dw if ck > 1 else 1],
        )
        rewriter.replace(op, [weight, conv])
        self.pruned.append((kh * kw) - rk * ck)


@dataclass(frozen=True)
class PruneConvTapsPass(ModulePass):
    """Slice away convolution taps that read only padding (atrous convs on small maps)."""

    name = "prune-conv-taps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pruned: list[int] = []
        PatternRewriteWalker(PruneDeadTaps(pruned), apply_recursively=False).rewrite_module(op)
        record_statistic(op, self.name, "convs", len(pruned), "convs with dead taps pruned")
        record_statistic(op, self.name, "taps", sum(pruned), "window taps removed")
