"""x86 schedule of dense over bytes (u8 activations, int8 weights packed [N/L, K/4, L, 4],
int32 results): register tiles of rows x L-lane column blocks, each step of 4 k one byte
dot product per accumulator (`te.tensorize ... with "dot_u8i8"`: vpdpbusd with VNNI)."""

from __future__ import annotations

from xdsl.dialects.builtin import i8, i32

from nnvm.dialects.nnvm.nn import DOT_BYTES
from nnvm.dialects.te.ops import ComputeOp, ReadOp
from nnvm.dialects.te.schedule import (
    Primitive,
    ReorderOp,
    SplitOp,
    TensorizeOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.targets.cpu.dot_bytes import NAME
from nnvm.targets.cpu.schedules.matmul import row_tile, tile_at_accumulators
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler

DOT_ACCUMULATORS = 24
"""Accumulator vectors of a register tile: of AVX-512's 32 registers, up to 4 hold the
weight vectors of a step and one the broadcast activation word."""


def packed_lanes(anchor: ComputeOp) -> int:
    """L of the packed [.., L, 4] int8 weight the formula reads (0: none)."""
    for op in anchor.block.ops:
        if isinstance(op, ReadOp):
            t = op.tensor.type  # type: ignore[attr-defined]
            shape = t.get_shape()
            if t.element_type == i8 and len(shape) >= 4 and shape[-1] == DOT_BYTES:
                return shape[-2]
    return 0


def dot_packed(anchor: ComputeOp) -> bool:
    """Does the stage sum int32 products of bytes with a weight packed for dot products?"""
    return anchor.element_type == i32 and anchor.reduce_kind == "sum" and packed_lanes(anchor) > 0


def dense_dot_bytes(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[b.., i, j] = sum_k u8 x[b.., i, k] * i8 w[j, k]: tiles of `rows` x `cols` outputs;
    the tiles of one column panel run one after another (the panel's K x cols bytes stay in
    L1 for K up to 256 at 64 columns, in L2 beyond), the tile loops are one parallel loop.
    Inside a tile, for each 4 k: one broadcast word of x per row, one vector of w per L
    columns, a dot product per accumulator."""
    *abatch, ai, aj = anchor.spatial_names
    (k,) = anchor.reduce_names
    m, n = anchor.shape[-2], anchor.shape[-1]
    lanes = packed_lanes(anchor)
    blocks = n // lanes
    widths = [v for v in (1, 2, 4) if blocks % v == 0]
    cols = s.knob("dense_dot.cols", widths, widths[-1])
    rows = row_tile(m, max(DOT_ACCUMULATORS // cols, 1))
    rows = s.knob("dense_dot.rows", range(1, min(m, DOT_ACCUMULATORS) + 1), rows)
    nf = cols * lanes
    p = s.prims
    tile_at_accumulators(s, anchor, a, e, rows, nf, panels_outside=True)
    p.append(SplitOp.make(a, aj, lanes, None, f"{aj}.o", f"{aj}.i"))
    p.append(SplitOp.make(a, k, 4, None, f"{k}.o", f"{k}.i"))
    p.append(ReorderOp.make(a, [*abatch, f"{k}.o", ai, f"{aj}.o", f"{aj}.i", f"{k}.i"]))
    p.append(UnrollOp.make(a, ai))
    p.append(UnrollOp.make(a, f"{aj}.o"))
    p.append(dot_or_vectorize(s, a, f"{aj}.i", lanes))


def dot_or_vectorize(s: KernelScheduler, stage: str, axis: str, lanes: int) -> Primitive:
    """te.tensorize with the target's dot_u8i8 when its lanes are the packing's (a weight
    packed for 16 lanes on an 8-lane target, say by a hand-written graph, is computed as
    vectors of int32 products instead: exact, slower)."""
    if lanes == s.lanes(i32):
        return TensorizeOp.make(stage, axis, NAME)
    return VectorizeOp.make(stage, axis)
