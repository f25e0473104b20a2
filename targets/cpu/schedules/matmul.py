"""x86 schedule of matmul: register tiles of rows x vectors, row blocks sized for L2."""

from __future__ import annotations

import math

from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import (
    ComputeAtOp,
    ReorderOp,
    SplitOp,
    TileOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler

ROW_BLOCK_BYTES = 1024 * 1024
"""The left-operand rows one block of matmul row tiles reads (half of a 2 MiB L2: the column
panel of the right operand and the output share it). Every block reads the whole right operand
again, from memory when a model's weights do not stay in cache, and the first tile on each
panel waits for it: ViT's 197 x 768 rows in one block instead of two, 1.10 -> 1.03x onnxruntime
(1 thread; 1.07 -> 1.00 at 2), the projections of the model 93 -> 83 ms."""
K_BLOCKED_DEPTH = 1024
"""From this depth the reduction runs in blocks (GotoBLAS's kc): a whole column panel of the
right operand (3072 x 16 floats, 192 KiB) and the left rows of a tile no longer stay in L1."""
PANEL_SLICE_BYTES = 16 * 1024
"""One depth block of a column panel (kc x the tile's columns), read by every row tile of a
block from L1: half of a 32 KiB L1, the left operand's rows and the accumulators share it."""
FEW_TILES_SLICE_BYTES = 8 * 1024
"""The depth block of a matmul with few row tiles (see FEW_ROW_TILES), whose weights stream
from memory once: 64 x 32 floats. Half the usual slice: BERT-6L (16 tokens) 0.94-0.95x on one
thread, 0.89x on two; the tuner picked it for three of BERT's four projections, timed with
warm and with flushed weights (nnvm-tune --flush-cache). Alone with warm weights 7 x 3072 .
3072 x 3072 is 0.92x, 7 x 768 . 768 x 3072 1.14x (still 2.8x numpy's time)."""
DEPTH_BLOCK_BYTES = 128 * 1024
"""One depth block of a column panel when many row tiles share it (at most half the depth):
read from L2 it costs little more than from L1, and each depth block is one more pass over
the block's accumulators (see `_k_blocked`). kc 1024 instead of 128, against numpy's sgemm on
one thread (bench/gemm.py): 1000x3072 . 3072x3072 0.83 -> 0.93x, 1000x1536 . 1536x3072 0.74-0.81
-> 0.92x, 1000x3072 . 3072x768 0.84 -> 0.95x, 197x3072 . 3072x768 1.01-1.13 -> 1.19-1.27x."""
STREAMS = 2
"""The parts a matmul with few row tiles splits its depth into, one row of each part per
iteration of the depth loop (the knob `matmul.streams`): its weights stream from memory once,
and two sequential streams (rows k and k + K/2 of a column panel) keep more cache lines in
flight than one (the core overlaps its multiply-adds with more of the memory reads). BERT's
16 x 768 . 768 x 3072 with flushed weights 1.07 -> 0.95 ms (a plain read of those 9.4 MB takes
0.60); in fresh-process A/B (medians of 5), BERT-6L 0.97x / 0.96x of the time on 1 / 2
threads, GPT-2-4L 0.95x / 0.95x, LLaMA-4L 0.99x. A GEMV keeps one stream (no gain alone,
an LSTM's 3-6% slower)."""
PREFETCH_KNOB = "matmul.prefetch_rows"
PREFETCH_BYTES = 4096
"""How far ahead of the depth loop of a depth-blocked matmul its column panel is prefetched (a
software prefetch a few hundred cycles before the row is read: the hardware's streamers
start over at each 4 KiB page and keep few lines in flight for one stream)."""
RESIDENT_RIGHT_BYTES = 512 * 1024
ROW_MAJOR_OUTPUT_BYTES = 4 * 1024 * 1024
"""A matmul whose right operand stays in L2 (at most RESIDENT_RIGHT_BYTES) and whose output
is large (ROW_MAJOR_OUTPUT_BYTES or more: attention scores, q . k^T over a short head
dimension) runs its row tiles outermost, each tile sweeping every column panel, instead of
every row tile on one panel at a time: the output is written row by row, each line whole
while it is in cache, where a panel's tiles wrote 128-byte pieces of rows 3000 bytes apart.
Whisper's 750-frame attention scores (4 x 750 x 64 . 64 x 750) 5.7 -> 2.9 ms in the model
(2.6 -> 2.15 ms alone); the right operand is read from L2 by every tile either way."""
GEMV_ROWS = 2
"""Rows up to which a matmul is a GEMV: its register tile is one row of 8 vectors (or 4), and
its weights are not prefetched: it reads them as one sequential stream per panel, which the
hardware's prefetchers follow (with the weight in cache, 768 . 768x768 51 -> 46 us; from memory,
3072 . 3072x3072 1.33 / 1.35 ms with / without, within noise; an LSTM's steps alike)."""
FEW_ROW_TILES = 3
"""Row tiles up to which a matmul blocks its reduction at any depth (see `matmul`), its tiles
of (nearly) equal height (`balanced_row_tile`). With three tiles of 14 + 14 + 1 rows (LLaMA's
29 tokens) the blocked nest was 6% slower end to end; with 10 + 10 + 9 it is faster. With the
weights flushed (the weights of a model's layer are out of cache when it runs again), GPT-2's
32 x 512 . 512 x 2048 + GELU 0.69 -> 0.60 ms, its 32 x 2048 . 2048 x 512 0.70 -> 0.59,
LLaMA's 29 x 512 . 512 x 1376 + SiLU gate 0.48 -> 0.38, 29 x 512 . 512 x 512 0.17 -> 0.15."""
STREAMED_TILES = 2
"""Row tiles up to which a few-tile matmul streams its depth in parts (see STREAMS): with
three, two streams were slower in three of four projections of GPT-2 and LLaMA (0.57 -> 0.64
ms on GPT-2's 32 x 512 . 512 x 2048, weights flushed)."""
BLOCK_TILES = 32
"""Row tiles of one block of a depth-blocked matmul: their accumulators (32 x 6 x 16 floats,
12 KiB) live in a buffer across the depth blocks."""


def matmul(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[b..., i, j] = sum_k x[b..., i, k] y[b..., k, j]: register tiles of rows x one or two
    vectors of columns (as many accumulators as the target's registers allow: 14x2 zmm, 6x2
    ymm), rows unrolled. The row tiles are grouped in blocks (i.b) whose rows of x fit in
    ROW_BLOCK_BYTES; the tiles of one block run one after another on each column panel of y
    (i.t innermost), so the panel is read from L2 by all but the first of them instead of
    from memory: 1024^3 went from 0.6x to 0.95x numpy's sgemm on one thread. The tile loops,
    in that order, are one parallel loop (threads take runs of consecutive tiles)."""
    *batch, i, j = s.axes(e)
    *abatch, ai, aj = anchor.spatial_names
    m, n = anchor.shape[-2], anchor.shape[-1]
    vec = s.lanes(anchor.element_type)
    budget = s.accumulators
    nf = n if n <= 2 * vec else 2 * vec  # a last tile past N runs as masked vectors
    if m <= GEMV_ROWS:  # a GEMV: spend the accumulators on columns (independent FMA chains)
        nf = next((v * vec for v in (8, 4) if n % (v * vec) == 0 and v * m <= budget), nf)
    # whole vectors that tile a packed operand's column panels (three vectors of a 32-wide
    # panel straddle panels: index math per element, measured 60x slower)
    widths = [v * vec for v in (1, 2, 4) if v * vec < n and v <= budget]
    nf = s.knob("matmul.cols", [*widths, *([n] if n <= 4 * vec else [])], nf)
    rows = max(budget // max(-(-nf // vec), 1), 1)
    depth = math.prod(anchor.reduce_shape)
    blockable = len(anchor.reduce_names) == 1 and depth >= 2 * vec  # a depth to split in blocks
    few = blockable and -(-m // rows) <= FEW_ROW_TILES
    mf = balanced_row_tile(m, rows) if few else row_tile(m, rows)
    mf = s.knob("matmul.rows", range(1, min(m, rows) + 1), mf)
    tiles = -(-m // mf)
    elt_bytes = max(element_bits(anchor.element_type) // 8, 1)
    kc = max(vec, PANEL_SLICE_BYTES // (nf * elt_bytes))
    if blockable:
        # few row tiles (a 16-token projection: 2): the weight panel streams from memory once
        # while every tile reuses each kc slice from L1, instead of the first tile waiting on
        # memory for the whole panel and the others rereading it (BERT seq 16: 1.17 -> 1.11x
        # onnxruntime; 16x768 . 768x3072 0.82 -> 0.69 ms with a warm weight)
        few_tiles = tiles <= FEW_ROW_TILES
        blocked = (depth >= K_BLOCKED_DEPTH or few_tiles) and depth >= 2 * kc
        if blocked and not few_tiles:
            kc = max(kc, min(DEPTH_BLOCK_BYTES // (nf * elt_bytes), depth // 2) // vec * vec)
        if few_tiles:
            kc = max(vec, FEW_TILES_SLICE_BYTES // (nf * elt_bytes) // vec * vec)
        depths = [d for d in (64, 128, 256, 512) if depth >= 2 * d]
        kc = s.knob("matmul.depth_block", [0, *depths, kc], kc if blocked else 0)
        if kc:
            # not a GEMV's: an LSTM's, its weights in L2 for every step, ran 3-6% slower
            two = tiles <= STREAMED_TILES and m > 2 and depth % (STREAMS * kc) == 0
            streams = STREAMS if two else 1
            ways = [1, *(w for w in (2, 4) if depth % (w * kc) == 0)]
            if len(ways) > 1:
                streams = s.knob("matmul.streams", ways, streams)
            _k_blocked(s, anchor, a, e, mf, nf, kc, streams)
            return
    tile_bytes = max(mf * depth * elt_bytes, 1)  # K may be 0
    per_block = max(1, min(tiles, ROW_BLOCK_BYTES // tile_bytes))
    out_bytes = math.prod(anchor.shape) * elt_bytes
    if depth * n * elt_bytes <= RESIDENT_RIGHT_BYTES and out_bytes >= ROW_MAJOR_OUTPUT_BYTES:
        per_block = 1  # row tiles outermost: each writes whole output rows, panel by panel
    per_block = s.knob("matmul.block_tiles", _powers_up_to(tiles), per_block)
    p = s.prims
    p.append(TileOp.make(e, [i, j], [mf, nf], [f"{i}.o", f"{j}.o", f"{i}.i", f"{j}.i"]))
    p.append(SplitOp.make(e, f"{i}.o", per_block, None, f"{i}.b", f"{i}.t"))
    p.append(ReorderOp.make(e, [*batch, f"{i}.b", f"{j}.o", f"{i}.t", f"{i}.i", f"{j}.i"]))
    par = s.fuse(e, [*batch, f"{i}.b", f"{j}.o", f"{i}.t"])
    assert par is not None
    s.parallel(e, par, anchor)
    p.append(VectorizeOp.make(e, f"{j}.i"))
    p.append(ComputeAtOp.make(a, e, par))
    p.append(ReorderOp.make(a, [*abatch, *anchor.reduce_names, ai, aj]))
    p.append(UnrollOp.make(a, ai))
    p.append(VectorizeOp.make(a, aj))
    if len(anchor.reduce_names) == 1:
        r = anchor.reduce_names[0]
        s.prefetch_weights(a, anchor, r, nf, PREFETCH_BYTES, PREFETCH_KNOB, on=m > GEMV_ROWS)


def _k_blocked(
    s: KernelScheduler, anchor: ComputeOp, a: str, e: str, mf: int, nf: int, kc: int,
    streams: int = 1,
) -> None:  # fmt: skip
    """The matmul with its reduction in blocks of `kc`: each thread takes a block of row
    tiles on one column panel; the accumulators of the block's tiles live in a small buffer
    across the depth blocks (`a`, computed at the panel), and for each depth block every row
    tile runs its register tile over the same kc x nf slice of the panel, which stays in L1.
    On one thread against numpy's sgemm: 1000 x 3072 . 3072 x 768 0.74x -> 0.92x,
    7 x 3072 . 3072 x 3072 0.60x -> 0.83x (bench/gemm.py).

    With more than one tile in a block, the weights are prefetched one depth block ahead,
    the fetch spread over the tiles (te.prefetch's `spread`): the tiles of a block all read
    one depth block, so the first of them used to wait on memory for it while the others
    found it in cache, the stream and the multiply-adds one after the other. Spread, the next
    block streams in at a steady pace while every tile computes. With the weights flushed
    (the tuner's runner), BERT's 16 x 3072 . 3072 x 768 1.07 -> 0.86 ms; end to end on one
    thread, over two interleaved rounds of `python -m bench --suite real` each, BERT-6L
    (16 tokens) 17.9-18.1 -> 15.3-15.6 ms (2 threads 9.7-10.5 -> 8.1-9.4), GPT-2-4L 8.2-8.5
    -> 7.6-7.8 ms, DistilBERT 47.9-49.9 -> 46.4-47.4 ms; LLaMA-4L and ViT within noise."""
    *abatch, ai, aj = anchor.spatial_names
    (r,) = anchor.reduce_names
    m = anchor.shape[-2]
    tiles = -(-m // mf)
    per_block = -(-tiles // -(-tiles // BLOCK_TILES))  # blocks of (nearly) equal height
    per_block = s.knob("matmul.block_tiles", _powers_up_to(tiles), per_block)
    p = s.prims
    tile_at_accumulators(s, anchor, a, e, mf * per_block, nf, panels_outside=False)
    p.append(SplitOp.make(a, ai, mf, None, f"{ai}.o", f"{ai}.i"))
    streamed = []
    if streams > 1:  # the depth in `streams` parts, one iteration of each part at a time
        depth = anchor.reduce_shape[0]
        p.append(SplitOp.make(a, r, depth // streams, None, f"{r}.s", f"{r}.h"))
        r, streamed = f"{r}.h", [f"{r}.s"]
    p.append(SplitOp.make(a, r, kc, None, f"{r}.o", f"{r}.i"))
    p.append(ReorderOp.make(a, [*abatch, f"{r}.o", f"{ai}.o", f"{r}.i", *streamed, f"{ai}.i", aj]))
    p.extend(UnrollOp.make(a, x) for x in (*streamed, f"{ai}.i"))
    p.append(VectorizeOp.make(a, aj))
    # with several tiles, the next depth block, fetched at a steady pace by all of them
    spread = f"{ai}.o" if per_block > 1 else None
    elt_bytes = max(element_bits(anchor.element_type) // 8, 1)
    distance = kc * nf * elt_bytes if spread else PREFETCH_BYTES
    s.prefetch_weights(
        a, anchor, f"{r}.i", nf, distance, PREFETCH_KNOB, on=m > GEMV_ROWS, spread=spread
    )


def row_tile(m: int, rows: int) -> int:
    """Rows of a register tile over m rows, at most `rows`: a divisor of m that needs no more
    tiles than full-height ones would, else full-height tiles and a tail (a full tile runs
    unguarded): 196 rows take 6-row tiles and a tail of 4, not 49 tiles of 4; 8 rows take two
    tiles of 4."""
    tiles = -(-m // rows)
    return next((d for d in range(rows, 1, -1) if m % d == 0 and m // d <= tiles), min(m, rows))


def balanced_row_tile(m: int, rows: int) -> int:
    """Rows of a register tile over m rows, at most `rows`, in as few tiles as full-height
    ones need, the tiles of (nearly) equal height: 32 rows at 14 take 11 + 11 + 10, not
    14 + 14 + 4. A short last tile of a depth-blocked nest reads its slice of the panel for
    little work, and its share of the spread prefetch comes too early."""
    return -(-m // -(-m // rows)) if m else 1


def tile_at_accumulators(
    s: KernelScheduler,
    anchor: ComputeOp,
    a: str,
    e: str,
    rows: int,
    cols: int,
    panels_outside: bool,
) -> str:
    """The output `e` in tiles of rows x cols (column panels outside the row tiles, or
    inside), the tile loops fused into one parallel loop, the columns a vector; the
    accumulators `a` computed at that loop. Returns the parallel loop's name."""
    *batch, i, j = s.axes(e)
    tiles = [f"{j}.o", f"{i}.o"] if panels_outside else [f"{i}.o", f"{j}.o"]
    p = s.prims
    p.append(TileOp.make(e, [i, j], [rows, cols], [f"{i}.o", f"{j}.o", f"{i}.i", f"{j}.i"]))
    p.append(ReorderOp.make(e, [*batch, *tiles, f"{i}.i", f"{j}.i"]))
    par = s.fuse(e, [*batch, *tiles])
    assert par is not None
    s.parallel(e, par, anchor)
    p.append(VectorizeOp.make(e, f"{j}.i"))
    p.append(ComputeAtOp.make(a, e, par))
    return par


def _powers_up_to(n: int) -> list[int]:
    """1, 2, 4, ... below n, and n: block sizes a knob may take."""
    out = [1]
    while out[-1] * 2 < n:
        out.append(out[-1] * 2)
    return [*out, n] if n > 1 else out
