"""Reusable te building blocks for the graph ops' definitions (TVM's topi, in small): broadcast
indexing, padding, reductions over axes, windows, index linearization and layouts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.ir import Attribute

from nnvm.dialects.te import exprs
from nnvm.dialects.te.builder import (
    Expr,
    KernelBuilder,
    Scalar,
    TensorRef,
    cast,
    const,
    identity_of,
    select,
)

Index = Expr | int


def broadcast_index(
    idx: Sequence[Index], in_shape: Sequence[int], out_shape: Sequence[int] | None = None
) -> list[Index]:
    """The input index of numpy broadcasting: trailing axes align, broadcast (extent-1) axes
    read 0; with `out_shape`, an axis of extent 1 in both keeps its index variable."""
    rank = len(in_shape)
    tail = list(idx[len(idx) - rank :]) if rank else []
    outs = (
        list(out_shape[len(out_shape) - rank :]) if out_shape is not None and rank else [0] * rank
    )
    return [0 if d == 1 and o != 1 else i for i, d, o in zip(tail, in_shape, outs, strict=True)]


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0} - {1}
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def elementwise(
    b: KernelBuilder,
    inputs: Sequence[TensorRef],
    fn: Callable[..., Expr | Scalar],
    *,
    shape: Sequence[int] | None = None,
    name: str = "",
    dtype: Attribute | None = None,
) -> TensorRef:
    """out[i] = fn(x[bcast(i)] for x in inputs), with numpy broadcasting."""
    out_shape = tuple(shape) if shape is not None else broadcast_shape(*(x.shape for x in inputs))

    def body(*i: Expr) -> Expr | Scalar:
        return fn(*[x[broadcast_index(i, x.shape, out_shape)] for x in inputs])

    return b.compute(out_shape, body, name=name, dtype=dtype)


def all_true(conds: Sequence[Expr]) -> Expr | None:
    out: Expr | None = None
    for c in conds:
        out = c if out is None else out & c
    return out


def pad(
    b: KernelBuilder,
    x: TensorRef,
    lo: Sequence[int],
    hi: Sequence[int],
    value: Scalar = 0,
    *,
    name: str = "pad",
) -> TensorRef:
    """A constant-padded copy (pads per axis, >= 0); no stage at all when nothing is padded."""
    if not any(lo) and not any(hi):
        return x
    shape = [d + a + c for d, a, c in zip(x.shape, lo, hi, strict=True)]

    def body(*i: Expr) -> Expr:
        conds: list[Expr] = []
        src: list[Index] = []
        for ik, a, c, d in zip(i, lo, hi, x.shape, strict=True):
            j = ik - a if a else ik
            if a:
                conds.append(ik >= a)
            if c:
                conds.append(j < d)
            src.append(j)
        cond = all_true(conds)
        v = x[src]
        return v if cond is None else select(cond, v, value)

    return b.compute(shape, body, name=name, template="pad")


def reduce_over(
    b: KernelBuilder,
    x: TensorRef,
    axes: Sequence[int],
    kind: str,
    *,
    keepdims: bool = False,
    value: Callable[[Expr], Expr] | None = None,
    name: str = "",
    dtype: Attribute | None = None,
    template: str | None = None,
) -> TensorRef:
    """kind-reduction of (value of) x over `axes`; the result keeps or drops them."""
    axes = sorted(a % x.ndim for a in axes) if x.ndim else []
    kept = [k for k in range(x.ndim) if k not in axes]
    out_shape = (
        [1 if k in axes else d for k, d in enumerate(x.shape)]
        if keepdims
        else [x.shape[k] for k in kept]
    )
    red_shape = [x.shape[a] for a in axes]

    def body(*args: Expr) -> Expr:
        spatial, red = args[: len(out_shape)], args[len(out_shape) :]
        idx: list[Index] = [0] * x.ndim
        if keepdims:
            for k in kept:
                idx[k] = spatial[k]
        else:
            for pos, k in enumerate(kept):
                idx[k] = spatial[pos]
        for pos, a in enumerate(axes):
            idx[a] = red[pos]
        v = x[idx]
        return value(v) if value is not None else v

    rnames = [f"r{a}" for a in axes]
    return b.reduce(
        out_shape,
        kind,
        red_shape,
        body,
        name=name,
        dtype=dtype,
        reduce_axes=rnames,
        template=template,
    )


def identity(kind: str, t: Attribute) -> Scalar:
    return identity_of(kind, t)


def unravel(flat: Expr, shape: Sequence[int], wrap_outermost: bool = False) -> list[Index]:
    """Row-major indices of a flat position (extent-1 axes read 0; the outermost needs no %,
    unless `wrap_outermost`)."""
    out: list[Index] = []
    if 0 in shape:  # an empty tensor is never read: any index will do
        return [0] * len(shape)
    stride = math.prod(shape)
    first = not wrap_outermost
    for d in shape:
        stride //= d
        if d == 1:
            out.append(0)
            continue
        q = flat // stride if stride > 1 else flat
        out.append(q if first else q % d)
        first = False
    return out


def ravel(idx: Sequence[Index], shape: Sequence[int]) -> Index:
    """The flat row-major position of an index."""
    flat: Index | None = None
    for i, d in zip(idx, shape, strict=True):
        flat = i if flat is None else flat * d + i
    return 0 if flat is None else flat


def float_like(t: Attribute) -> Attribute:
    return t if exprs.is_float_type(t) else exprs.default_float()


def accumulation_type(t: Attribute) -> Attribute:
    """Where sums accumulate: f32 for f16 (as numpy's wider reference does), else t."""
    if exprs.is_float_type(t) and exprs.float_width(t) < 32:
        return exprs.default_float()
    return t


def to_index(v: Expr) -> Expr:
    """An integer or float value used as an index."""
    if exprs.is_float_type(v.type):
        v = cast(v, exprs.int_type(64))
    return cast(v, exprs.INDEX)


def lit(value: Scalar, t: Attribute) -> Expr:
    return const(value, t)


def from_blocked(
    axes: Sequence[tuple[str, int]], canonical: str, physical: Sequence[Index]
) -> list[Index]:
    """Logical (canonical-order) indices from the physical indices of a blocked layout
    (layout axes as (letter, block factor or 0), e.g. NCHW8c: N C H W then (C, 8))."""
    factors = {a: f for a, f in axes if f}
    values: dict[str, Index | None] = dict.fromkeys(canonical)
    for (axis, factor), idx in zip(axes, physical, strict=True):
        part = idx * factors[axis] if factor == 0 and axis in factors else idx
        current = values[axis]
        values[axis] = part if current is None else current + part
    return [values[a] for a in canonical]  # type: ignore[misc]


def to_blocked(axes: Sequence[tuple[str, int]], logical: dict[str, Index]) -> list[Index]:
    """Physical indices of logical ones: a blocked axis splits into (i // f, i % f)."""
    factors = {a: f for a, f in axes if f}
    out: list[Index] = []
    for axis, factor in axes:
        v = logical[axis]
        if factor:
            out.append(v % factor)
        elif axis in factors:
            out.append(v // factors[axis])
        else:
            out.append(v)
    return out


def summed(
    b: KernelBuilder,
    shape: Sequence[int],
    reduce_shape: Sequence[int],
    fn: Callable[..., Expr],
    dtype: Attribute,
    **kwargs: object,
) -> TensorRef:
    """A sum in the accumulation type of dtype (f32 for f16, i64 for integers), cast back."""
    acc = accumulation_type(dtype)
    if exprs.is_int_type(dtype) and not exprs.is_bool_type(dtype):
        acc = exprs.int_type(64)
    if acc == dtype:
        return b.reduce(shape, "sum", reduce_shape, fn, dtype=dtype, **kwargs)  # type: ignore[arg-type]
    name = str(kwargs.pop("name", ""))
    total = b.reduce(
        shape,
        "sum",
        reduce_shape,
        lambda *a: cast(fn(*a), acc),
        dtype=acc,
        name=f"{name}.acc" if name else "acc",
        **kwargs,  # type: ignore[arg-type]
    )
    return b.compute(shape, lambda *i: cast(total[i], dtype), name=name)
