"""The te kernel of nnvm.resize (kept out of resize.py, which imports it when lowering): one
stage per resampled axis, reading constant tables of taps and weights."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

if TYPE_CHECKING:
    from nnvm.dialects.nnvm.resize import ResizeOp


def resize_kernel(op: ResizeOp, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
    """One stage per resampled axis (resizing is separable); the tap indices and weights
    depend only on the output position, so they are computed here and kept as constant
    tables (exactly the reference's)."""
    (x,) = inputs
    cur = x
    extrapolate = op.attr("coordinate_transformation_mode") == "tf_crop_and_resize"
    off_tables: list[tuple[int, TensorRef]] = []
    for axis, out_len in enumerate(op.attr("size")):
        in_len = x.shape[axis]
        coords = op.axis_coordinates(axis, in_len, out_len)
        if extrapolate:
            off = (coords < 0) | (coords > in_len - 1)
            if off.any():
                off_tables.append((axis, b.constant(off.astype(np.bool_))))
        if out_len == in_len and np.array_equal(coords, np.arange(in_len, dtype=np.float32)):
            continue
        taps, weights = op.taps(axis, coords, in_len)
        tap_t = b.constant(taps.astype(np.int64))
        w_t = b.constant(weights.astype(np.float32)) if weights is not None else None
        shape = list(cur.shape)
        shape[axis] = out_len
        src = cur

        def body(
            *i: Expr,
            src: TensorRef = src,
            axis: int = axis,
            tap_t: TensorRef = tap_t,
            w_t: TensorRef | None = w_t,
            count: int = taps.shape[1],
        ) -> Expr:
            total: Expr | None = None
            for k in range(count):
                j = list(i)
                j[axis] = topi.to_index(tap_t[i[axis], k])
                v = src[j]
                if w_t is not None:
                    v = v * te.cast(w_t[i[axis], k], v.type)
                total = v if total is None else total + v
            assert total is not None
            return total

        cur = b.compute(shape, body, name=f"axis{axis}", dtype=x.dtype)
    if off_tables:
        value = op.attr("extrapolation_value")
        fill = value if is_float(x.dtype) else int(value)
        final = cur

        def mask(*i: Expr) -> Expr:
            conds = [t[i[a]] for a, t in off_tables]
            anywhere = conds[0]
            for c in conds[1:]:
                anywhere = anywhere | c
            return te.select(anywhere, fill, final[i])

        cur = b.compute(final.shape, mask)
    if cur is x:
        cur = b.copy(x)
    return [cur]
