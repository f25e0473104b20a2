"""x86 schedule of dense (GEMV-like rows): vector partial sums over k, outputs interleaved."""

from __future__ import annotations

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.schedule import (
    ComputeAtOp,
    ReorderOp,
    RFactorOp,
    SplitOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.targets.cpu.schedules.scheduler import KernelScheduler, divisor


def dense(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[..., n] = sum_k x[..., k] w[n, k]: both operands are contiguous in k, so k is split
    by the vector width and rfactor-ed (vector partial sums), the outputs run in parallel.
    Up to 8 outputs of a row are computed together, their partial sums interleaved (k.o
    outside the unrolled outputs): one output's sum is a chain of dependent multiply-adds,
    eight are independent chains that fill the FMA pipelines (784x512 GEMV: 35 -> 31 us)."""
    k = anchor.reduce_names[-1]
    K = anchor.reduce_shape[-1]
    lanes = s.lanes(anchor.element_type)
    p = s.prims
    *rows, cols = anchor.spatial_names
    group = divisor(anchor.shape[-1], (8, 4, 2), 1) if rows and K >= 2 * lanes else 1
    if rows and K >= 2 * lanes:
        group = s.knob(
            "dense.outputs", [g for g in (1, 2, 4, 8) if anchor.shape[-1] % g == 0], group
        )
    axes = s.axes(e)
    if group > 1:
        *erows, ecol = axes
        p.append(SplitOp.make(e, ecol, group, None, f"{ecol}.o", f"{ecol}.i"))
        axes = [*erows, f"{ecol}.o", f"{ecol}.i"]
    outer = s.fuse(e, axes[:-1] if group > 1 else axes)
    assert outer is not None
    s.parallel(e, outer, anchor)
    inner = outer
    if a != e:
        p.append(ComputeAtOp.make(a, e, outer))
        inner = rows[0] if group > 1 else cols
    if K >= 2 * lanes:
        rf = f"{a}.rf"
        width = s.knob("dense.partial_sums", [w for w in (lanes, 2 * lanes) if K >= 2 * w], lanes)
        p.append(SplitOp.make(a, k, width, None, f"{k}.o", f"{k}.i"))
        p.append(RFactorOp.make(a, f"{k}.i", rf))
        if group > 1:
            p.append(ReorderOp.make(rf, [*rows, f"{k}.o", cols, f"{k}.i"]))
            p.append(UnrollOp.make(rf, cols))
        else:
            p.append(ReorderOp.make(rf, [*anchor.spatial_names, f"{k}.o", f"{k}.i"]))
        p.append(VectorizeOp.make(rf, f"{k}.i"))
        p.append(ComputeAtOp.make(rf, a, inner))
