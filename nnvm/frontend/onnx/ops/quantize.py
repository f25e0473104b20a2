"""Quantization ops composed from graph ops: QuantizeLinear and DequantizeLinear (per tensor, per
axis and blocked scales, integer types of 8 to 32 bits), the integer MatMulInteger and
ConvInteger (accumulated in int32), and QLinearMatMul / QLinearConv (dequantize, compute in
float, requantize: the float products of 8-bit values are exact, the rescale rounds once)."""

from __future__ import annotations

import copy

import numpy as np

from nnvm.frontend.onnx.builder import Known, Unsupported, Value
from nnvm.frontend.onnx.ops.elementwise import onnx_dtype
from nnvm.frontend.onnx.ops.nn import _conv
from nnvm.frontend.onnx.registry import NodeContext, converter

_INTEGER_KINDS = "iu"


def _broadcastable(ctx: NodeContext, param: Value, x: Value, axis: int, block: int) -> Value:
    """A scale or zero point shaped to broadcast against x: a scalar as it is, a 1-D one along
    `axis`, a blocked one (same rank as x) repeated `block` times along `axis`."""
    rank = ctx.rank(x)
    shape = ctx.shape(param)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1 and block == 0):
        return param if len(shape) == 0 else ctx.emit("nnvm.reshape", param, shape=[])
    if not 0 <= axis < rank:
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    if block:
        if len(shape) != rank:
            raise Unsupported(f"a blocked scale must have the input's rank {rank}")
        extent = ctx.shape(x)[axis]
        index = Known(np.arange(extent, dtype=np.int64) // block, f"{ctx.output_name(0)}.blocks")
        return ctx.emit("nnvm.gather", param, index, axis=axis)
    if len(shape) != 1 or shape[0] != ctx.shape(x)[axis]:
        raise Unsupported(
            f"a per-axis scale must be 1-D of the axis extent {ctx.shape(x)[axis]}, got {shape}"
        )
    target = [1] * rank
    target[axis] = shape[0]
    return ctx.emit("nnvm.reshape", param, shape=target)


def _axis(ctx: NodeContext, x: Value) -> tuple[int, int]:
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", 1))
    block = int(ctx.attr("block_size", 0) or 0)
    # an out-of-range axis matters only to a per-axis scale (_broadcastable refuses it there)
    return (axis % rank if -rank <= axis < rank else axis), block


def dequantize(
    ctx: NodeContext, x: Value, scale: Value, zero: Value | None, axis: int, block: int
) -> Value:
    """(x - zero) * scale in the scale's float type."""
    ftype = ctx.dtype(scale)
    xf = ctx.emit("nnvm.cast", x, to=ftype.name)
    if zero is not None:
        zf = ctx.emit("nnvm.cast", _broadcastable(ctx, zero, x, axis, block), to=ftype.name)
        xf = ctx.emit("nnvm.sub", xf, zf)
    return ctx.emit("nnvm.mul", xf, _broadcastable(ctx, scale, x, axis, block))


def quantize(
    ctx: NodeContext,
    x: Value,
    scale: Value,
    zero: Value | None,
    out: np.dtype,
    axis: int,
    block: int,
) -> Value:
    """saturate(round_half_even(x / scale) + zero) as `out`."""
    if out.kind not in _INTEGER_KINDS:
        raise Unsupported(f"quantizing to {out} is not supported (integer types are)")
    ftype = ctx.dtype(scale)
    xf = ctx.emit("nnvm.cast", x, to=ftype.name)
    q = ctx.emit("nnvm.round", ctx.emit("nnvm.div", xf, _broadcastable(ctx, scale, x, axis, block)))
    if zero is not None:
        zf = ctx.emit("nnvm.cast", _broadcastable(ctx, zero, x, axis, block), to=ftype.name)
        q = ctx.emit("nnvm.add", q, zf)
    info = np.iinfo(out)
    q = ctx.emit("nnvm.clip", q, min=float(info.min), max=float(info.max))
    return ctx.emit("nnvm.cast", q, to=out.name)


@converter("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def _dequantize_linear(ctx: NodeContext) -> list[Value | None]:
    x, scale, zero = ctx.required(0), ctx.required(1), ctx.input(2)
    if ctx.dtype(x).kind not in _INTEGER_KINDS:
        raise Unsupported(f"dequantizing {ctx.dtype(x)} is not supported (integer types are)")
    axis, block = _axis(ctx, x)
    y = dequantize(ctx, x, scale, zero, axis, block)
    wanted = int(ctx.attr("output_dtype", 0) or 0)
    return [y if not wanted else ctx.emit("nnvm.cast", y, to=onnx_dtype(wanted).name)]


@converter("QuantizeLinear", attrs=("axis", "block_size", "output_dtype", "saturate", "precision"))
def _quantize_linear(ctx: NodeContext) -> list[Value | None]:
    x, scale, zero = ctx.required(0), ctx.required(1), ctx.input(2)
    wanted = int(ctx.attr("output_dtype", 0) or 0)
    if ctx.attr("precision"):
        raise Unsupported("the precision attribute is not supported")
    out = ctx.dtype(zero) if zero is not None else np.dtype(np.uint8)
    if wanted:
        out = onnx_dtype(wanted)
    axis, block = _axis(ctx, x)
    return [quantize(ctx, x, scale, zero, out, axis, block)]


def _centered(ctx: NodeContext, v: Value, zero: Value | None, axis: int) -> Value:
    """v - zero in int32 (a 1-D zero point is per row of A / per column of B / per filter)."""
    vi = ctx.emit("nnvm.cast", v, to="int32")
    if zero is None:
        return vi
    zi = ctx.emit("nnvm.cast", zero, to="int32")
    if ctx.rank(zero) == 1 and ctx.shape(zero)[0] > 1:
        target = [1] * ctx.rank(v)
        target[axis % ctx.rank(v)] = ctx.shape(zero)[0]
        zi = ctx.emit("nnvm.reshape", zi, shape=target)
    elif ctx.rank(zero) > 0:
        zi = ctx.emit("nnvm.reshape", zi, shape=[])
    return ctx.emit("nnvm.sub", vi, zi)


@converter("MatMulInteger")
def _matmul_integer(ctx: NodeContext) -> list[Value | None]:
    a, b = ctx.required(0), ctx.required(1)
    a = _centered(ctx, a, ctx.input(2), -2)
    b = _centered(ctx, b, ctx.input(3), -1)
    return [ctx.emit("nnvm.matmul", a, b)]


def _as_conv(ctx: NodeContext, x: Value, w: Value, b: Value | None) -> Value:
    conv = copy.copy(ctx)
    conv.inputs = [x, w, b]
    (y,) = _conv(conv)
    assert y is not None
    return y


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


@converter("ConvInteger", attrs=_CONV_ATTRS)
def _conv_integer(ctx: NodeContext) -> list[Value | None]:
    """In float64 (exact for every int32 sum of 8-bit products a conv can have), then int32:
    the conv schedules are float ones."""
    x = _centered(ctx, ctx.required(0), ctx.input(2), 1)
    w = _centered(ctx, ctx.required(1), ctx.input(3), 0)
    xf, wf = (ctx.emit("nnvm.cast", v, to="float64") for v in (x, w))
    return [ctx.emit("nnvm.cast", _as_conv(ctx, xf, wf, None), to="int32")]


@converter("QLinearMatMul")
def _qlinear_matmul(ctx: NodeContext) -> list[Value | None]:
    a, a_s, a_z, b, b_s, b_z, y_s, y_z = (ctx.required(k) for k in range(8))
    af = dequantize(ctx, a, a_s, a_z, ctx.rank(a) - 2, 0)
    bf = dequantize(ctx, b, b_s, b_z, ctx.rank(b) - 1, 0)
    if ctx.rank(a_s) == 1 and ctx.shape(a_s)[0] > 1:
        raise Unsupported("per-row scales of A are not supported")
    y = ctx.emit("nnvm.matmul", af, bf)
    return [quantize(ctx, y, y_s, y_z, ctx.dtype(y_z), ctx.rank(y) - 1, 0)]


@converter("QLinearConv", attrs=_CONV_ATTRS)
def _qlinear_conv(ctx: NodeContext) -> list[Value | None]:
    x, x_s, x_z, w, w_s, w_z, y_s, y_z = (ctx.required(k) for k in range(8))
    xf = dequantize(ctx, x, x_s, x_z, 1, 0)
    wf = dequantize(ctx, w, w_s, w_z, 0, 0)
    bias = ctx.input(8)
    bf = None
    if bias is not None:
        # the int32 bias is in units of x_scale * w_scale
        scale = ctx.emit("nnvm.mul", x_s, w_s)
        bf = ctx.emit("nnvm.mul", ctx.emit("nnvm.cast", bias, to=ctx.dtype(x_s).name), scale)
    y = _as_conv(ctx, xf, wf, bf)
    return [quantize(ctx, y, y_s, y_z, ctx.dtype(y_z), 1, 0)]
