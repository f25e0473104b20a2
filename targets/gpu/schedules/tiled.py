"""GPU templates of the contractions: matmul / dense as 16x16 output tiles per block (a thread
per element, its reduction a serial loop) and conv2d with a block per (image, channel) row of
output pixels. Each runs as its own kernel; an output epilogue gets the generic schedule."""

from __future__ import annotations

import math

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import FuseOp, SplitOp
from nnvm.targets.gpu.schedules.generic import GpuScheduler, bind

TILE = 16
"""Rows and columns of a matmul block tile (256 threads)."""


def _epilogue(s: GpuScheduler, stage: str, out: str) -> None:
    if out != stage:
        s.injective(out, next(i.op for i in s.order if i.name == out))


def matmul(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """C[..., i, j]: blockIdx.(y, x) over the TILE x TILE tiles of (i, j), the batch axes
    fused on blockIdx.z; tails masked."""
    *batch, i, j = op.spatial_names
    *nb, m, n = op.shape
    p = s.prims
    ti, tj = min(TILE, m), min(TILE, n)
    p.append(SplitOp.make(stage, i, ti, None, f"{i}.b", f"{i}.t"))
    p.append(SplitOp.make(stage, j, tj, None, f"{j}.b", f"{j}.t"))
    p.append(bind(stage, f"{j}.b", "blockIdx.x"))
    p.append(bind(stage, f"{i}.b", "blockIdx.y"))
    p.append(bind(stage, f"{j}.t", "threadIdx.x"))
    p.append(bind(stage, f"{i}.t", "threadIdx.y"))
    if batch and math.prod(nb) > 1:
        z = batch[0]
        if len(batch) > 1:
            z = f"{stage}.batch"
            p.append(FuseOp.make(stage, batch, z))
        p.append(bind(stage, z, "blockIdx.z"))
    _epilogue(s, stage, out)


def conv2d(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """out[n, c, h, w] (NCHW, plain or depthwise): blockIdx.y over (n, c), the pixels of one
    channel over blocks of threads on blockIdx.x, so a block reads one filter."""
    n, c, h, w, *rest = op.spatial_names
    if rest:  # a blocked layout: the generic schedule
        s.reduction(stage, op)
        _epilogue(s, stage, out)
        return
    p = s.prims
    nc, hw = f"{stage}.nc", f"{stage}.hw"
    p.append(FuseOp.make(stage, [n, c], nc))
    p.append(FuseOp.make(stage, [h, w], hw))
    pixels = op.shape[2] * op.shape[3]
    p.append(bind(stage, nc, "blockIdx.y"))
    if pixels <= s.block:
        p.append(bind(stage, hw, "threadIdx.x"))
    else:
        p.append(SplitOp.make(stage, hw, s.block, None, f"{hw}.b", f"{hw}.t"))
        p.append(bind(stage, f"{hw}.b", "blockIdx.x"))
        p.append(bind(stage, f"{hw}.t", "threadIdx.x"))
    _epilogue(s, stage, out)
