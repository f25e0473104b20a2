"""Converters for ONNX data-movement, shape and reduction ops. Shape-like inputs (shapes,
axes, pads, repeats, sizes) must be known at import: they become static attributes, and
shape arithmetic (Shape, Size, Range, ConstantOfShape, ...) folds to constants."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nnvm.frontend.onnx.builder import ImportShapeError, Unsupported, Value
from nnvm.frontend.onnx.ops.elementwise import onnx_dtype
from nnvm.frontend.onnx.registry import NodeContext, converter


def ints(values: np.ndarray | Sequence[int] | None) -> list[int]:
    """A list of integers (axes, starts, a shape, pads) from an attribute or a 1-D tensor."""
    if values is None:
        return []
    array = np.asarray(values)
    if array.ndim > 1:
        raise ImportShapeError(f"a list of integers must be 1-D, got shape {list(array.shape)}")
    return [int(v) for v in array.reshape(-1)]


def _axes(ctx: NodeContext, since: int, index: int = 1) -> list[int] | None:
    """Axes from the `axes` attribute before opset `since`, from input `index` from then on."""
    if ctx.opset < since:
        value = ctx.attr("axes")
        return None if value is None else ints(value)
    value = ctx.const(index, "axes")
    return None if value is None else ints(value)


def _normalize(axes: Sequence[int], rank: int) -> list[int]:
    """Axes in [0, rank); an axis out of [-rank, rank) or given twice is refused."""
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ImportShapeError(f"axis {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise ImportShapeError(f"axes {list(axes)} name an axis twice")
    return out


# -- constants and shape arithmetic --------------------------------------------------------------


@converter(
    "Constant",
    attrs=(
        "value",
        "value_float",
        "value_floats",
        "value_int",
        "value_ints",
        "value_string",
        "value_strings",
        "sparse_value",
    ),
)
def _constant(ctx: NodeContext) -> list[Value | None]:
    a = ctx.attrs
    if "value" in a:
        array = np.asarray(a["value"])
        onnx_dtype_check(array)
    elif "value_float" in a:
        array = np.asarray(a["value_float"], dtype=np.float32)
    elif "value_floats" in a:
        array = np.asarray(a["value_floats"], dtype=np.float32)
    elif "value_int" in a:
        array = np.asarray(a["value_int"], dtype=np.int64)
    elif "value_ints" in a:
        array = np.asarray(a["value_ints"], dtype=np.int64)
    elif "value_string" in a or "value_strings" in a:
        raise Unsupported("string constants not supported")
    else:
        raise Unsupported("sparse or missing constant value not supported")
    return [ctx.known(array, tag="value")]


def onnx_dtype_check(array: np.ndarray) -> None:
    from nnvm.dialects.nnvm.dtypes import element_type_of

    try:
        element_type_of(array.dtype)
    except TypeError:
        raise Unsupported(f"element type {array.dtype} not supported") from None


@converter("Shape", attrs=("start", "end"))
def _shape(ctx: NodeContext) -> list[Value | None]:
    shape = list(ctx.shape(ctx.required(0)))
    rank = len(shape)
    start = int(ctx.attr("start", 0))
    end = ctx.attr("end")
    start = min(max(start + rank if start < 0 else start, 0), rank)
    stop = rank if end is None else int(end)
    stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
    return [ctx.known(np.asarray(shape[start:stop], dtype=np.int64), tag="shape")]


@converter("Size")
def _size(ctx: NodeContext) -> list[Value | None]:
    return [ctx.known(np.asarray(math.prod(ctx.shape(ctx.required(0))), dtype=np.int64))]


@converter("ConstantOfShape", attrs=("value",))
def _constant_of_shape(ctx: NodeContext) -> list[Value | None]:
    shape = ints(ctx.const(0, "shape"))
    value = ctx.attr("value")
    fill = (
        np.zeros((), np.float32)
        if value is None
        else np.asarray(value).reshape(-1)[0:1].reshape(())
    )
    onnx_dtype_check(np.asarray(fill))
    return [ctx.known(np.full(shape, fill, dtype=np.asarray(fill).dtype), tag="filled")]


@converter("Range")
def _range(ctx: NodeContext) -> list[Value | None]:
    start = ctx.const(0, "start")
    limit = ctx.const(1, "limit")
    delta = ctx.const(2, "delta")
    if start is None or limit is None or delta is None:
        raise Unsupported("start, limit and delta are required")
    dtype = np.asarray(start).dtype
    s, l_, d = (np.asarray(v).reshape(()).item() for v in (start, limit, delta))
    if d == 0:
        raise Unsupported("delta must be non-zero")
    count = max(math.ceil((l_ - s) / d), 0)
    values = np.asarray([s + k * d for k in range(count)], dtype=dtype)
    return [ctx.known(values, tag="range")]


# -- reshaping -----------------------------------------------------------------------------------


def resolve_reshape(in_shape: Sequence[int], target: Sequence[int], allowzero: bool) -> list[int]:
    """ONNX Reshape's 0 (copy the input extent) and -1 (infer) resolved to a static shape."""
    out = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= len(in_shape):
                raise Unsupported(f"shape entry {k} copies a dimension the input does not have")
            out.append(in_shape[k])
        else:
            out.append(int(d))
    if out.count(-1) > 1:
        raise Unsupported(f"shape {list(target)} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        total = math.prod(in_shape)
        if known == 0 or total % known:
            raise Unsupported(f"cannot reshape {list(in_shape)} to {list(target)}")
        out[out.index(-1)] = total // known
    return out


@converter("Reshape", attrs=("shape", "allowzero", "consumed_inputs"))
def _reshape(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    target = ints(ctx.attr("shape")) if ctx.opset < 5 else ints(ctx.const(1, "shape"))
    shape = resolve_reshape(ctx.shape(x), target, ctx.flag("allowzero", 0))
    if list(ctx.shape(x)) == shape:
        return [x]
    return [ctx.emit("nnvm.reshape", x, shape=shape)]


@converter("Flatten", attrs=("axis",))
def _flatten(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit("nnvm.flatten", ctx.required(0), axis=int(ctx.attr("axis", 1)))]


@converter("Squeeze", attrs=("axes",))
def _squeeze(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axes = _axes(ctx, 13)
    if axes is None:
        axes = [k for k, d in enumerate(ctx.shape(x)) if d == 1]
    if not axes:
        return [x]
    return [ctx.emit("nnvm.squeeze", x, axes=axes)]


@converter("Unsqueeze", attrs=("axes",))
def _unsqueeze(ctx: NodeContext) -> list[Value | None]:
    axes = _axes(ctx, 13)
    if axes is None:
        raise Unsupported("axes are required")
    return [ctx.emit("nnvm.expand_dims", ctx.required(0), axes=axes)]


@converter("Transpose", attrs=("perm",))
def _transpose(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    perm = ctx.attr("perm")
    perm = ints(perm) if perm is not None else list(reversed(range(ctx.rank(x))))
    return [ctx.emit("nnvm.transpose", x, perm=perm)]


@converter("Expand")
def _expand(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    target = ints(ctx.const(1, "shape"))
    shape = list(ctx.shape(x))
    rank = max(len(shape), len(target))
    a = [1] * (rank - len(shape)) + shape
    b = [1] * (rank - len(target)) + target
    out = []
    for p, q in zip(a, b, strict=True):
        if p != q and 1 not in (p, q):
            raise Unsupported(f"shape {shape} cannot expand to {target}")
        out.append(q if p == 1 else p)
    if out == shape:
        return [x]
    return [ctx.emit("nnvm.broadcast_to", x, shape=out)]


@converter("Tile")
def _tile(ctx: NodeContext) -> list[Value | None]:
    return [ctx.emit("nnvm.tile", ctx.required(0), repeats=ints(ctx.const(1, "repeats")))]


@converter("Concat", attrs=("axis",))
def _concat(ctx: NodeContext) -> list[Value | None]:
    values = [v for v in ctx.inputs if v is not None]
    axis = ctx.attr("axis", 1 if ctx.opset < 4 else None)
    if axis is None:
        raise Unsupported("axis is required")
    if len(values) == 1:
        return [values[0]]
    return [ctx.emit("nnvm.concat", *values, axis=int(axis))]


@converter("Split", attrs=("axis", "split", "num_outputs"))
def _split(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 0))
    axis = axis + rank if axis < 0 else axis
    extent = ctx.shape(x)[axis]
    sizes = ints(ctx.attr("split")) if ctx.opset < 13 else ints(ctx.const(1, "split"))
    if not sizes:
        n = int(ctx.attr("num_outputs")) if ctx.has_attr("num_outputs") else len(ctx.node.output)
        if ctx.opset >= 18 and ctx.has_attr("num_outputs"):
            chunk = -(-extent // n)
            sizes = [min(chunk, max(extent - k * chunk, 0)) for k in range(n)]
        else:
            if extent % n:
                raise Unsupported(f"cannot split extent {extent} into {n} equal parts")
            sizes = [extent // n] * n
    return list(ctx.emit_multi("nnvm.split", x, axis=axis, sizes=sizes))


@converter("Slice", attrs=("starts", "ends", "axes"))
def _slice(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    rank = ctx.rank(x)
    if ctx.opset < 10:
        starts, ends = ints(ctx.attr("starts")), ints(ctx.attr("ends"))
        axes = ints(ctx.attr("axes")) if ctx.has_attr("axes") else list(range(len(starts)))
        steps = [1] * len(starts)
    else:
        starts, ends = ints(ctx.const(1, "starts")), ints(ctx.const(2, "ends"))
        axes_v, steps_v = ctx.const(3, "axes"), ctx.const(4, "steps")
        axes = ints(axes_v) if axes_v is not None else list(range(len(starts)))
        steps = ints(steps_v) if steps_v is not None else [1] * len(starts)
    big = 2**62  # INT64 extremes clamp the same way; keep them representable
    starts = [max(min(s, big), -big) for s in starts]
    ends = [max(min(e, big), -big) for e in ends]
    return [
        ctx.emit(
            "nnvm.slice", x, starts=starts, ends=ends, axes=_normalize(axes, rank), steps=steps
        )
    ]


@converter("Gather", attrs=("axis",))
def _gather(ctx: NodeContext) -> list[Value | None]:
    return [
        ctx.emit("nnvm.gather", ctx.required(0), ctx.required(1), axis=int(ctx.attr("axis", 0)))
    ]


@converter("GatherElements", attrs=("axis",))
def _gather_elements(ctx: NodeContext) -> list[Value | None]:
    data, idx = ctx.required(0), ctx.required(1)
    return [ctx.emit("nnvm.gather_elements", data, idx, axis=int(ctx.attr("axis", 0)))]


@converter("ScatterElements", "Scatter", attrs=("axis", "reduction"))
def _scatter_elements(ctx: NodeContext) -> list[Value | None]:
    data, idx, upd = ctx.required(0), ctx.required(1), ctx.required(2)
    return [
        ctx.emit(
            "nnvm.scatter_elements",
            data,
            idx,
            upd,
            axis=int(ctx.attr("axis", 0)),
            reduction=str(ctx.attr("reduction", "none")),
        )
    ]


@converter("ScatterND", attrs=("reduction",))
def _scatter_nd(ctx: NodeContext) -> list[Value | None]:
    data, idx, upd = ctx.required(0), ctx.required(1), ctx.required(2)
    reduction = str(ctx.attr("reduction", "none"))
    return [ctx.emit("nnvm.scatter_nd", data, idx, upd, reduction=reduction)]


@converter("TopK", attrs=("axis", "largest", "sorted", "k"))
def _top_k(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    if ctx.opset < 10:
        k = int(ctx.attr("k"))
    else:
        k = int(np.asarray(ctx.const(1, "k")).reshape(-1)[0])
    largest = ctx.flag("largest", 1)
    ctx.flag("sorted", 1)  # sorted or not, the sorted order is a valid result
    values, indices = ctx.emit_multi(
        "nnvm.top_k", x, k=k, axis=int(ctx.attr("axis", -1)), largest=largest
    )
    return [values, indices]


_GRID_MODES = {"bilinear": "linear", "bicubic": "cubic"}


@converter("GridSample", attrs=("align_corners", "mode", "padding_mode"), since=16)
def _grid_sample(ctx: NodeContext) -> list[Value | None]:
    mode = str(ctx.attr("mode", "linear"))
    return [
        ctx.emit(
            "nnvm.grid_sample",
            ctx.required(0),
            ctx.required(1),
            mode=_GRID_MODES.get(mode, mode),
            padding_mode=str(ctx.attr("padding_mode", "zeros")),
            align_corners=ctx.flag("align_corners", 0),
        )
    ]


@converter("GatherND", attrs=("batch_dims",))
def _gather_nd(ctx: NodeContext) -> list[Value | None]:
    return [
        ctx.emit(
            "nnvm.gather_nd",
            ctx.required(0),
            ctx.required(1),
            batch_dims=int(ctx.attr("batch_dims", 0)),
        )
    ]


@converter("Pad", attrs=("mode", "pads", "paddings", "value"))
def _pad(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    rank = ctx.rank(x)
    mode = ctx.attr("mode", "constant")
    if ctx.opset < 11:
        pads = ints(ctx.attr("pads") if ctx.has_attr("pads") else ctx.attr("paddings"))
        value = float(ctx.attr("value", 0.0))
    else:
        pads = ints(ctx.const(1, "pads"))
        cv = ctx.const(2, "constant_value")
        value = (
            0.0 if cv is None or np.asarray(cv).size == 0 else float(np.asarray(cv).reshape(-1)[0])
        )
        axes_v = ctx.const(3, "axes") if ctx.opset >= 18 else None
        if axes_v is not None:
            axes = _normalize(ints(axes_v), rank)
            full = [0] * (2 * rank)
            for k, a in enumerate(axes):
                full[a] = pads[k]
                full[rank + a] = pads[len(axes) + k]
            pads = full
    if not any(pads):
        return [x]
    return [ctx.emit("nnvm.pad", x, pads=pads, mode=mode, value=value)]


@converter("DepthToSpace", attrs=("blocksize", "mode"))
def _depth_to_space(ctx: NodeContext) -> list[Value | None]:
    return [
        ctx.emit(
            "nnvm.depth_to_space",
            ctx.required(0),
            blocksize=int(ctx.attr("blocksize")),
            mode=ctx.attr("mode", "DCR"),
        )
    ]


@converter("SpaceToDepth", attrs=("blocksize", "mode"))
def _space_to_depth(ctx: NodeContext) -> list[Value | None]:
    return [
        ctx.emit(
            "nnvm.space_to_depth",
            ctx.required(0),
            blocksize=int(ctx.attr("blocksize")),
            mode=ctx.attr("mode", "DCR"),
        )
    ]


@converter("CumSum", "CumProd", attrs=("exclusive", "reverse"))
def _cumulative(ctx: NodeContext) -> list[Value | None]:
    axis = ctx.const(1, "axis")
    return [
        ctx.emit(
            "nnvm.cumsum" if ctx.op_type == "CumSum" else "nnvm.cumprod",
            ctx.required(0),
            axis=int(np.asarray(axis).reshape(-1)[0]),
            exclusive=ctx.flag("exclusive", 0),
            reverse=ctx.flag("reverse", 0),
        )
    ]


# -- resize --------------------------------------------------------------------------------------


@converter(
    "Resize",
    attrs=(
        "antialias",
        "axes",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "keep_aspect_ratio_policy",
        "mode",
        "nearest_mode",
    ),
)
def _resize(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    in_shape = list(ctx.shape(x))
    rank = len(in_shape)
    if ctx.opset < 11:
        roi: list[float] = []
        scales = [float(s) for s in np.asarray(ctx.const(1, "scales")).reshape(-1)]
        sizes: list[int] = []
        ctm = "asymmetric"
    else:
        roi_v = ctx.const(1, "roi")
        roi = [float(v) for v in np.asarray(roi_v).reshape(-1)] if roi_v is not None else []
        scales_v = ctx.const(2, "scales")
        scales = (
            [float(v) for v in np.asarray(scales_v).reshape(-1)] if scales_v is not None else []
        )
        sizes = ints(ctx.const(3, "sizes"))
        ctm = ctx.attr("coordinate_transformation_mode", "half_pixel")
    mode = ctx.attr("mode", "nearest")
    axes = _normalize(ints(ctx.attr("axes")), rank) if ctx.has_attr("axes") else list(range(rank))
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    if sizes:
        full_sizes = list(in_shape)
        for a, s in zip(axes, sizes, strict=True):
            full_sizes[a] = s
        full_scales: list[float] = []
        if policy in ("not_larger", "not_smaller"):
            ratios = [sizes[k] / in_shape[a] for k, a in enumerate(axes)]
            common = min(ratios) if policy == "not_larger" else max(ratios)
            full_scales = [1.0] * rank
            for a in axes:
                full_sizes[a] = int(math.floor(common * in_shape[a] + 0.5))
                full_scales[a] = common
        elif policy != "stretch":
            raise Unsupported(f"keep_aspect_ratio_policy={policy!r} not supported")
    elif scales:
        full_scales = [1.0] * rank
        for a, s in zip(axes, scales, strict=True):
            full_scales[a] = s
        full_sizes = [int(math.floor(d * s)) for d, s in zip(in_shape, full_scales, strict=True)]
    else:
        raise Unsupported("one of scales and sizes is required")
    if roi and len(roi) == 2 * len(axes) and len(axes) != rank:
        full_roi = [0.0] * rank + [1.0] * rank
        for k, a in enumerate(axes):
            full_roi[a] = roi[k]
            full_roi[rank + a] = roi[len(axes) + k]
        roi = full_roi
    if ctm != "tf_crop_and_resize":
        roi = []
    return [
        ctx.emit(
            "nnvm.resize",
            x,
            size=full_sizes,
            scales=full_scales,
            roi=roi,
            mode=mode,
            coordinate_transformation_mode=ctm,
            nearest_mode=ctx.attr("nearest_mode", "round_prefer_floor"),
            cubic_coeff_a=float(ctx.attr("cubic_coeff_a", -0.75)),
            exclude_outside=ctx.flag("exclude_outside", 0),
            extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)),
            antialias=ctx.flag("antialias", 0),
        )
    ]


@converter("Upsample", attrs=("mode", "scales", "height_scale", "width_scale"))
def _upsample(ctx: NodeContext) -> list[Value | None]:
    """Deprecated Upsample (opset 7-9) is Resize with asymmetric coordinates."""
    x = ctx.required(0)
    shape = list(ctx.shape(x))
    if ctx.opset >= 9:
        scales = [float(s) for s in np.asarray(ctx.const(1, "scales")).reshape(-1)]
    elif ctx.has_attr("scales"):
        scales = [float(s) for s in ctx.attr("scales")]
    else:
        scales = [
            1.0,
            1.0,
            float(ctx.attr("height_scale", 1.0)),
            float(ctx.attr("width_scale", 1.0)),
        ]
    mode = ctx.attr("mode", "nearest")
    mode = "linear" if mode in ("linear", "bilinear") else mode
    return [
        ctx.emit(
            "nnvm.resize",
            x,
            size=[int(math.floor(d * s)) for d, s in zip(shape, scales, strict=True)],
            scales=scales,
            mode=mode,
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )
    ]


# -- reductions ----------------------------------------------------------------------------------

_REDUCE = {
    "ReduceSum": ("nnvm.sum", 13),
    "ReduceMean": ("nnvm.mean", 18),
    "ReduceMax": ("nnvm.max", 18),
    "ReduceMin": ("nnvm.min", 18),
    "ReduceProd": ("nnvm.prod", 18),
}


def _reduce_axes(ctx: NodeContext, since: int) -> list[int] | None:
    """Axes to reduce; None means the identity (noop_with_empty_axes with no axes)."""
    x = ctx.required(0)
    axes = _axes(ctx, since)
    if not axes:
        if ctx.opset >= since and int(ctx.attr("noop_with_empty_axes", 0)):
            return None
        return list(range(ctx.rank(x)))
    return _normalize(axes, ctx.rank(x))


def reduce(ctx: NodeContext, op: str, x: Value, axes: list[int] | None) -> Value:
    if axes is None:
        return x
    keep = ctx.flag("keepdims", 1)
    shape = ctx.shape(x)
    if op in ("nnvm.max", "nnvm.min") and any(shape[a] == 0 for a in axes):
        # ONNX defines max/min of nothing as the dtype's lowest/highest value: a constant.
        out = (
            [1 if a in axes else d for a, d in enumerate(shape)]
            if keep
            else [d for a, d in enumerate(shape) if a not in axes]
        )
        dt = ctx.dtype(x)
        info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt) if dt.kind in "iu" else None
        if info is None:
            raise Unsupported(f"reducing an empty {dt} axis")
        low = -np.inf if dt.kind == "f" else info.min
        high = np.inf if dt.kind == "f" else info.max
        return ctx.known(np.full(out, low if op == "nnvm.max" else high, dtype=dt), tag="empty")
    if ctx.dtype(x) == np.bool_ and op in ("nnvm.max", "nnvm.min"):
        as_int = ctx.emit("nnvm.cast", x, to="uint8")
        return ctx.emit("nnvm.cast", ctx.emit(op, as_int, axes=axes, keepdims=keep), to="bool")
    return ctx.emit(op, x, axes=axes, keepdims=keep)


def _reduce(ctx: NodeContext) -> list[Value | None]:
    op, since = _REDUCE[ctx.op_type]
    return [reduce(ctx, op, ctx.required(0), _reduce_axes(ctx, since))]


for _name in _REDUCE:
    converter(_name, attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce)


@converter("ReduceL1", attrs=("axes", "keepdims", "noop_with_empty_axes"))
def _reduce_l1(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axes = _reduce_axes(ctx, 18)
    return [reduce(ctx, "nnvm.sum", ctx.emit("nnvm.abs", x), axes)]


@converter("ReduceL2", attrs=("axes", "keepdims", "noop_with_empty_axes"))
def _reduce_l2(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axes = _reduce_axes(ctx, 18)
    if axes is None:
        return [x]
    return [ctx.emit("nnvm.sqrt", reduce(ctx, "nnvm.sum", ctx.emit("nnvm.mul", x, x), axes))]


@converter("ReduceSumSquare", attrs=("axes", "keepdims", "noop_with_empty_axes"))
def _reduce_sum_square(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axes = _reduce_axes(ctx, 18)
    if axes is None:
        return [x]
    return [reduce(ctx, "nnvm.sum", ctx.emit("nnvm.mul", x, x), axes)]


@converter("ReduceLogSumExp", attrs=("axes", "keepdims", "noop_with_empty_axes"))
def _reduce_log_sum_exp(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    axes = _reduce_axes(ctx, 18)
    if axes is None:
        return [x]
    return [ctx.emit("nnvm.log", reduce(ctx, "nnvm.sum", ctx.emit("nnvm.exp", x), axes))]


@converter("ArgMax", attrs=("axis", "keepdims", "select_last_index"))
def _argmax(ctx: NodeContext) -> list[Value | None]:
    return [_arg(ctx, "nnvm.argmax")]


@converter("ArgMin", attrs=("axis", "keepdims", "select_last_index"))
def _argmin(ctx: NodeContext) -> list[Value | None]:
    return [_arg(ctx, "nnvm.argmin")]


def _arg(ctx: NodeContext, op: str) -> Value:
    return ctx.emit(
        op,
        ctx.required(0),
        axis=int(ctx.attr("axis", 0)),
        keepdims=ctx.flag("keepdims", 1),
        select_last_index=ctx.flag("select_last_index", 0),
    )


@converter("EyeLike", attrs=("dtype", "k"))
def _eye_like(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    rows, cols = ctx.shape(x)
    dtype = onnx_dtype(ctx.attr("dtype")) if ctx.has_attr("dtype") else ctx.dtype(x)
    return [ctx.known(np.eye(rows, cols, k=int(ctx.attr("k", 0)), dtype=dtype), tag="eye")]
