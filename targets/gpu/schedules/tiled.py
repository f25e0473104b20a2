"""GPU templates of the contractions: each thread accumulates a small register tile of outputs
in private memory (the anchor computed at the thread's axis of its output stage, which is the
fused epilogue or a cache_write copy), so a fused matmul + bias + activation is one kernel.
matmul / dense: 16 x 16 threads per block, each a ROWS x COLS tile (4 rows);
conv2d (NCHW): a block per (image, 4-channel group) row of pixels, each thread 4 channels;
blocked layouts (NCHWc): a thread per pixel and channel block, the block its tile."""

from __future__ import annotations

import math

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import ComputeAtOp, FuseOp, ReorderOp, SplitOp, UnrollOp
from nnvm.targets.gpu.schedules.generic import GpuScheduler, bind

THREADS = 16
"""Threads along each of a matmul block's two axes (256 in all)."""
ROWS, COLS = 4, 1
"""A matmul thread's register tile: rows x columns (the columns THREADS apart). Measured on
PoCL (tests/gpu/opencl_times.py, bert2): 4 x 1 164 ms, 2 x 1 388, 8 x 1 391, 1 x 1 576,
1 x 4 1186, 2 x 4 2923: column tiles defeat PoCL's vectorizing across work-items."""
CHANNELS = 4
"""Output channels a conv thread accumulates for its pixel (each input read feeds all four)."""
MAX_BLOCK = 16
"""The widest channel block a blocked-layout thread accumulates in registers."""


def matmul(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """out[..., i, j]: blocks of (THREADS * ROWS) x (THREADS * COLS) outputs on blockIdx.(y, x),
    the batch axes fused on blockIdx.z; a thread's ROWS x COLS accumulators computed at
    threadIdx.x with the reduction outermost, unrolled; tails masked."""
    *batch, i, j = s.axes(out)
    *nb, m, n = op.shape
    rows = ROWS if m >= 2 * THREADS * ROWS else 1
    cols = COLS if n >= 2 * THREADS * COLS else 1
    ti, tj = min(THREADS, -(-m // rows)), min(THREADS, -(-n // cols))
    p = s.prims
    p.append(SplitOp.make(out, i, ti * rows, None, f"{i}.b", f"{i}.r"))
    p.append(SplitOp.make(out, f"{i}.r", rows, None, f"{i}.t", f"{i}.w"))
    p.append(SplitOp.make(out, j, tj * cols, None, f"{j}.b", f"{j}.r"))
    p.append(SplitOp.make(out, f"{j}.r", None, cols, f"{j}.w", f"{j}.t"))
    bind_output_tile(p, out, batch, nb, i, j)
    _accumulate_at(s, op, stage, out, f"{j}.t")


def bind_output_tile(p: list, out: str, batch: list[str], nb: list[int], i: str, j: str) -> None:
    """Order a split output tile (i.b, j.b, i.t, j.t, i.w, j.w) under its batch axes and bind
    it: blocks to blockIdx.(y, x), threads to threadIdx.(y, x), the batch axes (fused when
    several) to blockIdx.z."""
    tile = [f"{i}.b", f"{j}.b", f"{i}.t", f"{j}.t", f"{i}.w", f"{j}.w"]
    p.append(ReorderOp.make(out, [*batch, *tile]))
    p.append(bind(out, f"{j}.b", "blockIdx.x"))
    p.append(bind(out, f"{i}.b", "blockIdx.y"))
    p.append(bind(out, f"{j}.t", "threadIdx.x"))
    p.append(bind(out, f"{i}.t", "threadIdx.y"))
    if batch and math.prod(nb) > 1:
        z = batch[0]
        if len(batch) > 1:
            z = f"{out}.batch"
            p.append(FuseOp.make(out, batch, z))
        p.append(bind(out, z, "blockIdx.z"))


def conv2d(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """out[n, c, h, w] (NCHW, plain or depthwise): (n, c / CHANNELS) on blockIdx.y, the pixels
    over blocks of threads on blockIdx.x; each thread accumulates CHANNELS outputs of its
    pixel. A blocked layout (NCHWc) takes the generic schedule."""
    axes = s.axes(out)
    if len(axes) != 4:
        s.reduction(stage, op)
        if out != stage:
            s.injective(out, next(i.op for i in s.order if i.name == out))
        return
    n, c, h, w = axes
    channels = CHANNELS if op.shape[1] >= 2 * CHANNELS else 1
    p = s.prims
    nc, hw = f"{out}.nc", f"{out}.hw"
    p.append(SplitOp.make(out, c, channels, None, f"{c}.o", f"{c}.w"))
    p.append(ReorderOp.make(out, [n, f"{c}.o", h, w, f"{c}.w"]))
    p.append(FuseOp.make(out, [n, f"{c}.o"], nc))
    p.append(FuseOp.make(out, [h, w], hw))
    p.append(bind(out, nc, "blockIdx.y"))
    thread = hw
    if op.shape[2] * op.shape[3] <= s.block:
        p.append(bind(out, hw, "threadIdx.x"))
    else:
        thread = f"{hw}.t"
        p.append(SplitOp.make(out, hw, s.block, None, f"{hw}.b", thread))
        p.append(bind(out, f"{hw}.b", "blockIdx.x"))
        p.append(bind(out, thread, "threadIdx.x"))
    _accumulate_at(s, op, stage, out, thread, unroll=op.spatial_names[1])


def blocked(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """A blocked-layout contraction (conv2d NCHWc): a thread per position of every axis but
    the innermost channel block, whose outputs it accumulates together (unrolled), so each
    input read feeds the whole block; a block of more than MAX_BLOCK channels: generic."""
    axes, spatial = s.axes(out), list(op.spatial_names)
    if op.shape[-1] > MAX_BLOCK or len(axes) != len(spatial):
        s.reduction(stage, op)
        if out != stage:
            s.injective(out, next(i.op for i in s.order if i.name == out))
        return
    thread = s.flat(out, axes[:-1], list(op.shape[:-1]))
    assert thread is not None  # rank >= 5
    p = s.prims
    p.append(ComputeAtOp.make(stage, out, thread))
    p.append(ReorderOp.make(stage, [*spatial[:-1], *op.reduce_names, spatial[-1]]))
    p.append(UnrollOp.make(stage, spatial[-1]))


def _accumulate_at(
    s: GpuScheduler, op: ComputeOp, stage: str, out: str, thread: str, unroll: str | None = None
) -> None:
    """The anchor's tile computed inside each thread (private accumulators), its reduction
    loops outermost so every operand load feeds the whole tile."""
    spatial = list(op.spatial_names)
    p = s.prims
    p.append(ComputeAtOp.make(stage, out, thread))
    if unroll is None:
        p.append(ReorderOp.make(stage, [*spatial[:-2], *op.reduce_names, *spatial[-2:]]))
        p.append(UnrollOp.make(stage, spatial[-2]))
        p.append(UnrollOp.make(stage, spatial[-1]))
    else:
        rest = [a for a in spatial if a != unroll]
        p.append(ReorderOp.make(stage, [*rest, *op.reduce_names, unroll]))
        p.append(UnrollOp.make(stage, unroll))
