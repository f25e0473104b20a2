"""alter-layout{block=8}: move conv2d and its neighbours to the blocked layout NCHW<b>c.

A blocked layout keeps `b` channels innermost, so a convolution's inner loop is one vector of
`b` output channels (8 x f32 = one AVX2 register). The pass is a set of local rewrites run to a
fixed point:

* each eligible NCHW/OIHW conv2d (its block: `block`, or half of it, down to 8, when that is
  what divides its channels) becomes a blocked conv2d wrapped in layout_transforms: data
  NCHW -> NCHW<b>c before, NCHW<b>c -> NCHW after, and its weight OIHW -> OIHW<i>i<b>o with
  i = the largest divisor of the per-group input channels <= b (depthwise: OIHW1i<b>o);
  fold-constants later precomputes the weight transform into a new param;
* a `NCHW<b>c -> NCHW` transform sinks below the ops that can follow the layout: unary
  elementwise ops; binary broadcast ops whose other operand is in the same blocked layout, or
  is a size-1-everywhere value, or is a constant-like per-channel vector ([C,1,1], [1,C,1,1],
  which is reshaped and transformed to [1,C/b,1,1,b]); `bias_add {axis = 1}` (an add of the
  blocked bias); the 2-D pools (their `layout` property); concat along C when every input is
  in the same blocked layout;
* back-to-back transforms compose: A->B->A disappears, A->B->C becomes A->C (so convs in
  different blocks meet through one NCHW<b1>c -> NCHW<b2>c transform);
* an lstm or gru with constant weights reads them transposed (see LSTMWeightsKN, GRUWeightsKN).

So transforms remain only at the boundaries: in front of ops that need NCHW (reshape, flatten,
dense, softmax, returns, ...). A conv2d is left in NCHW when its input or output channels are
not divisible by `b`, except a stem conv over fewer than `b` input channels: it keeps reading
NCHW and writes NCHW<b>c (its `out_layout`), so what follows it runs blocked, and a 1x1 conv
(stride 1, no padding, one group): it becomes the matmul w[O, C] . x[N, C, H*W]. Grouped convs are
blocked like any other (the kernel's input block divides the per-group input channels, so
depthwise kernels are OIHW1i<b>o).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, ModuleOp, i8, i32, i64
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from nnvm.dialects.nnvm.base import NNVMOp, is_static, normalize_axis, shape_of
from nnvm.dialects.nnvm.binary import (
    AddOp,
    BinaryBroadcastOp,
    DivOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    SubOp,
)
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.nnvm.elementwise import (
    AbsOp,
    ClipOp,
    ErfOp,
    GeluOp,
    HardSigmoidOp,
    HardSwishOp,
    LeakyReluOp,
    NegOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
)
from nnvm.dialects.nnvm.indexing import SliceOp, slice_indices
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.nn import (
    DOT_BYTES,
    BiasAddOp,
    DenseOp,
    MatmulOp,
    should_pack,
)
from nnvm.dialects.nnvm.pooling import POOLING_OPS
from nnvm.dialects.nnvm.reduce import ReduceOp
from nnvm.dialects.nnvm.resize import ResizeOp
from nnvm.dialects.nnvm.rnn import GRUOp, LSTMOp
from nnvm.dialects.nnvm.traits import OpPatternKind, pattern_kind
from nnvm.dialects.nnvm.transform import (
    ConcatOp,
    LayoutTransformOp,
    ReshapeOp,
    SplitOp,
    TransposeOp,
)
from nnvm.passes.graph_utils import erase_if_dead, is_constant_like, rebuild
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.pass_statistics import record_statistic
from nnvm.support.target import parse_target

_BLOCKED_NCHW = re.compile(r"NCHW(\d+)c")


@dataclass
class _Stats:
    convs: int = 0
    followers: int = 0
    composed: int = 0
    dense_to_matmul: int = 0
    pointwise_matmuls: int = 0
    padded: int = 0
    dot_weights: int = 0


def largest_divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of n that is <= limit (1 at worst)."""
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def blocked_source(value: SSAValue) -> tuple[SSAValue, str] | None:
    """When `value` is `layout_transform(a, NCHW<b>c -> NCHW)`: (a, "NCHW<b>c")."""
    op = value.owner
    if not isinstance(op, LayoutTransformOp) or op.attr("dst_layout") != "NCHW":
        return None
    src = op.attr("src_layout")
    if not _BLOCKED_NCHW.fullmatch(src):
        return None
    return op.input, src


def is_padded(blocked: SSAValue, logical: SSAValue) -> bool:
    """Does the blocked tensor hold more channels than the NCHW value it stands for (a last,
    partial block, padded)?"""
    shape = shape_of(blocked)
    return shape[1] * shape[-1] != shape_of(logical)[1]


PAD_SAFE = (
    ReluOp,
    LeakyReluOp,
    ClipOp,
    SigmoidOp,
    HardSigmoidOp,
    HardSwishOp,
    TanhOp,
    ErfOp,
    GeluOp,
    NegOp,
    AbsOp,
    AddOp,
    SubOp,
    MulOp,
    MaximumOp,
    MinimumOp,
)
"""Ops that keep the padding of a padded blocked tensor finite (its values have no meaning,
but a conv multiplies them by its zero weights, and 0 x inf is NaN): a padded tensor follows
no other elementwise op (log, sqrt, reciprocal, pow, div by another tensor stay in NCHW)."""


def _to_layout(
    value: SSAValue, src: str, dst: str, logical: tuple[int, ...] | None = None
) -> LayoutTransformOp:
    """value from layout src to dst; `logical`: the canonical shape it holds, when a blocked
    side of the transform is padded (given only then, so exact transforms print as before)."""
    props: dict[str, object] = {"src_layout": src, "dst_layout": dst}
    if logical is not None:
        canonical = "".join(c for c in src if c.isupper())
        both = (Layout.parse(src, canonical), Layout.parse(dst, canonical))
        if any(layout.padded(logical) != tuple(logical) for layout in both):
            props["logical"] = list(logical)
    return LayoutTransformOp.make(value, **props)  # type: ignore[return-value]


def _replace_with_blocked(
    rewriter: PatternRewriter,
    op: Operation,
    prefix: list[Operation],
    blocked: Operation,
    layout: str,
    old_inputs: list[SSAValue],
) -> None:
    """Replace `op` by `blocked` (computing in `layout`) and a transform of each of its results
    back to NCHW, then drop the transforms it read from if nothing else reads them."""
    backs = [
        _to_layout(r, layout, "NCHW", shape_of(old))
        for r, old in zip(blocked.results, op.results, strict=True)
    ]
    rewriter.replace(op, [*prefix, blocked, *backs], [b.results[0] for b in backs])
    for value in old_inputs:
        if isinstance(value, OpResult) and isinstance(value.op, LayoutTransformOp):
            erase_if_dead(value.op, rewriter)


def channel_vector_to_layout(
    vector: SSAValue, channels: int, layout: str
) -> tuple[list[Operation], SSAValue]:
    """A per-channel vector ([C], [C, 1, 1], [1, C, 1, 1]) as [1, C/b, 1, 1, b], to broadcast
    against data in `layout`; the ops are small and constant-like for params."""
    ops: list[Operation] = []
    value = vector
    if shape_of(value) != (1, channels, 1, 1):
        reshape = ReshapeOp.make(value, shape=[1, channels, 1, 1])
        ops.append(reshape)
        value = reshape.results[0]
    blocked = _to_layout(value, "NCHW", layout)
    ops.append(blocked)
    if vector.name_hint:
        ops[-1].results[0].name_hint = f"{vector.name_hint}_{layout}"
        if len(ops) == 2:
            ops[0].results[0].name_hint = f"{vector.name_hint}_1c11"
    return ops, blocked.results[0]


# ----------------------------------------------------------------------------------------------
# conv2d: the op that wants the blocked layout
# ----------------------------------------------------------------------------------------------


def _plain_float_conv(op: Conv2DOp) -> bool:
    """An NCHW/OIHW, ungrouped conv over static float tensors with no out_layout."""
    if not op.is_plain_nchw():
        return False
    x, w = op.operands
    return is_static(x.type) and is_static(w.type) and is_float(x.type.element_type)  # type: ignore[attr-defined]


@dataclass
class BlockConv2D(RewritePattern):
    """conv2d NCHW/OIHW -> layout_transform + conv2d NCHW<b>c/OIHW<i>i<b>o + layout_transform."""

    block: int
    stats: _Stats
    dot_lanes: int = 0
    narrow_groups: bool = True
    """Groups narrower than a block run in full blocks spanning several groups (else in
    blocks of a group's width, or NCHW)."""

    def kernel_blocks(self, op: Conv2DOp) -> tuple[int, int, int] | None:
        """(input block, kernel input-channel block, output block), or None to leave op. A
        dense conv blocks its input and output channels each by the largest block dividing
        them (MobileNet's 144 -> 24 projection reads NCHW16c and writes NCHW8c, so no
        transform sits between it and the 16-blocked depthwise conv before it); a grouped
        conv uses one block for both, one that divides the channels of a group."""
        if op.attr("data_layout") != "NCHW" or op.attr("kernel_layout") != "OIHW":
            return None
        if op.attr("out_layout"):
            return None
        x, w = op.operands
        if not (is_static(x.type) and is_static(w.type) and is_float(x.type.element_type)):  # type: ignore[attr-defined]
            return None
        c, (o, i) = shape_of(x)[1], shape_of(w)[:2]
        if op.attr("groups") == 1:
            ib, ob = self.channel_block(c), self.channel_block(o)
            if ib is None or ob is None:
                return None
            return ib, ib, ob
        groups = op.attr("groups")
        if i == 1 and groups == c == o:  # depthwise: OIHW1i<b>o
            b = self.channel_block(c)
            return None if b is None else (b, 1, b)
        og = o // groups
        if self.narrow_groups and 1 < i == og < self.block and self.block % og == 0:
            # groups narrower than a block (RegNet's 8, ResNeXt's 4): a block spans block / og
            # groups, each output lane reading its own group's channels of the same input
            # block (a shuffle per pixel and channel), so vectors stay full width
            b = self.channel_block(c)
            return None if b != self.block else (b, i, b)
        # a block inside one group: the largest that divides the channels of a group, on
        # either side (RegNet's 8 per group take 8-wide blocks under AVX-512's 16; in NCHW
        # they ran at 4-10% of peak)
        b = conv_block(i, o // groups, self.block)
        if c % b or o % b:
            return None
        if i % b or (o // groups) % b:
            # a block would span groups (ResNeXt's 4 channels per group in 8-wide blocks):
            # the NCHW direct conv handles that; a blocked one would need index division
            return None
        return b, b, b  # each block inside one group: the blocked conv over the group's blocks

    def channel_block(self, channels: int) -> int | None:
        """The block of a dense or depthwise conv's channel axis: `block` when it divides
        them, or when there are at least `block` channels, padded to whole blocks (as
        onnxruntime's NCHWc convs: MnasNet's 24, 40, 72, 120 channels take 32, 48, 80, 128
        instead of half-width 8-blocks, 1.3-1.5x slower than its padded ones; ShuffleNet's 58
        and SqueezeNet's 1000 classes would otherwise run as matmuls). Fewer channels take
        the largest block (down to 8) dividing them, or none."""
        if channels >= self.block:
            return self.block
        b = conv_block(channels, channels, self.block)
        return None if channels % b else b

    def stem_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> bool:
        """A conv over fewer input channels than a block (an image stem) that cannot block its
        input: it reads NCHW and writes NCHW<b>c with an OIHW<c>i<b>o kernel, the output
        block as channel_block says (ShuffleNet's 24-channel stem: 16, padded; left in NCHW
        it ran at 2% of the machine's peak, 41% of the model's time)."""
        if not _plain_float_conv(op):
            return False
        x, w = op.operands
        c, o = shape_of(x)[1], shape_of(w)[0]
        b = self.channel_block(o)
        if b is None or c >= b:
            return False
        layout, kernel_layout = f"NCHW{b}c", f"OIHW{c}i{b}o"
        w_b = _to_layout(w, "OIHW", kernel_layout)
        if w.name_hint:
            w_b.results[0].name_hint = f"{w.name_hint}_{kernel_layout}"
        conv = rebuild(op, [x, w_b.results[0]], kernel_layout=kernel_layout, out_layout=layout)
        _replace_with_blocked(rewriter, op, [w_b], conv, layout, [])
        self.stats.convs += 1
        return True

    def pointwise_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> bool:
        """A 1x1, stride-1, unpadded, ungrouped conv whose channels no block divides
        (ShuffleNet's 58, 116, 232): the matmul w[O, C] . x[N, C, H*W], whose register tiles
        take any row and column count, instead of the NCHW direct conv (vectors along W only).
        The reshapes around it are copy kernels (plan-memory has no views yet)."""
        if not _plain_float_conv(op):
            return False
        x, w = op.operands
        if not is_constant_like(w):
            return False
        o, c, kh, kw = shape_of(w)
        if (kh, kw) != (1, 1) or any(v != 1 for v in op.attr("strides")):
            return False
        if any(op.attr("padding")):
            return False
        n, _, h, wd = shape_of(x)
        rows = ReshapeOp.make(x, shape=[n, c, h * wd])
        weight = ReshapeOp.make(w, shape=[o, c])
        if w.name_hint:
            weight.results[0].name_hint = f"{w.name_hint}_OC"
        mm = MatmulOp.make(weight.results[0], rows.results[0])
        out = ReshapeOp.make(mm.results[0], shape=[n, o, h, wd])
        hint = op.results[0].name_hint or "conv"
        rows.results[0].name_hint = f"{hint}_rows"
        mm.results[0].name_hint = f"{hint}_mm"
        out.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, [rows, weight, mm, out])
        self.stats.pointwise_matmuls += 1
        return True

    def dot_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> bool:
        """An int8 conv (bytes x int8 -> int32, no groups) whose channels the target's dot
        lanes L divide: NCHW<L>c data and the weight packed [O/L, I/L, KH, KW, L/4, L, 4]
        (reshape + transpose of OIHW, precomputed by fold-constants), each 4 input channels
        of L output channels side by side for one byte dot product."""
        lanes = self.dot_lanes
        if lanes <= 0 or op.results[0].type.element_type != i32:  # type: ignore[attr-defined]
            return False
        if not op.is_plain_nchw():
            return False
        x, w = op.operands
        if not (is_static(x.type) and is_static(w.type) and is_constant_like(w)):
            return False
        o, c, kh, kw = shape_of(w)
        if c % lanes or o % lanes:
            return False
        layout, kernel_layout = f"NCHW{lanes}c", f"OIHW{lanes}i{lanes}o"
        x_b = _to_layout(x, "NCHW", layout)
        q = DOT_BYTES
        blocks = ReshapeOp.make(w, shape=[o // lanes, lanes, c // lanes, lanes // q, q, kh, kw])
        packed = TransposeOp.make(blocks.results[0], perm=[0, 2, 5, 6, 3, 1, 4])
        name = op.results[0].name_hint or "conv"
        x_b.results[0].name_hint = f"{name}_in_{layout}"
        blocks.results[0].name_hint = f"{name}_w_blocks"
        packed.results[0].name_hint = f"{name}_w_packed"
        conv = rebuild(
            op,
            [x_b.results[0], packed.results[0]],
            data_layout=layout,
            kernel_layout=kernel_layout,
            weight_lanes=lanes,
        )
        _replace_with_blocked(rewriter, op, [x_b, blocks, packed], conv, layout, [])
        self.stats.convs += 1
        return True

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DOp, rewriter: PatternRewriter) -> None:
        if self.dot_rewrite(op, rewriter):
            return
        blocks = self.kernel_blocks(op)
        if blocks is None:
            if not self.stem_rewrite(op, rewriter):
                self.pointwise_rewrite(op, rewriter)
            return
        db, ib, ob = blocks
        data_layout, kernel_layout = f"NCHW{db}c", f"OIHW{ib}i{ob}o"
        out_layout = f"NCHW{ob}c"
        x, w = op.operands
        x_b = _to_layout(x, "NCHW", data_layout)
        if x.name_hint:
            x_b.results[0].name_hint = f"{x.name_hint}_{data_layout}"
        w_b = _to_layout(w, "OIHW", kernel_layout)
        if w.name_hint:
            w_b.results[0].name_hint = f"{w.name_hint}_{kernel_layout}"
        layouts: dict[str, object] = {"data_layout": data_layout, "kernel_layout": kernel_layout}
        if out_layout != data_layout:
            layouts["out_layout"] = out_layout
        groups = op.attr("groups")
        if groups > 1 and ib < db:  # padding channels are groups of their own
            layouts["groups"] = shape_of(x_b.results[0])[1] * db // ib
        conv = rebuild(op, [x_b.results[0], w_b.results[0]], **layouts)
        _replace_with_blocked(rewriter, op, [x_b, w_b], conv, out_layout, [])
        self.stats.convs += 1
        if math.prod(shape_of(w_b.results[0])) != math.prod(shape_of(w)):
            self.stats.padded += 1  # the padded weight is larger


@dataclass
class DenseToMatmul(RewritePattern):
    """dense(x, w) with a constant weight and several rows -> matmul(x, transpose(w)): the
    transposed weight [K, N] is contiguous along the output columns, so the matmul template's
    register tiles (rows x vectors of columns) apply; fold-constants precomputes the transpose.
    One or two rows (a GEMV) become a matmul only when the packed weight's panels take the
    GEMV's tiles whole (nn.GEMV_PANELS); otherwise they stay a dense, whose dot products read
    both operands contiguously (a classifier's 1000 columns)."""

    stats: _Stats
    panel: int
    min_rows: int = 4

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DenseOp, rewriter: PatternRewriter) -> None:
        x, w = op.operands
        if not (is_static(x.type) and is_static(w.type) and is_constant_like(w)):
            return
        if not is_float(x.type.element_type):  # type: ignore[attr-defined]
            return  # integer dense: PackDotWeight's
        xs = shape_of(x)
        rows = 1
        for d in xs[:-1]:
            rows *= d
        if len(xs) < 2:
            return
        if rows < self.min_rows and not should_pack(
            rows, xs[-1], shape_of(w)[0], self.panel, constant=True
        ):
            return
        unflatten = _unflattened(op)
        if unflatten is not None and not _rows_tile_per_batch(shape_of(unflatten[0].input)):
            # [b.., m, k] with few rows per batch (torch's [seq, batch=1, hidden], a
            # channels-last linear's [1, h, w, c]): batched, each batch is a thin GEMM (or a
            # GEMV) whose tiles divide m badly; the flattened rows tile as one matmul instead
            # (the flattening reshape is a view: plan-memory gives it no kernel)
            unflatten = None
        lhs = unflatten[0].input if unflatten is not None else x
        weight_ops, weight, panel = _matmul_weight(w, shape_of(lhs)[-2], self.panel)
        mm = MatmulOp.make(lhs, weight, rhs_panel=panel)
        if unflatten is not None:
            # reshape([b.., m, k] -> [b..m, k]) . dense . reshape(-> [b.., m, n]): one batched
            # matmul of the unflattened rows, so the ops after it (bias, GELU, residual)
            # are elementwise on its result and fuse into its epilogue
            flatten, after = unflatten
            rewriter.insert([*weight_ops, mm], InsertPoint.before(op))
            rewriter.replace(after, [], [mm.results[0]])
            rewriter.erase(op)
            erase_if_dead(flatten, rewriter)
        else:
            rewriter.replace(op, [*weight_ops, mm])
        self.stats.dense_to_matmul += 1


@dataclass
class PackDotWeight(RewritePattern):
    """dense(x, w) over bytes with a constant int8 weight [N, K] -> dense(x, pack(w))
    {weight_lanes = L}: w as [N/L, K/4, L, 4] (reshape + transpose, precomputed by
    fold-constants), the operand order of byte dot products (x86 vpdpbusd) for L int32 lanes.
    N a multiple of L and K of 4 only: the packed weight has no padding."""

    stats: _Stats
    lanes: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DenseOp, rewriter: PatternRewriter) -> None:
        x, w = op.operands
        if self.lanes <= 0 or op.attr("weight_lanes") or op.results[0].type.element_type != i32:  # type: ignore[attr-defined]
            return
        if w.type.element_type != i8 or not (is_static(w.type) and is_constant_like(w)):  # type: ignore[attr-defined]
            return
        n, k = shape_of(w)
        if n % self.lanes or k % DOT_BYTES:
            return
        blocks = ReshapeOp.make(w, shape=[n // self.lanes, self.lanes, k // DOT_BYTES, DOT_BYTES])
        packed = TransposeOp.make(blocks.results[0], perm=[0, 2, 1, 3])
        dense = DenseOp.make(x, packed.results[0], weight_lanes=self.lanes)
        name = op.results[0].name_hint or "dense"
        blocks.results[0].name_hint = f"{name}_w_blocks"
        packed.results[0].name_hint = f"{name}_w_packed"
        dense.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, [blocks, packed, dense])
        self.stats.dot_weights += 1


BATCHED_ROWS = 64
"""Rows per batch from which a batched matmul by a shared weight tiles about as well as the
flattened one (its tail tiles are a small part of each batch)."""


def _rows_tile_per_batch(shape: tuple[int, ...]) -> bool:
    """Does [b.., m, k] run as well batched as flattened into [b..m, k] rows?"""
    batches = math.prod(shape[:-2])
    return batches == 1 or shape[-2] >= BATCHED_ROWS


def _matmul_weight(w: SSAValue, rows: int, panel: int) -> tuple[list[Operation], SSAValue, int]:
    """The matmul operand for a constant dense weight [N, K]: its transpose [K, N], or, when
    the product is big enough to pack, the [N/P, K, P] column panels the matmul's register
    tiles stream (packed once here, by fold-constants, instead of on every call)."""
    n, k = shape_of(w)
    if should_pack(rows, k, n, panel, constant=True):
        panels = ReshapeOp.make(w, shape=[n // panel, panel, k])
        packed = TransposeOp.make(panels.results[0], perm=[0, 2, 1])
        if w.name_hint:
            packed.results[0].name_hint = f"{w.name_hint}_panels"
        return [panels, packed], packed.results[0], panel
    wt = TransposeOp.make(w, perm=[1, 0])
    if w.name_hint:
        wt.results[0].name_hint = f"{w.name_hint}_KN"
    return [wt], wt.results[0], 0


def _unflattened(op: DenseOp) -> tuple[ReshapeOp, ReshapeOp] | None:
    """(flatten, unflatten) when dense(x) reads rows flattened out of leading dims by a reshape
    and its one reader reshapes the result back to those leading dims."""
    flatten = op.operands[0].owner
    uses = list(op.results[0].uses)
    if not isinstance(flatten, ReshapeOp) or len(uses) != 1:
        return None
    after = uses[0].operation
    if not isinstance(after, ReshapeOp) or not is_static(flatten.input.type):
        return None
    src, out = shape_of(flatten.input), shape_of(after.results[0])
    n = shape_of(op.results[0])[-1]
    if len(src) < 3 or src[-1] != shape_of(op.operands[0])[-1] or out != (*src[:-1], n):
        return None
    return flatten, after


def _transposed_rnn_weights(op: LSTMOp | GRUOp) -> tuple[TransposeOp, TransposeOp] | None:
    """W and R of a recurrent op, [dirs, gates, K], transposed to [dirs, K, gates]; None
    when they are not both constant with static shapes (or already moved)."""
    w, r = op.w, op.r
    if op.attr("weights_kn") or not all(is_static(v.type) and is_constant_like(v) for v in (w, r)):
        return None
    return TransposeOp.make(w, perm=[0, 2, 1]), TransposeOp.make(r, perm=[0, 2, 1])


@dataclass
class LSTMWeightsKN(RewritePattern):
    """lstm with constant W, R [dirs, 4H, K] -> the same lstm over transposed [dirs, K, 4H]
    weights (`weights_kn`): its projections then run as matmul tiles, vectors along the gate
    rows, instead of dot products; fold-constants precomputes the transposes. Where a step's
    product (batch rows x H x 4H) is one the matmul packs a constant weight for, R is packed
    further into column panels, [dirs, 4H/P, H, P] (`recurrent_panel`): each step streams it
    contiguously instead of with a 4H-float stride, one 4 KiB page a row for H = 256 (the
    hidden-256 LSTM's step 9.2 -> 8.5 us; LSTM-2L 0.95 of its time)."""

    stats: _Stats
    panel: int = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LSTMOp, rewriter: PatternRewriter) -> None:
        transposed = _transposed_rnn_weights(op)
        if transposed is None:
            return
        wt, rt = transposed
        ops: list[Operation] = [wt, rt]
        recurrent = rt.results[0]
        dirs, h4, hidden = shape_of(op.r)
        batch = shape_of(op.results[1])[-2]
        panel = self.panel
        if should_pack(batch, hidden, h4, panel, constant=True):
            split = ReshapeOp.make(recurrent, shape=[dirs, hidden, h4 // panel, panel])
            packed = TransposeOp.make(split.results[0], perm=[0, 2, 1, 3])
            ops += [split, packed]
            recurrent = packed.results[0]
        else:
            panel = 0
        new = op.clone()
        new.operands = [op.x, wt.results[0], recurrent, *op.operands[3:]]
        new.properties["weights_kn"] = BoolAttr.from_bool(True)
        new.properties["recurrent_panel"] = IntegerAttr(panel, i64)
        rewriter.replace(op, [*ops, new])
        self.stats.dense_to_matmul += 1


@dataclass
class GRUWeightsKN(RewritePattern):
    """gru with constant W, R [dirs, 3H, K] -> the same gru over transposed [dirs, K, 3H]
    weights (`weights_kn`): its input projection (one product for every step) and each step's
    products by R run as matmul tiles instead of dot products. A GRU of hidden 256 over 32
    steps: 1.51 -> 0.81 of onnxruntime's time."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GRUOp, rewriter: PatternRewriter) -> None:
        transposed = _transposed_rnn_weights(op)
        if transposed is None:
            return
        wt, rt = transposed
        new = op.clone()
        new.operands = [op.x, wt.results[0], rt.results[0], *op.operands[3:]]
        new.properties["weights_kn"] = BoolAttr.from_bool(True)
        rewriter.replace(op, [wt, rt, new])
        self.stats.dense_to_matmul += 1


# ----------------------------------------------------------------------------------------------
# Neighbours that follow the layout
# ----------------------------------------------------------------------------------------------


@dataclass
class SinkThroughUnary(RewritePattern):
    """f(NCHW<b>c -> NCHW (a)) -> NCHW<b>c -> NCHW (f(a)) for unary elementwise f."""

    stats: _Stats

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (
            not isinstance(op, NNVMOp)
            or pattern_kind(op) != OpPatternKind.ELEMWISE
            or len(op.operands) != 1
            or len(op.results) != 1
            or isinstance(op, LayoutTransformOp)
        ):
            return
        source = blocked_source(op.operands[0])
        if source is None or not is_static(op.results[0].type):
            return
        if shape_of(op.results[0]) != shape_of(op.operands[0]):
            return
        a, layout = source
        if is_padded(a, op.operands[0]) and not isinstance(op, PAD_SAFE):
            return
        _replace_with_blocked(rewriter, op, [], rebuild(op, [a]), layout, list(op.operands))
        self.stats.followers += 1


@dataclass
class SinkThroughBinary(RewritePattern):
    """g(blocked, blocked | ones-shaped | constant channel vector) computed in the blocked
    layout; the channel vector is reshaped to [1, C, 1, 1] and transformed to [1, C/b, 1, 1, b]."""

    stats: _Stats
    cache: dict[SSAValue, bool] = field(default_factory=dict)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, BinaryBroadcastOp) or not is_static(op.results[0].type):
            return
        lhs, rhs = op.operands
        sources = [blocked_source(lhs), blocked_source(rhs)]
        if sources[0] is None and sources[1] is None:
            return
        padded = any(
            s is not None and is_padded(s[0], v) for s, v in zip(sources, op.operands, strict=True)
        )
        if padded and not self._keeps_padding_finite(op, sources):
            return
        if sources[0] is not None and sources[1] is not None:
            # both blocked: in the layout of the one as large as the result (the other, if it
            # is blocked otherwise, meets it through one blocked-to-blocked transform: a
            # squeeze-excite scale in NCHW16c times an NCHW8c activation)
            k = 0 if shape_of(op.operands[0]) == shape_of(op.results[0]) else 1
            layout = sources[k][1]  # type: ignore[index]
            operands, prefix = [sources[0][0], sources[1][0]], []  # type: ignore[index]
            if sources[1 - k][1] != layout:  # type: ignore[index]
                moved = _to_layout(
                    operands[1 - k],
                    sources[1 - k][1],  # type: ignore[index]
                    layout,
                    shape_of(op.operands[1 - k]),
                )
                hint = op.operands[1 - k].name_hint
                moved.results[0].name_hint = f"{hint}_{layout}" if hint else None
                prefix, operands[1 - k] = [moved], moved.results[0]
        else:
            k = 0 if sources[0] is not None else 1
            a, layout = sources[k]  # type: ignore[misc]
            logical = shape_of(op.operands[k])
            if shape_of(op.results[0]) != logical:
                return  # the other operand grows the result: not a per-channel operand
            other = op.operands[1 - k]
            converted = self._convert_other(other, logical, layout)
            if converted is None:
                return
            prefix, other_b = converted
            operands = [a, other_b] if k == 0 else [other_b, a]
        blocked = rebuild(op, operands)  # type: ignore[arg-type]
        _replace_with_blocked(rewriter, op, prefix, blocked, layout, list(op.operands))
        self.stats.followers += 1

    @staticmethod
    def _keeps_padding_finite(op: Operation, sources: list) -> bool:
        """A padded operand: the op is one that keeps padding finite, or a division by a
        value the same everywhere (GELU's x / sqrt(2))."""
        if isinstance(op, PAD_SAFE):
            return True
        return (
            isinstance(op, DivOp)
            and sources[1] is None
            and all(d == 1 for d in shape_of(op.operands[1]))
        )

    def _convert_other(
        self, other: SSAValue, logical: tuple[int, ...], layout: str
    ) -> tuple[list[Operation], SSAValue] | None:
        """The other operand in a form that broadcasts against the blocked one."""
        if not is_static(other.type):
            return None
        shape = shape_of(other)
        if len(shape) > len(logical):
            return None
        if all(d == 1 for d in shape):
            return [], other  # the same value everywhere: any layout
        channels = logical[1]
        offset = len(logical) - len(shape)
        per_channel = offset <= 1 and all(
            d == (channels if offset + k == 1 else 1) for k, d in enumerate(shape)
        )
        if per_channel and is_constant_like(other, self.cache):
            return channel_vector_to_layout(other, channels, layout)
        if len(logical) == 4 and _per_sample_channels(shape, logical):
            # computed at run time, per channel (and sample): a group norm's mean and scale.
            # Its transform moves N x C numbers; staying in NCHW would move the whole tensor
            # out of the blocked layout and back (a UNet's GroupNorm + SiLU, a strided scalar
            # loop each way)
            moved = _to_layout(other, "NCHW", layout)
            if other.name_hint:
                moved.results[0].name_hint = f"{other.name_hint}_{layout}"
            return [moved], moved.results[0]
        return None


def _per_sample_channels(shape: tuple[int, ...], logical: tuple[int, ...]) -> bool:
    """Is `shape` [1 or N, C, 1, ...] against data of shape `logical` [N, C, ...]?"""
    return (
        len(shape) == len(logical)
        and shape[0] in (1, logical[0])
        and shape[1] == logical[1]
        and all(d == 1 for d in shape[2:])
    )


@dataclass
class SinkThroughBiasAdd(RewritePattern):
    """bias_add {axis = 1} of a blocked tensor -> add of the bias in [1, C/b, 1, 1, b]."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BiasAddOp, rewriter: PatternRewriter) -> None:
        source = blocked_source(op.data)
        if source is None or normalize_axis(op.attr("axis"), 4) != 1:
            return
        a, layout = source
        prefix, bias_b = channel_vector_to_layout(op.bias, shape_of(op.data)[1], layout)
        blocked = AddOp.make(a, bias_b)
        blocked.location = op.location
        _replace_with_blocked(rewriter, op, prefix, blocked, layout, [op.data])
        self.stats.followers += 1


@dataclass
class SinkThroughPool(RewritePattern):
    """A 2-D pool of a blocked tensor pools in the blocked layout (its `layout` property)."""

    stats: _Stats

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tuple(POOLING_OPS)) or op.attr("layout") != "NCHW":  # type: ignore[attr-defined]
            return
        source = blocked_source(op.operands[0])
        if source is None:
            return
        a, layout = source
        blocked = rebuild(op, [a], layout=layout)  # type: ignore[arg-type]
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


@dataclass
class SinkThroughReduce(RewritePattern):
    """A reduction over N, H and/or W of a blocked tensor, keeping its dimensions, reduces the
    same axes of the blocked tensor: its result stays blocked (a squeeze-excite block's mean
    over H, W: EfficientNet transformed every such input back to NCHW first, 11% of its time
    in layout transforms). A reduction over C, or one that drops axes, stays in NCHW."""

    stats: _Stats

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReduceOp) or not op.attr("keepdims"):
            return
        if len(shape_of(op.operands[0])) != 4:
            return
        axes = op.normalized_axes(4)
        if not axes or 1 in axes:
            return
        source = blocked_source(op.operands[0])
        if source is None:
            return
        a, layout = source
        blocked = rebuild(op, [a], axes=list(axes))  # N, H, W keep their places when blocked
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


@dataclass
class SinkThroughSplit(RewritePattern):
    """split of a blocked tensor along N, H or W, or along C at whole blocks, in the blocked
    layout: each piece stays blocked (YOLO's C2f blocks chunk a conv's output in two along C;
    the pieces went back to NCHW, and so did the residual adds and the concat after them)."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SplitOp, rewriter: PatternRewriter) -> None:
        source = _blocked_4d(op)
        if source is None:
            return
        a, layout, block = source
        axis = normalize_axis(op.attr("axis"), 4)
        sizes = list(op.attr("sizes"))
        if axis == 1:
            if any(n % block for n in sizes) or is_padded(a, op.operands[0]):
                return
            sizes = [n // block for n in sizes]
        blocked = rebuild(op, [a], axis=axis, sizes=sizes)
        for new, old in zip(blocked.results, op.results, strict=True):
            new.name_hint = old.name_hint
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


def _blocked_4d(op: Operation) -> tuple[SSAValue, str, int] | None:
    """(the blocked tensor, its layout, its block) when `op` reads a 4-D NCHW tensor that is a
    transform out of a blocked one."""
    if len(shape_of(op.operands[0])) != 4:
        return None
    source = blocked_source(op.operands[0])
    if source is None:
        return None
    a, layout = source
    return a, layout, shape_of(a)[4]


@dataclass
class SinkThroughSlice(RewritePattern):
    """A slice of a blocked tensor along N, H and/or W (any steps), or along C at whole blocks
    with step 1, slices the blocked tensor: the piece stays blocked. DeepLab's atrous
    branches, split by prune-conv-taps into sub-convs over crops of their input, moved the
    2048-channel input to NCHW and each crop back to NCHW16c: 13 transposing copies, 9.8 ms."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        source = _blocked_4d(op) if is_static(op.results[0].type) else None
        if source is None:
            return
        a, layout, block = source
        axes = [normalize_axis(x, 4) for x in op.attr("axes")]
        starts, ends, steps = list(op.attr("starts")), list(op.attr("ends")), list(op.attr("steps"))
        channels = shape_of(op.operands[0])[1]
        for k, axis in enumerate(axes):
            if axis != 1:
                continue
            kept = slice_indices(channels, starts[k], ends[k], steps[k])
            if (
                kept.step != 1
                or kept.start % block
                or kept.stop % block
                or is_padded(a, op.operands[0])
            ):
                return  # a piece of a block: the slice stays in NCHW
            starts[k], ends[k] = kept.start // block, kept.stop // block
        blocked = rebuild(op, [a], axes=axes, starts=starts, ends=ends, steps=steps)
        blocked.results[0].name_hint = op.results[0].name_hint
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


@dataclass
class SinkThroughResize(RewritePattern):
    """A resize of a blocked tensor that keeps its channels (scale 1 along C, no roi) resizes
    the blocked tensor: the block axis is one more axis of scale 1, copied (YOLO's nearest and
    DeepLab's bilinear upsampling read NCHW and wrote the concat after them in NCHW)."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ResizeOp, rewriter: PatternRewriter) -> None:
        source = blocked_source(op.operands[0])
        if source is None or not _keeps_channels(op):
            return
        a, layout = source
        blocked = _blocked_resize(op, a)
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


def _keeps_channels(op: ResizeOp) -> bool:
    """A 2-D resize with no roi and scale 1 along C: in a blocked layout its channel block is
    one more axis of scale 1."""
    shape = shape_of(op.operands[0])
    if len(shape) != 4 or op.attr("roi"):
        return False
    size, scales = list(op.attr("size")), list(op.attr("scales"))
    return size[1] == shape[1] and not (scales and scales[1] != 1.0)


def _blocked_resize(op: ResizeOp, a: SSAValue) -> Operation:
    """The resize `op` (one that keeps its channels) of `a`, the same data blocked."""
    size, scales = list(op.attr("size")), list(op.attr("scales"))
    _, cb, _, _, block = shape_of(a)
    return rebuild(
        op,
        [a],
        size=[size[0], cb, size[2], size[3], block],
        scales=[*scales, 1.0] if scales else [],
    )


@dataclass
class SinkThroughConcat(RewritePattern):
    """concat of tensors all in one blocked layout, in that layout: along C it concatenates the
    C/b blocks, along N, H or W the same axis of the blocked tensors (the bands of a conv split
    by prune-conv-taps, which went back to NCHW and forward again around each concat)."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter) -> None:
        if not op.operands or len(shape_of(op.result)) != 4:
            return
        sources = [blocked_source(v) for v in op.operands]
        if any(s is None for s in sources) or len({s[1] for s in sources}) != 1:  # type: ignore[index]
            return
        layout = sources[0][1]  # type: ignore[index]
        axis = normalize_axis(op.attr("axis"), 4)  # N, C/b, H, W keep their places
        if axis == 1 and any(
            is_padded(s[0], v)  # type: ignore[index]
            for s, v in zip(sources, op.operands, strict=True)
        ):
            return  # padding would land between the pieces' channels
        blocked = rebuild(op, [s[0] for s in sources], axis=axis)  # type: ignore[index]
        _replace_with_blocked(rewriter, op, [], blocked, layout, list(op.operands))
        self.stats.followers += 1


@dataclass
class HoistBlockingAboveUpsample(RewritePattern):
    """lt(concat(a, b, ...), NCHW -> NCHW<b>c) -> concat(lt(a), lt(b), ...) in the blocked
    layout, and lt(resize(x)) -> resize(lt(x)) for a resize that keeps its channels and does
    not shrink: the transform into a conv's blocked layout moves up to the smallest tensors of
    a decode head (SegFormer's and FPN-style heads upsample each scale, concat along C, then
    a conv fuses them). Left below, the transform read the concat of upsampled maps in NCHW:
    every output lane a gather through the resize's taps, 5 ms for SegFormer-B0's 16 MB; above,
    the resizes run blocked (taps uniform across the channel vector) and the transforms touch
    the maps before upsampling. Only where the concat or resize has no other reader."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LayoutTransformOp, rewriter: PatternRewriter) -> None:
        layout = op.attr("dst_layout")
        if op.attr("src_layout") != "NCHW" or not _BLOCKED_NCHW.fullmatch(layout):
            return
        producer = op.input.owner
        if not op.input.has_one_use() or not isinstance(producer, ConcatOp | ResizeOp):
            return
        block = Layout.parse(layout, "NCHW").factor("C")
        if isinstance(producer, ConcatOp):
            if len(shape_of(producer.result)) != 4:
                return
            axis = normalize_axis(producer.attr("axis"), 4)
            if any(shape_of(v)[1] % block for v in producer.operands):
                return  # padded pieces: padding would land between their channels
            moved = [_to_layout(v, "NCHW", layout) for v in producer.operands]
            blocked = rebuild(producer, [m.results[0] for m in moved], axis=axis)
        else:
            x = producer.operands[0]
            if not _keeps_channels(producer) or shape_of(x)[1] % block:
                return
            if math.prod(shape_of(x)) > math.prod(shape_of(producer.results[0])):
                return  # a downsample: the transform is cheaper below it
            moved = [_to_layout(x, "NCHW", layout)]
            blocked = _blocked_resize(producer, moved[0].results[0])
        for m, v in zip(moved, producer.operands, strict=True):
            if v.name_hint:
                m.results[0].name_hint = f"{v.name_hint}_{layout}"
        blocked.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, [*moved, blocked], [blocked.results[0]])
        rewriter.erase(producer)
        self.stats.followers += 1


# ----------------------------------------------------------------------------------------------
# Canonicalization: compose back-to-back transforms
# ----------------------------------------------------------------------------------------------


@dataclass
class ComposeLayoutTransforms(RewritePattern):
    """lt(lt(x, A -> B), B -> A) -> x and lt(lt(x, A -> B), B -> C) -> lt(x, A -> C); a
    transform to its own layout is x."""

    stats: _Stats

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LayoutTransformOp, rewriter: PatternRewriter) -> None:
        src, dst = op.attr("src_layout"), op.attr("dst_layout")
        if src == dst:
            rewriter.replace(op, [], [op.input])
            self.stats.composed += 1
            return
        inner = op.input.owner
        if not isinstance(inner, LayoutTransformOp) or inner.attr("dst_layout") != src:
            return
        first = inner.attr("src_layout")
        if first == dst:
            if inner.input.type != op.results[0].type:
                return
            rewriter.replace(op, [], [inner.input])
        else:
            logical = inner.logical_shape(shape_of(inner.input))
            rewriter.replace(op, [_to_layout(inner.input, first, dst, logical)])
        erase_if_dead(inner, rewriter)
        self.stats.composed += 1


def conv_block(c: int, o: int, block: int) -> int:
    """The channel block of one conv: `block`, halved (down to 8) until it divides both its
    input and output channels (MobileNet's 24-channel convs take 8 while the rest keep 16);
    neighbours in different blocks meet through one blocked-to-blocked transform."""
    while (c % block or o % block) and block % 2 == 0 and block // 2 >= 8:
        block //= 2
    return block


@dataclass(frozen=True)
class AlterLayoutPass(ModulePass):
    """Blocked NCHW<block>c layouts for conv2d and the ops around it."""

    name = "alter-layout"

    block: int = 8
    """The channel block: 8 f32 lanes fill one AVX2 vector, 16 one AVX-512 vector (the most;
    `conv_block` may pick a smaller one for a conv whose channels it does not divide)."""

    panel: int | None = None
    """Column-panel width for constant matmul weights (0: keep them [K, N]); None: the host
    target's (Capabilities.panel)."""

    dot_lanes: int = 0
    """int32 lanes of the target's byte dot products (16 with AVX-512): constant int8 weights
    of integer dense and conv2d ops are packed for them (0: left as they are)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.block < 1:
            raise DiagnosticError(None, f"alter-layout: block must be >= 1, got {self.block}")
        stats = _Stats()
        panel = self.panel if self.panel is not None else parse_target(None).capabilities.panel
        patterns: list[RewritePattern] = [
            ComposeLayoutTransforms(stats),
            BlockConv2D(self.block, stats, self.dot_lanes),
            DenseToMatmul(stats, panel),
            PackDotWeight(stats, self.dot_lanes),
            LSTMWeightsKN(stats, panel),
            GRUWeightsKN(stats),
            SinkThroughUnary(stats),
            SinkThroughBinary(stats),
            SinkThroughBiasAdd(stats),
            SinkThroughPool(stats),
            SinkThroughReduce(stats),
            SinkThroughSplit(stats),
            SinkThroughSlice(stats),
            SinkThroughResize(stats),
            SinkThroughConcat(stats),
            HoistBlockingAboveUpsample(stats),
        ]
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
        PatternRewriteWalker(applier).rewrite_module(op)
        cache: dict[SSAValue, bool] = {}
        runtime = sum(
            1
            for o in op.walk()
            if isinstance(o, LayoutTransformOp) and not is_constant_like(o.input, cache)
        )
        record_statistic(op, self.name, "blocked-convs", stats.convs, "conv2d ops blocked")
        record_statistic(
            op, self.name, "followers", stats.followers, "neighbours moved to the blocked layout"
        )
        record_statistic(
            op, self.name, "composed", stats.composed, "back-to-back layout transforms composed"
        )
        record_statistic(
            op, self.name, "data-transforms", runtime, "runtime layout transforms (boundaries)"
        )
        if stats.padded:
            record_statistic(
                op,
                self.name,
                "padded-convs",
                stats.padded,
                "convs whose channels were padded to whole blocks",
            )
        if stats.pointwise_matmuls:
            record_statistic(
                op,
                self.name,
                "pointwise-matmuls",
                stats.pointwise_matmuls,
                "unblockable 1x1 convs run as matmuls",
            )
        if stats.dot_weights:
            record_statistic(
                op,
                self.name,
                "dot-weights",
                stats.dot_weights,
                "int8 dense weights packed for byte dot products",
            )
        if stats.dense_to_matmul:
            record_statistic(
                op,
                self.name,
                "dense-to-matmul",
                stats.dense_to_matmul,
                "dense, lstm and gru ops with constant weights moved to transposed weights",
            )
