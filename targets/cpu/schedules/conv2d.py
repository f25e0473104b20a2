"""x86 register-blocked schedules of conv2d in NCHW[x]c and NCHW (and depthwise)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType

from nnvm.dialects.te.analysis import depends_on
from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import (
    ComputeAtOp,
    FuseOp,
    ReorderOp,
    SplitOp,
    TileOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.targets.cpu.schedules.dense_dot_bytes import (
    DOT_ACCUMULATORS,
    dot_or_vectorize,
    dot_packed,
)
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler, divisor, product_reads

STACKED_ROWS_GAIN = 1.25
"""A register tile spans several output rows only when that keeps this many times the
accumulators busy that the best one-row tile does: a 35-wide map's 2 x 2 x 7 tile (17% more
busy than 2 x 1 x 12) ran 7% slower, a 20-wide map's (33% more than 2 x 1 x 10) 17% faster."""

THREE_BLOCKS_GAIN = 1.1
"""A dense conv's register tile takes three channel blocks (each broadcast feeding three
multiply-adds, 3 x 9 accumulators) only where two would leave a tail tile and three divide
the blocks, and only when that keeps this many times the accumulators busy: MnasNet's
16 -> 48 1x1 conv at 112x112 (3 x 9 busy 96%, 2 x 14 75%) 0.225 -> 0.195 ms; at a tie (28
columns: 3 x 7 against 2 x 14) two blocks were as fast or faster (EfficientNet's 240 -> 48 at
28x28: 1.11x slower in three), and against two rows of two blocks on a 7x7 map, slower."""

SMALL_IMAGE_BYTES = 128 * 1024
"""The short-row schedule keeps a tile's output for the whole image in one buffer: only when
that fits in L2 (ResNet's 7x7: 6 KiB); a tall image (16384 rows) takes the row-tiled one."""

SMALL_IMAGE_TILES = 16
"""... and only when its tiles (batch x channel-block groups, its parallel items) are enough
to share among threads: MnasNet's 480 -> 80 1x1 conv at 14x14 had 5 (1 block each), 3 and 2
on two threads, 0.066 ms against 0.057 row-tiled (one thread: 0.110 against 0.116)."""

L2_BYTES = 2 * 1024 * 1024
"""A core's L2, which a dense conv's loops expect to keep what their next pass reads: a whole
input 7/8 of it (the output rows and the prefetched weights pass through the rest), a row
group's input rows and the weights half of it. See `_row_group`."""

PREFETCH_BYTES = 2048
"""How far ahead of a dense conv's input-channel loop its weights are prefetched (a knob,
`conv.prefetch`, in iterations; 0 turns it off). The loop walks the weights in memory order
(input-channel blocks, taps, channels), so the address that many iterations on is the
stream's next stretch; weights fresh from memory (each conv's are used by one kernel call,
1-9 MB in ResNet-50) otherwise wait on the hardware's streamer, which starts over at each
4 KiB page. Fresh-process A/B, 1 thread: ResNet-50 0.95, Inception-v3 0.93, MnasNet 0.99,
SqueezeNet 0.99 of the time."""


STEM_TAPS = 27
STEM_COLUMNS = 7
"""A stem conv over an unblocked image with at most STEM_TAPS products an output (3 channels,
3x3) takes register tiles of at most STEM_COLUMNS columns. Measured in the models, one
thread, 14 -> 7 columns: Inception-v3's stem (149 columns) 0.50 -> 0.26-0.29 ms,
SqueezeNet-b4's (111) 1.44-1.53 -> 1.10-1.18, RegNetY's and MobileNetV2's (112) 0.13 -> 0.12
(the debug runtime's profile, interleaved builds in one process); alone, with
its input and output warm in the caches, each ran 0-18% faster. Not understood: alone the
same stems differ far less than in the model. ResNet-50's 7x7 stem (147 products) was 2%
slower in 7 columns and keeps 14."""

DEPTH_BLOCKED_BUFFER = 128 * 1024
"""The accumulators a depth-blocked conv keeps across its chunks: at most this many bytes of
output rows (28 rows of 28 columns in two blocks: 100 KiB)."""


def conv2d_nchwc(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, ocb, oh, ow, oc]: register tiles of ow x (one or two channel blocks), the
    channel block one vector; (n, ocb, oh) parallel. Inside a tile, each input element is
    broadcast once and multiplied by the weight vectors of both channel blocks (ow outside
    the channel blocks, so LLVM keeps 28 accumulators + 2 weights + 1 broadcast in AVX-512's
    32 registers instead of spilling). Where one row cannot fill the tile (the 7x7 maps at
    the end of ImageNet networks, Inception's 17x17 and 35x35) a tile spans several rows:
    2 rows x 7 columns x 2 blocks keep all 28 accumulators busy where one row kept 14
    (ResNet-50's 2048 -> 512 1x1 conv 139 -> 171 GFLOP/s, its 3x3 at 7x7 156 -> 167; see
    _conv_tile)."""
    n, cb, h, w, c = s.axes(e)
    an, _, ah, _, _ = anchor.spatial_names
    ncb, ow = anchor.shape[1], anchor.shape[3]
    depthwise = len(anchor.reduce_names) <= 2
    # a block over narrow groups: its input is its own block, so a second block of the tile
    # would share no input with the first
    narrow = _lanes_read_across(anchor)
    max_blocks = 1 if depthwise or narrow else 2
    budget = DOT_ACCUMULATORS if dot_packed(anchor) else s.accumulators
    oh = anchor.shape[2]
    short_stem = len(anchor.reduce_shape) == 3 and math.prod(anchor.reduce_shape) <= STEM_TAPS
    ocf, rows, owf = _conv_tile(
        ow,
        oh,
        ncb,
        budget,
        min(s.max_row_tile, STEM_COLUMNS) if short_stem else s.max_row_tile,
        max_blocks,
        max_rows=1 if depthwise else oh,
        tails=not depthwise,
    )
    if not depthwise and not narrow and ncb % 2 and ncb % 3 == 0:
        ocf, rows, owf = _three_blocks(ow, ncb, budget, s.max_row_tile, (ocf, rows, owf), oh)
    ocf = s.knob("conv.blocks", list(range(1, min(1 if depthwise else 3, ncb) + 1)), ocf)
    owf = s.knob("conv.cols", range(1, min(budget // ocf, s.max_row_tile, ow) + 1), owf)
    fit = min(budget // (ocf * owf), s.max_row_tile // owf, oh)
    if fit > 1 and not depthwise:
        rows = s.knob("conv.rows", range(1, fit + 1), min(rows, fit))
    else:
        rows = 1
    whole_image = ocf * math.prod(anchor.shape[2:]) * element_bits(anchor.element_type) // 8
    if not depthwise and owf == ow and ocf * owf <= s.max_row_tile:
        tiles = anchor.shape[0] * (ncb // ocf)  # the whole-image schedule's parallel items
        small = whole_image <= SMALL_IMAGE_BYTES and rows == 1 and tiles >= SMALL_IMAGE_TILES
        if s.knob("conv.whole_image", [False, True], small):
            _conv2d_nchwc_small(s, anchor, a, e, ocf)
            return
    if not depthwise and len(anchor.reduce_names) == 4 and not dot_packed(anchor):
        block_rows = _block_rows(anchor, ocf, rows)
        chunk = _depth_block(s, anchor, ocf, rows, block_rows)
        if chunk:
            _conv2d_nchwc_depth_blocked(s, anchor, a, e, (ocf, rows, owf), chunk, block_rows)
            return
    p = s.prims
    p.append(SplitOp.make(e, w, owf, None, f"{w}.o", f"{w}.i"))
    p.append(SplitOp.make(e, cb, ocf, None, f"{cb}.o", f"{cb}.i"))
    h_tiles, h_tile, tile_rows = h, [], []  # one row a tile
    if rows > 1:  # several: the tile's rows are unrolled beside its columns
        p.append(SplitOp.make(e, h, rows, None, f"{h}.o", f"{h}.i"))
        h_tiles, h_tile, tile_rows = f"{h}.o", [f"{h}.i"], [ah]
    n_row_tiles = -(-oh // rows)
    group = n_row_tiles
    strip = 0
    if not depthwise:
        fit = _column_strip(anchor, rows, owf)
        strips = sorted({0, fit, max(fit // 2, 1), 2 * fit} if fit else {0})
        strip = s.knob("conv.col_strip", strips, fit)
    if not depthwise and not strip:
        groups = [g for g in range(1, n_row_tiles + 1) if n_row_tiles % g == 0]
        group = s.knob("conv.row_group", groups, _row_group(anchor, ocf, rows, groups))
    tile_loops = [n, f"{cb}.o", h_tiles]
    columns = f"{w}.o"
    if strip:  # column strips outermost: a strip's input, every row of it, stays in L2
        p.append(SplitOp.make(e, columns, strip, None, f"{w}.s", f"{w}.t"))
        tile_loops = [n, f"{w}.s", f"{cb}.o", h_tiles]
        columns = f"{w}.t"
    elif group < n_row_tiles:  # row groups outermost: each group's input rows stay in L2
        p.append(SplitOp.make(e, h_tiles, group, None, f"{h_tiles}.g", f"{h_tiles}.r"))
        tile_loops = [n, f"{h_tiles}.g", f"{cb}.o", f"{h_tiles}.r"]
    p.append(ReorderOp.make(e, [*tile_loops, columns, f"{cb}.i", *h_tile, f"{w}.i", c]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, tile_loops, fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, c))
    p.append(ComputeAtOp.make(a, e, columns))
    outer = [an, *([] if tile_rows else [ah]), *anchor.reduce_names]
    _conv_register_tile(s, anchor, a, outer, tile_rows)
    # a depthwise conv's whole padded copy costs as much as the conv; so does a grouped conv's
    # whose one-row tiles each read input blocks of their own (a tile of stacked rows computes
    # its rows inside the reduction, where a copy cannot go)
    own = not tile_rows and _own_input_blocks(anchor, ocf)
    if (depthwise or own) and s.tile_pads(anchor):
        if s.knob("conv.pad_in_tile", [False, True], True):
            s.pad_at(anchor, a, ah)


def _tile_weight_bytes(anchor: ComputeOp, ocf: int) -> int:
    """Bytes of the weights one register tile of `ocf` output channel blocks reads over its
    whole reduction (every input channel block and tap)."""
    return ocf * math.prod(anchor.reduce_shape) * anchor.shape[-1] * _element_bytes(anchor)


def _element_bytes(anchor: ComputeOp) -> int:
    return max(element_bits(anchor.element_type) // 8, 1)


def _input_rows(anchor: ComputeOp, out_rows: int, h_in: int) -> int:
    """Rows of an input `h_in` high that `out_rows` output rows of a conv read."""
    oh, kh = anchor.shape[2], anchor.reduce_shape[1]
    return min(h_in, -(-out_rows * h_in // oh) + kh - 1)


def _depth_block(
    s: KernelScheduler, anchor: ComputeOp, ocf: int, rows: int, block_rows: int
) -> int:
    """Input channel blocks a chunk of a dense NCHWc conv's reduction (the knob
    `conv.depth_block`; 0: no chunks). Chunks where the one-pass nest's reuse does not fit in
    L2: a tile's weights (read again by every tile of its channel blocks) and the input rows
    of its row group (read again by every tile of the group, see `_row_group`) exceed it. The
    chunk: the largest power of two (8 to 32) up to a quarter of the blocks whose weights and
    input rows for a row block take at most half of L2. Measured per kernel on one thread against the
    one-pass nest: FCN-ResNet50's head, 3x3 2048 -> 512 at 28x28 (2.4 MB of weights a tile),
    121 -> 90-105 ms (onnxruntime 95); its 1x1 2048 -> 512 (a row group's input 3.2 MB) 13.0
    -> 11.6-12.5 ms; SegFormer-B0's 1x1 1024 -> 256 at 64x64 19.2 -> 16.6 ms. Where the
    one-pass nest's reuse fits, chunks cost: ResNet-50's 3x3 512 -> 512 at 7x7 (0.7 MB)
    1.59 -> 1.99 ms; so did two chunks of 8 blocks (VGG-11's 3x3 256 -> 256 at 56x56, 24.3 ->
    26.0 ms)."""
    icb, lanes_in = anchor.reduce_shape[0], anchor.reduce_shape[3]
    reads = product_reads(anchor)
    if reads is None:
        return 0
    image = reads[0].tensor.type
    assert isinstance(image, TensorType)
    h_in, w_in = image.get_shape()[2:4]

    def input_bytes(out_rows: int, blocks: int) -> int:
        in_rows = _input_rows(anchor, out_rows, h_in)
        return in_rows * w_in * blocks * lanes_in * _element_bytes(anchor)

    row_tiles = -(-anchor.shape[2] // rows)
    groups = [g for g in range(1, row_tiles + 1) if row_tiles % g == 0]
    group_rows = _row_group(anchor, ocf, rows, groups) * rows
    block_tiles = -(-anchor.shape[1] // ocf)  # the input rows are read again by each
    one_pass = _tile_weight_bytes(anchor, ocf) + (
        input_bytes(group_rows, icb) if block_tiles > 1 else 0
    )
    per_block = _tile_weight_bytes(anchor, ocf) // icb + input_bytes(block_rows, 1)
    options = [c for c in (8, 16, 32) if 4 * c <= icb]  # fewer chunks did not pay
    fit = [c for c in options if c * per_block <= L2_BYTES // 2]
    wanted = one_pass > L2_BYTES and fit
    return s.knob("conv.depth_block", [0, *options], fit[-1] if wanted else 0)


def _block_row_options(oh: int, rows: int) -> list[int]:
    """Heights of a depth-blocked conv's row blocks: whole register tiles of `rows` rows, or
    the whole height."""
    return sorted({min(oh, rows * k) for k in range(1, -(-oh // rows) + 1)})


def _block_rows(anchor: ComputeOp, ocf: int, rows: int) -> int:
    """Output rows whose accumulators a depth-blocked conv keeps in one buffer: the most whose
    buffer of ocf blocks fits DEPTH_BLOCKED_BUFFER (a divisor of the height where one does as
    well: no short block at the bottom)."""
    oh, ow, lanes = anchor.shape[2], anchor.shape[3], anchor.shape[-1]
    row_bytes = ocf * ow * lanes * _element_bytes(anchor)
    options = _block_row_options(oh, rows)
    fit = [r for r in options if r * row_bytes <= DEPTH_BLOCKED_BUFFER] or options[:1]
    blocks = -(-oh // fit[-1])
    even = [r for r in fit if -(-oh // r) == blocks and oh % r == 0]
    return even[0] if even else fit[-1]


def _conv2d_nchwc_depth_blocked(
    s: KernelScheduler,
    anchor: ComputeOp,
    a: str,
    e: str,
    tile: tuple[int, int, int],
    chunk: int,
    block_rows: int,
) -> None:
    """A dense NCHWc conv with its input channels in chunks of `chunk` blocks (GotoBLAS's kc
    for convs): the accumulators of a block of output rows (all their register tiles of `ocf`
    channel blocks) live in a buffer across the chunks, so the chunk's weights and input
    rows stay in L2 while every tile of the rows uses them, where one tile's whole reduction
    otherwise streamed its weights from L3 on every tile. (n, row blocks, channel-block tiles)
    are the parallel loop; hoist-loop-invariant-accesses keeps each tile's accumulators in
    registers through a chunk. `tile`: (channel blocks, rows, columns) of the register tile;
    `block_rows`: the default height of a block of rows (the knob `conv.block_rows`)."""
    n, cb, h, w, c = s.axes(e)
    an, acb, ah, aw, ac = anchor.spatial_names
    icb, kh, kw, ic = anchor.reduce_names
    ocf, tile_rows, owf = tile
    oh = anchor.shape[2]
    options = _block_row_options(oh, tile_rows)
    block = s.knob("conv.block_rows", options, block_rows)
    p = s.prims
    p.append(SplitOp.make(e, cb, ocf, None, f"{cb}.o", f"{cb}.i"))
    p.append(SplitOp.make(e, h, block, None, f"{h}.g", f"{h}.r"))
    p.append(ReorderOp.make(e, [n, f"{h}.g", f"{cb}.o", f"{h}.r", w, f"{cb}.i", c]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{h}.g", f"{cb}.o"], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, c))
    p.append(ComputeAtOp.make(a, e, fused))
    p.append(SplitOp.make(a, icb, chunk, None, f"{icb}.o", f"{icb}.i"))
    p.append(SplitOp.make(a, aw, owf, None, f"{aw}.o", f"{aw}.i"))
    row_tiles, tile = [ah], []  # one row a register tile
    if tile_rows > 1:  # stacked rows: unrolled inside the tile, beside its columns
        p.append(SplitOp.make(a, ah, tile_rows, None, f"{ah}.o", f"{ah}.i"))
        row_tiles, tile = [f"{ah}.o"], [f"{ah}.i"]
    reduction = [f"{icb}.i", kh, kw, ic]
    order = [an, f"{icb}.o", *row_tiles, f"{aw}.o", *reduction, *tile, f"{aw}.i", acb, ac]
    p.append(ReorderOp.make(a, order))
    p.extend(UnrollOp.make(a, x) for x in (*tile, f"{aw}.i", acb))
    p.append(VectorizeOp.make(a, ac))
    s.prefetch_weights(a, anchor, ic, anchor.shape[-1], PREFETCH_BYTES, "conv.prefetch")


def _own_input_blocks(anchor: ComputeOp, ocf: int) -> bool:
    """Whether a grouped NCHWc conv's register tiles (of `ocf` output channel blocks) read
    input channel blocks no other tile of the same rows reads: its groups have at most `ocf`
    output blocks each. Then copying a tile's padded input rows inside the tile copies
    nothing twice, where a whole padded copy of the input is one more round trip to memory:
    RegNetY-400MF's stride-2 3x3 conv of 6 groups of 8 channels at 112x112, 0.61 -> 0.29 ms.
    A dense conv's tiles all read every input block: its own only when one tile takes every
    output block (YOLO's 16 -> 32 stride-2 3x3 conv at 160x160, 0.55 -> 0.46-0.48 ms)."""
    reads = product_reads(anchor)
    if reads is None or len(anchor.reduce_shape) != 4:
        return False
    image = reads[0].tensor.type
    assert isinstance(image, TensorType)
    in_blocks = image.get_shape()[1]
    group_in_blocks = anchor.reduce_shape[0]
    if in_blocks <= group_in_blocks:  # a dense conv: every tile reads every input block,
        return anchor.shape[1] <= ocf  # which is its own when one tile takes every output block
    groups = in_blocks // group_in_blocks
    return anchor.shape[1] // groups <= ocf


def _row_group(anchor: ComputeOp, ocf: int, rows: int, groups: Sequence[int]) -> int:
    """Row tiles a group of a dense conv's parallel loop (rows, then channel-block tiles, then
    the rows of a group): the one that moves the fewest bytes between L2 and L3. Channel-block
    tiles outermost (one group) read the weights once and the input once a tile of blocks: once
    in all only where the input stays in L2. Row groups read the input once, and the weights
    once a group unless they stay in L2 beside the group's input rows. ResNet-50's 256 -> 512
    1x1 conv with stride 2 at 56x56 (3.2 MB in, 16 tiles of two blocks): 1.84 -> 1.34 ms on one
    thread in groups of 4 rows (onnxruntime 1.40); its 3x3 convs at 14x14 and 7x7 (the input
    fits) keep one group."""
    operands = _operand_bytes(anchor)
    if operands is None:
        return groups[-1]
    shape, row_bytes, w_bytes = operands
    block_tiles = -(-anchor.shape[1] // ocf)
    n_row_tiles = groups[-1]

    def traffic(g: int) -> float:
        image_bytes = row_bytes * _input_rows(anchor, g * rows, shape[2])
        n_groups = n_row_tiles // g
        if n_groups == 1:  # channel-block tiles outermost
            fits = image_bytes + w_bytes / block_tiles <= L2_BYTES * 7 // 8
            return w_bytes + image_bytes * (1 if fits else block_tiles)
        fits = image_bytes + w_bytes <= L2_BYTES // 2
        return image_bytes * n_groups + w_bytes * (1 if fits else n_groups)

    return min(reversed(groups), key=traffic)


def _operand_bytes(anchor: ComputeOp) -> tuple[Sequence[int], int, int] | None:
    """A dense conv's input shape, the bytes of one input row of one image (every channel
    block) and the bytes of its weights; None when its formula is not a plain product."""
    reads = product_reads(anchor)
    if reads is None:
        return None
    image, weights = (r.tensor.type for r in reads)
    assert isinstance(image, TensorType) and isinstance(weights, TensorType)
    size = _element_bytes(anchor)
    shape = image.get_shape()
    row_bytes = anchor.reduce_shape[0] * math.prod(shape[3:]) * size
    return shape, row_bytes, math.prod(weights.get_shape()) * size


def _column_strip(anchor: ComputeOp, rows: int, owf: int) -> int:
    """Column tiles a strip of a dense conv whose input rows are too wide for L2 takes (0: no
    strips). Rows are the unit of reuse elsewhere (row groups, `_row_group`): a tile row reads
    its kh input rows, which the next tile rows read again from L2. When the kh rows of every
    input channel block outgrow half of L2 (S3D's temporal 7 x 1 conv over T x (H * W) =
    16 x 12544: 3.2 MB a row), each input line comes from memory again for every output row
    and channel-block tile. Strips of columns outermost keep a strip's input, all its rows,
    in L2 beside the weights while every row and channel-block tile of the strip uses it."""
    operands = _operand_bytes(anchor)
    if operands is None or len(operands[0]) != 5:
        return 0
    shape, row_bytes, w_bytes = operands
    if row_bytes * _input_rows(anchor, rows, shape[2]) <= L2_BYTES // 2:
        return 0
    if w_bytes > L2_BYTES // 4:  # every strip would read the weights again from memory
        return 0
    ow = anchor.shape[3]
    tile_columns = -(-owf * shape[3] // ow)  # input columns a tile reads (its stride)
    tile_bytes = row_bytes // shape[3] * shape[2] * tile_columns  # every row of it
    strip = max((L2_BYTES // 2 - w_bytes) // tile_bytes, 1)
    return strip if strip < -(-ow // owf) else 0


def _conv2d_nchwc_small(s: KernelScheduler, anchor: ComputeOp, a: str, e: str, ocf: int) -> None:
    """A conv whose output rows are short (7x7 at the end of an ImageNet network): its weights,
    used by few output positions, dominate the traffic. The tile's channel blocks are computed
    for the whole image at once with the input-channel blocks outermost, so each block's
    weights (18 KiB) stay in L1 while every output row uses them, the row's accumulators
    (few enough to stay in registers) carried through the kernel loops. ResNet-18's 7x7
    convs: 2.25 -> 1.95 ms each on one thread."""
    n, cb, h, w, c = s.axes(e)
    an, _, ah, _, _ = anchor.spatial_names
    icb, *rest = anchor.reduce_names
    p = s.prims
    p.append(SplitOp.make(e, cb, ocf, None, f"{cb}.o", f"{cb}.i"))
    p.append(ReorderOp.make(e, [n, f"{cb}.o", h, f"{cb}.i", w, c]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{cb}.o"], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, c))
    p.append(ComputeAtOp.make(a, e, fused))
    _conv_register_tile(s, anchor, a, [an, icb, ah, *rest])


def _conv_register_tile(
    s: KernelScheduler, anchor: ComputeOp, a: str, outer: list[str], rows: Sequence[str] = ()
) -> None:
    """The conv's loops: `outer`, then the register tile: `rows` (stacked output rows) and
    columns unrolled outside the channel blocks (unrolled), the channels of a block one vector.
    Knobs: the kernel taps (kh, kw) outside the input-channel blocks instead of inside them,
    and unrolled tap columns (kw) or input channels of a block (ic), as AutoTVM's x86 conv
    template unrolls kw."""
    _, acb, _, aw, ac = anchor.spatial_names
    reduce = list(anchor.reduce_names)
    if dot_packed(anchor):  # bytes: each 4 input channels one dot product per accumulator
        ic = reduce[-1]
        p = s.prims
        p.append(SplitOp.make(a, ic, 4, None, f"{ic}.o", f"{ic}.i"))
        outer = [f"{ic}.o" if x == ic else x for x in outer]
        p.append(ReorderOp.make(a, [*outer, *rows, aw, acb, ac, f"{ic}.i"]))
        p.extend(UnrollOp.make(a, axis) for axis in (*rows, aw, acb))
        p.append(dot_or_vectorize(s, a, ac, anchor.shape[-1]))
        return
    columns = [aw]
    narrow = len(reduce) == 4 and _lanes_read_across(anchor)
    if narrow:
        # a block over narrow groups: each input pixel's block is shuffled once per channel of
        # a group (lanes of each group take their own channel) and feeds the tile's output
        # columns of every tap column: kw unrolled inside the columns, so LLVM computes one
        # shuffle for columns ow + kw that meet and keeps it only for the next two columns.
        # RegNetY's 104-channel 3x3 conv in groups of 8 at 28x28: 0.104 ms in NCHW8c blocks,
        # 0.086 with the taps outside the columns (a shuffle per multiply-add), 0.061 so
        kw, ic = reduce[2:]
        outer = [*(x for x in outer if x not in (kw, ic)), ic]
        columns = [aw, kw]
        s.prims.append(UnrollOp.make(a, kw))
    elif len(reduce) == 4:  # (icb, kh, kw, ic): a dense NCHWc conv
        icb, kh, kw, ic = reduce
        if s.knob("conv.taps_outside", [False, True], False):
            at = outer.index(icb)
            rest = [x for x in outer[at:] if x not in (icb, kh, kw)]
            outer = [*outer[:at], kh, kw, icb, *rest]
        for name, axis in (("conv.unroll_kw", kw), ("conv.unroll_ic", ic)):
            if anchor.reduce_shape[reduce.index(axis)] > 1 and s.knob(name, [False, True], False):
                s.prims.append(UnrollOp.make(a, axis))
    if len(reduce) == 3 and anchor.reduce_shape[2] > 1 and reduce[0] in outer:
        # (ic, kh, kw) of an unblocked input (a 3-channel stem): LLVM unrolls the short
        # innermost tap loop, and the taps' broadcasts at columns shared by neighbouring
        # output columns (stride < kw) became common values held across the unrolled body,
        # 13 of them spilled per row of taps; with kw outermost the unrolled loops read
        # distinct rows. MobileNetV2's stem 0.225 -> 0.181 ms
        ic, kh, kw = reduce
        if s.knob("conv.kw_outer", [False, True], True):
            at = outer.index(ic)
            outer = [*outer[:at], kw, ic, kh, *[x for x in outer[at:] if x not in reduce]]
    s.prims.append(ReorderOp.make(a, [*outer, *rows, *columns, acb, ac]))
    s.prims.extend(UnrollOp.make(a, axis) for axis in (*rows, aw, acb))
    s.prims.append(VectorizeOp.make(a, ac))
    if len(reduce) == 4:  # a dense conv: its weight rows, one block of output channels each
        # (not narrow groups': their few weights stay in L1)
        s.prefetch_weights(
            a, anchor, reduce[-1], anchor.shape[-1], PREFETCH_BYTES, "conv.prefetch", not narrow
        )


def _lanes_read_across(anchor: ComputeOp) -> bool:
    """Whether a conv's input read moves with its output channel (the vector's lanes): a block
    of output channels over groups narrower than the block, each lane reading its own group's
    channels (see `_pattern_load` in te_to_loops/vectorize.py)."""
    reads = product_reads(anchor)
    if reads is None or not anchor.shape:
        return False
    lanes = anchor.block.args[len(anchor.shape) - 1]
    return depends_on(reads[0].indices[-1], lanes)


def _conv_tile(
    ow: int,
    oh: int,
    ncb: int,
    budget: int,
    max_cols: int,
    max_blocks: int,
    max_rows: int = 1,
    tails: bool = True,
) -> tuple[int, int, int]:
    """(channel blocks, output rows, output columns) of a conv register tile: the most useful
    accumulators within the budget, at most `max_cols` pixels (each broadcast once per input
    channel, used by every block). Columns, rows and channel blocks need not divide the
    output: the last tile of a row (or of the rows, or of an odd count of blocks) is a guarded
    tail (still a register tile; channels padded to whole blocks often leave an odd count:
    SqueezeNet's 1000 classes in 63 blocks ran one block a tile, 134 -> 157 GFLOP/s with
    two; MnasNet 0.92x, EfficientNet-B0 0.90x of the time), so a tile is scored by the accumulators it keeps busy over the image (17
    columns: 2 blocks x 6 columns, 6% of them idle in the tail, instead of 1 x 4); on a tie,
    more channel blocks (half the broadcasts per multiply-add: 33 columns as 2 x 6 rather than
    1 x 11, a dilated conv 1.70 -> 1.11x onnxruntime), then fewer rows, then a dividing tile.
    Rows stack where one row cannot fill the tile: a 7x7 map takes 2 blocks x 2 rows x 7
    columns (28 accumulators busy where 2 x 7 kept 14), a 20x20 one 2 x 2 x 7 (95% busy, not
    2 x 1 x 10 at 71%), when that gains enough (STACKED_ROWS_GAIN). A depthwise conv (`tails` off, one row) is
    bound by its loads, not its multiply-adds: more columns in a tail tile only add guards
    (MobileNet's 7x7: 1.04 -> 1.40x onnxruntime), so it keeps to dividing tiles where the row
    has any."""

    def score(blocks: int, rows: int, cols: int) -> tuple[float, int, int, bool]:
        useful = _busy_accumulators(ow, oh, ncb, (blocks, rows, cols))
        return round(useful, 9), blocks, -rows, ow % cols == 0

    tails = tails or not any(ow % c == 0 for c in range(2, min(max_cols, ow) + 1))
    options = [
        (blocks, rows, cols)
        for blocks in range(1, min(max_blocks, ncb) + 1)
        if tails or ncb % blocks == 0
        for cols in range(1, min(budget // blocks, max_cols, ow) + 1)
        if tails or ow % cols == 0
        for rows in range(1, min(max_rows, budget // (blocks * cols), max_cols // cols) + 1)
    ]
    best = max(options, key=lambda o: score(*o))
    one_row = max((o for o in options if o[1] == 1), key=lambda o: score(*o))
    if score(*best)[0] < STACKED_ROWS_GAIN * score(*one_row)[0]:
        return one_row
    return best


def _busy_accumulators(ow: int, oh: int, ncb: int, tile: tuple[int, int, int]) -> float:
    """Accumulators a (channel blocks, rows, columns) register tile keeps busy on average over
    an ow x oh map of ncb blocks: its size times the share its tail tiles leave busy."""

    def busy(extent: int, size: int) -> float:
        return extent / (-(-extent // size) * size)

    blocks, rows, cols = tile
    return blocks * rows * cols * busy(ow, cols) * busy(oh, rows) * busy(ncb, blocks)


def _three_blocks(
    ow: int, ncb: int, budget: int, max_cols: int, tile: tuple[int, int, int], oh: int
) -> tuple[int, int, int]:
    """The tile of three channel blocks (one row) for a conv whose block count three divide
    and two do not, when it keeps THREE_BLOCKS_GAIN times the accumulators of `tile` busy."""

    def useful(t: tuple[int, int, int]) -> float:
        return _busy_accumulators(ow, oh, ncb, t)

    cols = max(range(1, min(budget // 3, max_cols, ow) + 1), key=lambda c: (useful((3, 1, c)), -c))
    return (3, 1, cols) if useful((3, 1, cols)) >= THREE_BLOCKS_GAIN * useful(tile) else tile


def conv2d_nchw(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, oc, oh, ow]: tiles of oc x ow (oc unrolled, ow vectors); (n, oc, oh) parallel."""
    n, oc, h, w = s.axes(e)
    an, aoc, ah, aw = anchor.spatial_names
    noc, ow = anchor.shape[1], anchor.shape[3]
    depthwise = anchor.template_name == "depthwise_conv2d_nchw"
    ocf = 1 if depthwise else noc if noc <= 4 else divisor(noc, (4, 2), 1)
    owf = _nchw_cols(ow, ocf, s.lanes(anchor.element_type))
    if not depthwise:
        ocf = s.knob("conv.channels", [c for c in (1, 2, 3, 4, 8) if noc % c == 0], ocf)
    owf = s.knob("conv.cols", [c for c in (4, 8, 16, 32, 64) if c < ow] + [ow] * (ow <= 64), owf)
    p = s.prims
    p.append(TileOp.make(e, [oc, w], [ocf, owf], [f"{oc}.o", f"{w}.o", f"{oc}.i", f"{w}.i"]))
    p.append(ReorderOp.make(e, [n, f"{oc}.o", h, f"{w}.o", f"{oc}.i", f"{w}.i"]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{oc}.o", h], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, f"{w}.i"))
    p.append(ComputeAtOp.make(a, e, f"{w}.o"))
    p.append(ReorderOp.make(a, [an, ah, *anchor.reduce_names, aoc, aw]))
    p.append(UnrollOp.make(a, aoc))
    p.append(VectorizeOp.make(a, aw))


NCHW_MIN_ACCUMULATORS = 8
"""Vector accumulators an NCHW conv's tile keeps in flight: two FMA ports of 4 cycles' latency
need 8 independent sums. A UNet's last conv (64 -> 3 channels at 128 x 128) took one channel
by one 16-column vector: one chain of dependent FMAs, 13% of the machine's peak."""


def _nchw_cols(ow: int, channels: int, lanes: int) -> int:
    """The columns of an NCHW conv's tile of `channels` output channels: whole vectors of
    `lanes`, enough that the tile holds NCHW_MIN_ACCUMULATORS sums (at most 4 vectors a
    channel), preferring a width that divides the row: a last tile of fewer columns puts a
    masked branch inside the reduction, and its accumulators stay in memory (a 3-channel
    tile of 48 columns over 128: 1.06 ms; of 64: see the test)."""
    want = min(4, -(-NCHW_MIN_ACCUMULATORS // channels))
    if ow <= want * lanes:
        return ow
    dividing = [v for v in range(1, 5) if ow % (v * lanes) == 0]
    if dividing:
        enough = [v for v in dividing if v >= want]
        return lanes * (enough[0] if enough else dividing[-1])
    if ow <= 4 * lanes and channels * -(-ow // lanes) <= NCHW_MAX_ACCUMULATORS:
        return ow  # the whole row, its last vector partial (ResNeXt's 56 columns)
    return want * lanes


NCHW_MAX_ACCUMULATORS = 16
"""At most this many vector sums in an NCHW conv's tile that takes a whole row."""
