"""Converters that compose graph ops: OneHot, Trilu, Hardmax and LpNormalization (masks and
normalizations built from comparisons, where, reductions and constants), and the ops whose
result shape depends on the input's values (NonZero, Unique, Compress), which fold when that
input is known at import time and are refused with a clear reason otherwise."""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from nnvm.frontend.onnx.builder import Known, NeedsKnownValue, Unsupported, Value
from nnvm.frontend.onnx.registry import NodeContext, converter


def _axis(ctx: NodeContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _as_int64(ctx: NodeContext, v: Value) -> Value:
    return v if ctx.dtype(v) == np.int64 else ctx.emit("nnvm.cast", v, to="int64")


@converter("OneHot", attrs=("axis",))
def _one_hot(ctx: NodeContext) -> list[Value | None]:
    """values[1] where the (wrapped) index equals the position on the new axis, else values[0];
    indices outside [-depth, depth) select nothing."""
    indices, values = ctx.required(0), ctx.required(2)
    depth = ctx.int_const(1, "depth")
    assert depth is not None
    if depth < 0:
        raise Unsupported(f"depth must be non-negative, got {depth}")
    if ctx.shape(values) != (2,):
        raise Unsupported(f"values must have shape [2], got {list(ctx.shape(values))}")
    rank = ctx.rank(indices) + 1
    axis = _axis(ctx, int(ctx.attr("axis", -1)), rank)
    idx = _as_int64(ctx, indices)
    negative = ctx.emit("nnvm.less", idx, ctx.scalar(0, idx))
    idx = ctx.emit("nnvm.where", negative, ctx.emit("nnvm.add", idx, ctx.scalar(depth, idx)), idx)
    idx = ctx.emit("nnvm.expand_dims", idx, axes=[axis])
    positions = [1] * rank
    positions[axis] = depth
    grid = ctx.known(np.arange(depth, dtype=np.int64).reshape(positions), tag="positions")
    hot = ctx.emit("nnvm.equal", idx, grid)
    off = ctx.emit("nnvm.slice", values, starts=[0], ends=[1], axes=[0], steps=[1])
    on = ctx.emit("nnvm.slice", values, starts=[1], ends=[2], axes=[0], steps=[1])
    off = ctx.emit("nnvm.reshape", off, shape=[])
    on = ctx.emit("nnvm.reshape", on, shape=[])
    return [ctx.emit("nnvm.where", hot, on, off)]


@converter("Trilu", attrs=("upper",))
def _trilu(ctx: NodeContext) -> list[Value | None]:
    """Keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes."""
    x = ctx.required(0)
    k_given = ctx.int_const(1, "k")
    k = 0 if k_given is None else k_given
    shape = ctx.shape(x)
    if len(shape) < 2:
        raise Unsupported(f"the input must have rank >= 2, got {len(shape)}")
    rows, cols = shape[-2], shape[-1]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = offset >= k if ctx.flag("upper", 1) else offset <= k
    zero = ctx.known(np.zeros((), dtype=ctx.dtype(x)), tag="zero")
    return [ctx.emit("nnvm.where", ctx.known(keep, tag="triangle"), x, zero)]


@converter("Hardmax", attrs=("axis",))
def _hardmax(ctx: NodeContext) -> list[Value | None]:
    """1 at the first maximum along the axis, 0 elsewhere (before opset 13: over the input
    coerced to 2-D at `axis`)."""
    x = ctx.required(0)
    shape = ctx.shape(x)
    rank = len(shape)
    axis = _axis(ctx, int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1)), rank)
    flat = x
    if ctx.opset < 13:
        flat = ctx.emit("nnvm.reshape", x, shape=[math.prod(shape[:axis]), math.prod(shape[axis:])])
        axis = 1
    n = ctx.shape(flat)[axis]
    first = ctx.emit("nnvm.argmax", flat, axis=axis, keepdims=True, select_last_index=False)
    positions = [1] * ctx.rank(flat)
    positions[axis] = n
    grid = ctx.known(np.arange(n, dtype=np.int64).reshape(positions), tag="positions")
    hot = ctx.emit("nnvm.equal", first, grid)
    one = ctx.known(np.ones((), ctx.dtype(x)), tag="one")
    zero = ctx.known(np.zeros((), ctx.dtype(x)), tag="zero")
    y = ctx.emit("nnvm.where", hot, one, zero)
    return [y if ctx.opset >= 13 else ctx.emit("nnvm.reshape", y, shape=list(shape))]


@converter("LpNormalization", attrs=("axis", "p"))
def _lp_normalization(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axis = _axis(ctx, int(ctx.attr("axis", -1)), ctx.rank(x))
    p = int(ctx.attr("p", 2))
    if p == 1:
        norm = ctx.emit("nnvm.sum", ctx.emit("nnvm.abs", x), axes=[axis], keepdims=True)
    elif p == 2:
        squares = ctx.emit("nnvm.sum", ctx.emit("nnvm.mul", x, x), axes=[axis], keepdims=True)
        norm = ctx.emit("nnvm.sqrt", squares)
    else:
        raise Unsupported(f"p must be 1 or 2, got {p}")
    # an all-zero slice stays zero (divided by 1, not by its zero norm)
    zero = ctx.emit("nnvm.equal", norm, ctx.scalar(0, norm))
    return [ctx.emit("nnvm.div", x, ctx.emit("nnvm.where", zero, ctx.scalar(1, norm), norm))]


def _known_input(ctx: NodeContext, k: int, what: str) -> np.ndarray:
    v = ctx.required(k)
    if isinstance(v, Known):
        return v.array
    assert isinstance(v, SSAValue)
    raise NeedsKnownValue(
        f"{what} has a shape that depends on the values of input #{k}; nnvm compiles static "
        "shapes, so that input must be known at import time (a constant, or pass it to "
        "from_onnx(known_inputs=...))",
        v,
    )


@converter("NonZero")
def _non_zero(ctx: NodeContext) -> list[Value | None]:
    x = _known_input(ctx, 0, "NonZero's output")
    return [ctx.known(np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1), tag="nz")]


@converter("Unique", attrs=("axis", "sorted"))
def _unique(ctx: NodeContext) -> list[Value | None]:
    x = _known_input(ctx, 0, "Unique's output")
    axis = ctx.attr("axis")
    if axis is not None:
        axis = _axis(ctx, int(axis), x.ndim)
    values, first, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, axis=axis
    )
    if not ctx.flag("sorted", 1):
        # the order of first occurrence
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], rank[inverse.reshape(-1)]
    return [
        ctx.known(values, tag="values"),
        ctx.known(first.astype(np.int64), tag="indices"),
        ctx.known(np.asarray(inverse).reshape(-1).astype(np.int64), tag="inverse"),
        ctx.known(counts.astype(np.int64), tag="counts"),
    ]


@converter("Compress", attrs=("axis",))
def _compress(ctx: NodeContext) -> list[Value | None]:
    """The entries where a known condition holds, as a gather of their positions."""
    x = ctx.required(0)
    cond = np.asarray(_known_input(ctx, 1, "Compress's output")).astype(bool).reshape(-1)
    axis = ctx.attr("axis")
    if axis is None:
        x = ctx.emit("nnvm.reshape", x, shape=[math.prod(ctx.shape(x))])
        axis = 0
    axis = _axis(ctx, int(axis), ctx.rank(x))
    extent = ctx.shape(x)[axis]
    picked = np.nonzero(cond[:extent])[0].astype(np.int64)
    return [ctx.emit("nnvm.gather", x, ctx.known(picked, tag="kept"), axis=axis)]
