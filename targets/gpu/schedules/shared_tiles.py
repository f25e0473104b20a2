"""The GPU matmul / dense template with shared-memory tiles: a block of THREADS x THREADS threads
computes a TILE x TILE output tile (blockIdx.(y, x), batch axes fused on blockIdx.z); per step of
K_STEP along the reduction, the block's TILE x K_STEP tile of the left operand and K_STEP x TILE
tile of the right one are copied into shared memory by all its threads together
(`te.cache_read ... scope "shared"` computed at the step loop, double-buffered: the two tiles of
each alternate between steps, so a step needs one barrier), and each thread accumulates a
MICRO x MICRO register tile of adjacent outputs from them (unrolled; rows and columns THREADS
apart would spare the shared tiles' 2-way bank conflicts, but the register tile is a bounding box
of what a thread computes, so it would grow to 49 x 49). Tails of M, N and K are masked by the
lowering.
Shapes it does not suit (small M or N, operands read twice or through non-affine indices) get
the register-tile template of tiled.py."""

from __future__ import annotations

from nnvm.dialects.te.ops import ComputeOp, ReadOp
from nnvm.dialects.te.schedule import (
    CacheReadOp,
    ComputeAtOp,
    DoubleBufferOp,
    ReorderOp,
    SplitOp,
    UnrollOp,
)
from nnvm.dialects.te.stage_tree import placeholder_name
from nnvm.targets.gpu.schedules.generic import GpuScheduler
from nnvm.targets.gpu.schedules.tiled import bind_output_tile
from nnvm.targets.gpu.schedules.tiled import matmul as register_matmul

THREADS = 16
"""Threads along each axis of a block (256 in all)."""
MICRO = 4
"""A thread's register tile: MICRO x MICRO adjacent outputs."""
TILE = THREADS * MICRO
"""Output rows and columns per block (64)."""
K_STEP = 16
"""Reduction elements per shared tile (A: 64 x 16, B: 16 x 64; 8 KiB of f32 together)."""
MIN_EXTENT = 32
"""M and N from which a block's tile is at least half used; smaller ones take the register
template (its blocks shrink to the output)."""


def operand_names(op: ComputeOp) -> list[str] | None:
    """The stage names of the two tensors a contraction reads, when each is read once with
    every index an axis of the compute (or a constant) and the reduction axis in both; else
    None."""
    args = list(op.block.args)
    k = args[len(op.spatial_names)] if len(op.reduce_names) == 1 else None
    names: list[str] = []
    seen = set()
    for read in op.block.ops:
        if not isinstance(read, ReadOp):
            continue
        if read.tensor in seen or k is None:
            return None
        seen.add(read.tensor)
        for idx in read.indices:
            if idx not in args and not _is_constant(idx):
                return None
        if k not in list(read.indices):
            return None
        owner = read.tensor.owner
        if isinstance(owner, ComputeOp):
            names.append(owner.stage_name)
        elif hasattr(read.tensor, "index") and read.tensor.owner is op.parent_block():
            names.append(placeholder_name(read.tensor.index))  # type: ignore[attr-defined]
        else:
            return None
    return names if len(names) == 2 else None


def _is_constant(v: object) -> bool:
    from xdsl.dialects import arith

    return isinstance(getattr(v, "owner", None), arith.ConstantOp)


def shared_matmul(s: GpuScheduler, op: ComputeOp, stage: str, out: str) -> None:
    """out[..., i, j] in TILE x TILE blocks, the anchor's MICRO x MICRO tile computed at the
    thread (threadIdx.(y, x)), its reduction split by K_STEP with both operands' tiles cached
    in shared memory at the step loop."""
    *nb, m, n = op.shape
    names = operand_names(op)
    if not s.shared or names is None or m < MIN_EXTENT or n < MIN_EXTENT:
        register_matmul(s, op, stage, out)
        return
    *batch, i, j = s.axes(out)
    (k,) = op.reduce_names
    p = s.prims
    p.append(SplitOp.make(out, i, TILE, None, f"{i}.b", f"{i}.r"))
    p.append(SplitOp.make(out, f"{i}.r", MICRO, None, f"{i}.t", f"{i}.w"))
    p.append(SplitOp.make(out, j, TILE, None, f"{j}.b", f"{j}.r"))
    p.append(SplitOp.make(out, f"{j}.r", MICRO, None, f"{j}.t", f"{j}.w"))
    bind_output_tile(p, out, batch, nb, i, j)
    spatial = list(op.spatial_names)
    p.append(ComputeAtOp.make(stage, out, f"{j}.t"))
    p.append(SplitOp.make(stage, k, K_STEP, None, f"{k}.o", f"{k}.i"))
    p.append(ReorderOp.make(stage, [*spatial[:-2], f"{k}.o", f"{k}.i", *spatial[-2:]]))
    if s.unroll_steps and op.reduce_shape[0] % K_STEP == 0:  # a partial last step would be
        p.append(UnrollOp.make(stage, f"{k}.i"))  # 16 guarded copies: slow to compile
    p.append(UnrollOp.make(stage, spatial[-2]))
    p.append(UnrollOp.make(stage, spatial[-1]))
    for side, name in zip("AB", names, strict=True):
        copy = f"{stage}.{side}.shared"
        p.append(CacheReadOp.make(name, [stage], copy, scope="shared"))
        p.append(ComputeAtOp.make(copy, stage, f"{k}.o"))
        p.append(DoubleBufferOp.make(copy))
