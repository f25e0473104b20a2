"""x86 schedule of a blocked sum pool with its elementwise epilogue (avg_pool2d's division)."""

from __future__ import annotations

from nnvm.dialects.te.analysis import innermost_is_spatial
from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import ComputeAtOp, FuseOp, ReorderOp, VectorizeOp
from nnvm.lowering.te_to_loops.vectorize import MAX_LANES
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler


def pool(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, cb, oh, ow, c] = sum[...] / count(oh, ow): one pass. The window sum of one
    position's channel block is computed in a vector register at the output's column loop
    and divided there, instead of a whole-tensor sum stage the division reads back with a
    div/mod per vector of its fused loop (Inception's 3x3 average pool over 35x35x192:
    0.241 -> 0.049 ms). Pools in other layouts (or with no epilogue) take the generic
    schedules."""
    epilogue = next(info.op for info in s.order if info.name == e)
    shape = anchor.shape
    lanes = s.lanes(anchor.element_type)
    blocked = (
        a != e
        and len(shape) >= 3
        and innermost_is_spatial(anchor)
        and shape[-1] % lanes == 0
        and shape[-1] <= MAX_LANES
        and epilogue.shape == shape
    )
    if not blocked:
        s.reduction(a, anchor)
        if a != e:
            s.injective(e, epilogue)
        return
    axes = s.axes(e)
    p = s.prims
    *positions, lane = anchor.spatial_names
    p.append(ReorderOp.make(a, [*positions, *anchor.reduce_names, lane]))
    p.append(VectorizeOp.make(a, lane))
    outer = f"{e}.outer"
    p.append(FuseOp.make(e, axes[:-2], outer))
    s.parallel(e, outer, anchor)
    p.append(VectorizeOp.make(e, axes[-1]))
    p.append(ComputeAtOp.make(a, e, axes[-2]))
