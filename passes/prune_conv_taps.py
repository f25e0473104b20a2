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
negative (the conv would then need its input cropped).

When the live taps differ from one band of output rows to the next (dilation 12 on a 16x16
map: the rows 0-3 read taps 1-2, rows 4-11 tap 1 alone, rows 12-15 taps 0-1), the conv is split
into one conv per band of rows and columns, each with the taps live there, on the slice of the
input it reads and with no padding, and the bands are concatenated back. Only when at most
MAX_BAND_WORK of the window's multiply-adds survive: DeepLab's rate-12 ASPP branch keeps a
quarter of them."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.base import is_static, shape_of
from nnvm.dialects.nnvm.concat_split import ConcatOp
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


def _plain_static(op: Conv2DOp) -> bool:
    """An NCHW/OIHW conv (in and out) on static shapes: the ones this pass rewrites."""
    if op.attr("data_layout") != "NCHW" or op.attr("kernel_layout") != "OIHW":
        return False
    if op.attr("out_layout") not in ("", "NCHW"):
        return False
    return all(is_static(v.type) for v in (*op.operands, op.results[0]))


@dataclass
class PruneDeadTaps(RewritePattern):
    pruned: list[int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> None:
        if not _plain_static(op):
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


MAX_BANDS = 3
"""Bands per axis a conv is split into (the edges and the middle of a map an atrous window
overhangs on both sides)."""
MAX_BAND_WORK = 0.6
"""A conv is split into bands only when at most this share of its multiply-adds read the input:
each band is a kernel of its own, with slices of its input and a concat after."""


def tap_bands(
    size: int, out: int, kernel: int, stride: int, pad_lo: int, dilation: int
) -> list[tuple[int, int, int, int]] | None:
    """The output positions of one axis in bands that read the same live taps: (first output,
    end output, first tap, end tap) each, in order; None when some position reads no input."""
    bands: list[tuple[int, int, int, int]] = []
    for y in range(out):
        live = [t for t in range(kernel) if 0 <= y * stride - pad_lo + t * dilation < size]
        if not live:
            return None
        first, end = live[0], live[-1] + 1
        if bands and bands[-1][2:] == (first, end):
            bands[-1] = (bands[-1][0], y + 1, first, end)
        else:
            bands.append((y, y + 1, first, end))
    return bands


def _joined(values: list[SSAValue], axis: int, new_ops: list[Operation]) -> SSAValue:
    """`values` concatenated along `axis` (the concat appended to `new_ops`), or the one value."""
    if len(values) == 1:
        return values[0]
    concat = ConcatOp.make(*values, axis=axis)
    new_ops.append(concat)
    return concat.results[0]


@dataclass
class SplitIntoTapBands(RewritePattern):
    split: list[float]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> None:
        if not _plain_static(op):
            return
        x, w = op.operands
        _, _, h, wd = shape_of(x)
        _, _, kh, kw = shape_of(w)
        _, _, oh, ow = shape_of(op.results[0])
        if not oh or not ow:
            return
        (sh, sw), (dh, dw) = op.attr("strides"), op.attr("dilation")
        top, left, _, _ = op.attr("padding")
        rows = tap_bands(h, oh, kh, sh, top, dh)
        cols = tap_bands(wd, ow, kw, sw, left, dw)
        if rows is None or cols is None or len(rows) > MAX_BANDS or len(cols) > MAX_BANDS:
            return
        if len(rows) == 1 and len(cols) == 1:
            return  # one band: prune-dead-taps' case, or nothing to gain
        if (len(rows) > 1 and dh == 1) or (len(cols) > 1 and dw == 1):
            return  # an undilated window overhangs a border row or two: not worth the kernels
        work = sum((y1 - y0) * (t1 - t0) for y0, y1, t0, t1 in rows) / (oh * kh)
        work *= sum((x1 - x0) * (t1 - t0) for x0, x1, t0, t1 in cols) / (ow * kw)
        if work > MAX_BAND_WORK:
            return
        new_ops: list[Operation] = []
        band_rows: list[SSAValue] = []
        for y0, y1, r0, r1 in rows:
            pieces: list[SSAValue] = []
            for x0, x1, c0, c1 in cols:
                # the input rows (and columns) the band reads: from its first output's first
                # live tap to its last output's last live tap, all inside the input
                i0 = y0 * sh - top + r0 * dh
                i1 = (y1 - 1) * sh - top + (r1 - 1) * dh + 1
                j0 = x0 * sw - left + c0 * dw
                j1 = (x1 - 1) * sw - left + (c1 - 1) * dw + 1
                band_input = x
                if (i0, j0, i1, j1) != (0, 0, h, wd):
                    xs = SliceOp.make(x, starts=[i0, j0], ends=[i1, j1], axes=[2, 3], steps=[1, 1])
                    new_ops.append(xs)
                    band_input = xs.results[0]
                ws = SliceOp.make(w, starts=[r0, c0], ends=[r1, c1], axes=[2, 3], steps=[1, 1])
                if w.name_hint:
                    ws.results[0].name_hint = f"{w.name_hint}_taps{r0}to{r1}x{c0}to{c1}"
                conv = rebuild(
                    op,
                    [band_input, ws.results[0]],
                    padding=[0, 0, 0, 0],
                    dilation=[dh if r1 - r0 > 1 else 1, dw if c1 - c0 > 1 else 1],
                )
                conv.results[0].name_hint = None
                new_ops += [ws, conv]
                pieces.append(conv.results[0])
            band_rows.append(_joined(pieces, 3, new_ops))
        _joined(band_rows, 2, new_ops)
        new_ops[-1].results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, new_ops)
        self.split.append(work)


@dataclass(frozen=True)
class PruneConvTapsPass(ModulePass):
    """Slice away convolution taps that read only padding (atrous convs on small maps)."""

    name = "prune-conv-taps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pruned: list[int] = []
        PatternRewriteWalker(PruneDeadTaps(pruned), apply_recursively=False).rewrite_module(op)
        split: list[float] = []
        PatternRewriteWalker(SplitIntoTapBands(split), apply_recursively=False).rewrite_module(op)
        record_statistic(op, self.name, "convs", len(pruned), "convs with dead taps pruned")
        record_statistic(op, self.name, "taps", sum(pruned), "window taps removed")
        if split:
            record_statistic(
                op, self.name, "banded", len(split), "convs split into bands of live taps"
            )
