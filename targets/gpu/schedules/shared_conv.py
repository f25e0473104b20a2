"""The GPU conv2d template with shared-memory tiles (blocked layout, tag `conv2d_nchwc`):
out[n, ocb, oh, ow, oc] = sum over (input channels, window) of x[n, ., oh * sh + kh * dh,
ow * sw + kw * dw, .] * w[ocb, ., kh, kw, ., oc].

A block computes a tile of TH x TW output pixels of one image for OB output-channel blocks
(blockIdx.(y, x) over the tile rows and columns, blockIdx.z over (image, group of OB channel
blocks)). Its threads are the channel block's lanes on threadIdx.x (oc: 4, 8 or 16) times a
grid of pixel threads on threadIdx.(z, y) (64 to 256 threads in all); each thread accumulates
an OB x MH x MW register tile (its lane of OB channel blocks at MH x MW adjacent pixels),
unrolled. The input-channel reduction runs in steps (an input channel block, or a chunk of CH
of its channels, or of the stem's plain channels); per step the input patch the tile reads
(the window's halo, strides and dilation included: the lowering infers it from the compute_at
point) and the step's weights are `te.cache_read ... scope "shared"` computed at the step loop,
copied by the block's threads together. The conv's padding stage is inlined into the input's
copy (no padded copy of the input in global memory). The sizes come from a small cost model
(conv_tiles).

Why the lanes are the output channels: a warp's threads then read consecutive weights
(conflict-free) and one input element per pixel (a broadcast), and store consecutive outputs
(coalesced, and so are the epilogue's reads). With 4 pixels x 4 blocks a thread issues 8
shared loads per 16 products; the register template (tiled.blocked: a thread per pixel and
channel block) issues 17 global loads per 16, the input's uncoalesced (a warp's threads read
addresses a channel block apart), and its stores too. On PoCL (a CPU) the register template
is faster: caches make the copies pure overhead, and PoCL runs the code between barriers one
work-item at a time (numbers in docs/gpu.md); `-tiles=registers` picks it there.

Shapes it does not suit take tiled.blocked (the register template): a depthwise conv (the
input read depends on the output channel), a grouped one (its input block is a division of
the output block), reads that are not linear in the axes, channel blocks wider than 16, and
tiles whose shared copies would not fit SHARED_BUDGET even at one channel per step."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.ops import ComputeOp, ReadOp
from nnvm.dialects.te.schedule import (
    CacheReadOp,
    ComputeAtOp,
    ComputeInlineOp,
    FuseOp,
    ReorderOp,
    SplitOp,
    UnrollOp,
)
from nnvm.dialects.te.stage_tree import placeholder_name
from nnvm.lowering.te_to_loops.bounds import Linear, index_form
from nnvm.targets.gpu.schedules.generic import GpuScheduler, bind
from nnvm.targets.gpu.schedules.tiled import blocked

MAX_THREADS = 256
"""Threads per block: the lanes times the pixel threads."""
MAX_LANES = 16
"""The widest output channel block whose lanes are a block's threadIdx.x."""
MAX_OUT_BLOCKS = 4
"""Output channel blocks a thread accumulates (OB: a divisor of their count)."""
MAX_PIXELS = 4
"""Pixels a thread accumulates (MH x MW); with OB, at most 16 accumulators."""
SHARED_BUDGET = 32 * 1024
"""Bytes of shared memory a block's two tiles may take; the input-channel step shrinks until
they fit (the lowering's hard limit is 48 KiB; less leaves room for more blocks per SM)."""
COPY_COST = 8
"""Instructions per element copied into shared memory (its index arithmetic, the load and the
store) against one per product or shared load, in the sizes' cost model."""


@dataclass(frozen=True)
class ConvTiles:
    """The template's sizes for one conv."""

    ty: int
    """Pixel threads along the tile's columns (threadIdx.y) ..."""
    mw: int
    """... each accumulating MW adjacent columns (TW = ty * mw)."""
    tz: int
    mh: int
    """Rows: threadIdx.z, MH each (TH = tz * mh)."""
    ob: int
    """Output channel blocks per block (each thread accumulates its lane of all of them)."""
    chunk: int
    """Channels of the innermost channel axis per reduction step."""
    shared_bytes: int
    """Of the two tiles together."""


@dataclass(frozen=True)
class ConvReads:
    """What the template needs to know of a conv's formula."""

    data: str
    """The stage the input is read from (the padding stage, or a placeholder)."""
    weight: str
    pad: str | None
    """The padding stage, inlined into the input's shared copy (None when the input is read
    directly)."""
    channels: list[str]
    """The reduction axes over input channels (outermost first: icb, ic; the stem's ic)."""
    window: list[str]
    """The reduction axes of the kernel window (kh, kw)."""
    forms: list[tuple[list[Linear], list[int], int]]
    """Each read's index forms over the compute's axes, its tensor's shape and element bytes."""


def _footprint(forms: list[Linear], shape: list[int], ranges: dict[SSAValue, int]) -> int:
    """Elements of the box a read's indices cover when each axis runs over its range."""
    total = 1
    for form, dim in zip(forms, shape, strict=True):
        span = sum(abs(c) * (ranges[k] - 1) for k, c in form.terms.items())  # type: ignore[index]
        total *= min(span + 1, dim)
    return total


def conv_reads(s: GpuScheduler, op: ComputeOp) -> ConvReads | None:
    """The conv's input and weight reads when the template suits it: two tensors read once,
    every index linear in the axes; the input read not depending on the output channels (so
    not depthwise or grouped), the weight read not on the image or the pixels; at least one
    reduction axis over input channels. Else None."""
    args = list(op.block.args)
    n, ocb, oh, ow, oc = args[:5]
    reduce_args = args[5:]
    env: dict[SSAValue, Linear | None] = {a: Linear.of(a) for a in args}
    reads = [r for r in op.block.ops if isinstance(r, ReadOp)]
    if len(reads) != 2 or reads[0].tensor == reads[1].tensor:
        return None
    found: dict[str, tuple[ReadOp, list[Linear]]] = {}
    for read in reads:
        forms = [index_form(i, env) for i in read.indices]
        if any(f is None for f in forms):
            return None
        used = {k for f in forms for k in f.terms}  # type: ignore[union-attr]
        if used & {oh, ow} and not used & {ocb, oc}:
            found["data"] = (read, forms)  # type: ignore[assignment]
        elif used & {ocb, oc} and not used & {n, oh, ow}:
            found["weight"] = (read, forms)  # type: ignore[assignment]
    if set(found) != {"data", "weight"}:
        return None
    data_read, data_forms = found["data"]
    window = [
        a
        for a in reduce_args
        if any(a in f.terms and f.terms.keys() & {oh, ow} for f in data_forms)
    ]
    channels = [a for a in reduce_args if a not in window]
    if not channels:
        return None
    names = list(op.reduce_names)
    pad = None
    stages: list[str] = []
    for read in (data_read, found["weight"][0]):
        owner = read.tensor.owner
        if isinstance(owner, ComputeOp):
            stages.append(owner.stage_name)
        elif hasattr(read.tensor, "index") and owner is op.parent_block():
            stages.append(placeholder_name(read.tensor.index))  # type: ignore[attr-defined]
        else:
            return None
    owner = data_read.tensor.owner
    if isinstance(owner, ComputeOp) and owner.template_name == "pad":
        info = s.infos.get(owner.result)
        if info is not None and not info.is_output and info.readers == [op]:
            pad = owner.stage_name
    forms = []
    for read, f in (found["data"], found["weight"]):
        t = read.tensor.type
        assert isinstance(t, TensorType)
        forms.append((f, list(t.get_shape()), max(element_bits(t.element_type) // 8, 1)))
    return ConvReads(
        stages[0],
        stages[1],
        pad,
        [names[reduce_args.index(a)] for a in channels],
        [names[reduce_args.index(a)] for a in window],
        forms,  # type: ignore[arg-type]
    )


def conv_tiles(op: ComputeOp, reads: ConvReads) -> ConvTiles | None:
    """Tile sizes for the conv: of the OB x (TH x TW pixels) tiles whose shared copies fit
    SHARED_BUDGET at one channel per step, the one with the least work over the whole conv
    (a throughput model: every launched thread's products and shared loads per tap, whether
    its pixels exist or not, plus COPY_COST per element each block copies); then the widest
    step (a divisor of the innermost channel axis) that fits. So maps that no 8 x 8 tile
    divides take tiles that do (ResNet's 28 x 28: 14 x 4, 7 x 7: 7 x 8) and a thread keeps
    4 pixels x 4 blocks where it can (0.5 shared loads per product). None when nothing
    fits."""
    images, blocks, height, width, lanes = op.shape
    args = list(op.block.args)
    names = list(op.reduce_names)
    reduce_args = dict(zip(names, args[5:], strict=True))
    inner = reads.channels[-1]
    depth = op.reduce_shape[names.index(inner)]
    ranges: dict[SSAValue, int] = {}
    for name, extent in zip(names, op.reduce_shape, strict=True):
        ranges[reduce_args[name]] = 1 if name in reads.channels else extent
    taps = math.prod(ranges.values())

    def copied(ob: int, th: int, tw: int, chunk: int) -> tuple[int, int]:
        """Elements and bytes of a block's two shared tiles per step."""
        ranges.update(zip(args[:5], [1, ob, th, tw, lanes], strict=True))
        ranges[reduce_args[inner]] = chunk
        sizes = [(_footprint(f, shape, ranges), size) for f, shape, size in reads.forms]
        return sum(n for n, _ in sizes), sum(n * size for n, size in sizes)

    best: tuple[tuple[int, int], tuple[int, int, int, int, int]] | None = None
    for ob in (d for d in range(1, min(blocks, MAX_OUT_BLOCKS) + 1) if blocks % d == 0):
        for mh, mw in ((m, n) for m in (1, 2, 4) for n in (1, 2, 4) if m * n <= MAX_PIXELS):
            for tz in range(1, -(-height // mh) + 1):
                for ty in range(1, min(-(-width // mw), MAX_THREADS // (lanes * tz)) + 1):
                    elements, size = copied(ob, tz * mh, ty * mw, 1)
                    if size > SHARED_BUDGET:
                        continue
                    px, threads = mh * mw, lanes * tz * ty
                    grid = images * -(-blocks // ob) * -(-height // (tz * mh))
                    grid *= -(-width // (ty * mw))
                    work = threads * taps * (px * ob + px + ob) + COPY_COST * elements
                    cost = (grid * work, -threads)
                    if best is None or cost < best[0]:
                        best = (cost, (ty, mw, tz, mh, ob))
    if best is None:
        return None
    ty, mw, tz, mh, ob = best[1]
    for chunk in (d for d in range(depth, 0, -1) if depth % d == 0):
        _, size = copied(ob, tz * mh, ty * mw, chunk)
        if size <= SHARED_BUDGET:
            return ConvTiles(ty, mw, tz, mh, ob, chunk, size)
    return None


def shared_conv(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """out[n, ocb, oh, ow, oc] in blocks of (TH x TW pixels, OB channel blocks), the lanes oc
    on threadIdx.x and the pixel threads on threadIdx.(z, y); the anchor's OB x MH x MW tile
    computed at the lane, its input channels in steps whose input patch and weights are
    cached in shared memory at the step loop. Shapes it does not suit: tiled.blocked."""
    suits = s.shared and len(s.axes(out)) == 5 and op.shape[-1] <= MAX_LANES
    reads = conv_reads(s, op) if suits else None
    tiles = conv_tiles(op, reads) if reads is not None else None
    if reads is None or tiles is None:
        blocked(s, op, stage, out)
        return
    n, ocb, oh, ow, oc = s.axes(out)
    p = s.prims
    # the output tile: ocb -> (ocb.b, ocb.w), oh -> (oh.b, oh.t, oh.w), ow likewise; a
    # thread's pixels are adjacent (the anchor computed at the thread is a box: pixels the
    # pixel threads apart would make it span them all)
    p.append(SplitOp.make(out, ocb, tiles.ob, None, f"{ocb}.b", f"{ocb}.w"))
    for axis, t, m in ((oh, tiles.tz, tiles.mh), (ow, tiles.ty, tiles.mw)):
        p.append(SplitOp.make(out, axis, t * m, None, f"{axis}.b", f"{axis}.r"))
        p.append(SplitOp.make(out, f"{axis}.r", m, None, f"{axis}.t", f"{axis}.w"))
    tile = [f"{oh}.b", f"{ow}.b", f"{oh}.t", f"{ow}.t", oc, f"{ocb}.w", f"{oh}.w", f"{ow}.w"]
    p.append(ReorderOp.make(out, [n, f"{ocb}.b", *tile]))
    z = f"{out}.images"
    p.append(FuseOp.make(out, [n, f"{ocb}.b"], z))
    p.append(bind(out, z, "blockIdx.z"))
    p.append(bind(out, f"{oh}.b", "blockIdx.y"))
    p.append(bind(out, f"{ow}.b", "blockIdx.x"))
    p.append(bind(out, f"{oh}.t", "threadIdx.z"))
    p.append(bind(out, f"{ow}.t", "threadIdx.y"))
    p.append(bind(out, oc, "threadIdx.x"))
    # the anchor: its tile at the lane, reduction outermost, the input channels in steps
    spatial = list(op.spatial_names)
    *outer, inner = reads.channels
    p.append(ComputeAtOp.make(stage, out, oc))
    p.append(SplitOp.make(stage, inner, tiles.chunk, None, f"{inner}.o", f"{inner}.i"))
    steps = [*outer, f"{inner}.o"]
    tile_axes = spatial[1:4]  # ocb, oh, ow
    order = [spatial[0], spatial[4], *steps, *reads.window, f"{inner}.i", *tile_axes]
    p.append(ReorderOp.make(stage, order))
    # the step's channels unrolled too: no uniform innermost loop is left between the
    # barriers, which PoCL would otherwise cut at every iteration (a work-item context switch
    # per 16 products: 64 -> 4.5 ms for a 1x1 conv, 81 -> 27 ms for ResNet's 3x3 at 56x56)
    for axis in [f"{inner}.i", *tile_axes]:
        p.append(UnrollOp.make(stage, axis))
    for side, name in (("x", reads.data), ("w", reads.weight)):
        copy = f"{stage}.{side}.shared"
        p.append(CacheReadOp.make(name, [stage], copy, scope="shared"))
        p.append(ComputeAtOp.make(copy, stage, f"{inner}.o"))
    if reads.pad is not None:
        p.append(ComputeInlineOp.make(reads.pad))
        s.done.add(reads.pad)
