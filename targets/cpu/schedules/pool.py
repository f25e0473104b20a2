"""x86 schedule of a blocked pool: a sum with its elementwise epilogue (avg_pool2d's
division), or a max written straight to the output."""

from __future__ import annotations

from nnvm.dialects.te.analysis import innermost_is_spatial
from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import CacheWriteOp, ComputeAtOp, ReorderOp, VectorizeOp
from nnvm.lowering.te_to_loops.vectorize import MAX_LANES
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler


def pool(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, cb, oh, ow, c] = sum[...] / count(oh, ow): one pass. The window sum of one
    position's channel block is computed in a vector register at the output's column loop
    and divided there, instead of a whole-tensor sum stage the division reads back with a
    div/mod per vector of its fused loop (Inception's 3x3 average pool over 35x35x192:
    0.241 -> 0.049 ms). A pool that is its own output (a max pool) gets the same register:
    a cache_write stage computed at the column, so the window's running maximum is not
    stored to the output after every tap (SqueezeNet-b4's three pools, debug profile:
    0.97 -> 0.91 ms; ResNet-50's: 0.145 -> 0.134 ms). Pools in other layouts take the
    generic schedules."""
    shape = anchor.shape
    lanes = s.lanes(anchor.element_type)
    # (the template runs on rank >= 3, and `e` is the same-shape epilogue when it is not `a`)
    blocked = innermost_is_spatial(anchor) and shape[-1] % lanes == 0 and shape[-1] <= MAX_LANES
    if blocked and a == e:
        a = f"{e}.local"
        s.prims.append(CacheWriteOp.make(e, a))
    if not blocked:
        s.reduction(a, anchor)
        if a != e:
            s.injective(e, s.stage(e))
        return
    *positions, lane = anchor.spatial_names
    s.prims.append(ReorderOp.make(a, [*positions, *anchor.reduce_names, lane]))
    s.prims.append(VectorizeOp.make(a, lane))
    *outer, column, block = s.axes(e)
    fused = s.fuse(e, outer)
    if fused is not None:
        s.parallel(e, fused, anchor)
    s.prims.append(VectorizeOp.make(e, block))
    s.prims.append(ComputeAtOp.make(a, e, column))
