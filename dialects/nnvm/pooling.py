"""2-D pooling: windowed max/average and the global forms, in NCHW or a blocked NCHW<c>c layout.

padding is [top, left, bottom, right]. Output extents follow ONNX: floor by default; with
ceil_mode the extent rounds up, but a window must start inside the input or its leading padding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import NoGradient, VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_bool, is_float, numpy_dtype_of
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


def pool_output_size(
    size: int,
    kernel: int,
    stride: int,
    pad_lo: int,
    pad_hi: int,
    dilation: int,
    ceil_mode: bool,
) -> int:
    """Output extent of one pooled axis (ONNX rules, including the ceil-mode last-window rule)."""
    span = size + pad_lo + pad_hi - dilation * (kernel - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_lo:  # the last window would start in the trailing pad
        out -= 1
    return out


def _window_index(
    size: int, out: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one axis: clipped input indices [out, kernel], a mask of those inside the input, and
    a mask of those inside input + padding (ceil-mode windows may run past both)."""
    pos = np.arange(out)[:, None] * stride + np.arange(kernel)[None, :] * dilation - pad_lo
    inside = (pos >= 0) & (pos < size)
    in_padded = (pos >= -pad_lo) & (pos < size + pad_hi)
    return np.clip(pos, 0, size - 1), inside, in_padded


class _LayoutOp(NNVMOp):
    """Shared: an NCHW (or blocked NCHW<c>c) data layout."""

    def _layout(self) -> Layout:
        try:
            return Layout.parse(self.attr("layout"), "NCHW")
        except ValueError as err:
            raise ShapeError(f"{self.name}: {err}") from None

    def _check_dtype(self, t: TensorType, accept: str) -> None:
        elt = t.element_type
        ok = is_float(elt) if accept == "float" else not is_bool(elt)
        if not ok:
            raise ShapeError(f"{self.name} does not accept element type {elt}")


WindowRead = Callable[[Sequence[Expr], Expr, Expr], tuple[list[Expr], Expr | None]]
"""read(output index, kh, kw) -> (input index, inside-the-input condition or None)."""


class _Pool2DOp(_LayoutOp):
    """Windowed pooling over H and W with strides, padding, dilation and ceil mode.

    Each concrete op declares its properties itself, in the order they print.
    """

    ACCEPTS: ClassVar[str] = "float"

    def _window(self) -> tuple[tuple[int, ...], ...]:
        kernel, strides, pad, dil = (
            self.attr("pool_size"),
            self.attr("strides"),
            self.attr("padding"),
            self.attr("dilation"),
        )
        what = self.name.removeprefix("nnvm.")
        if len(kernel) != 2 or len(strides) != 2 or len(dil) != 2 or len(pad) != 4:
            raise ShapeError(f"{what}: pool_size, strides and dilation need 2 values, padding 4")
        if min(kernel) < 1 or min(strides) < 1 or min(dil) < 1 or min(pad) < 0:
            raise ShapeError(
                f"{what}: pool_size, strides and dilation must be >= 1 and padding >= 0"
            )
        if max(pad[0], pad[2]) >= kernel[0] or max(pad[1], pad[3]) >= kernel[1]:
            raise ShapeError(
                f"{what}: padding {list(pad)} must be smaller than the pool size {list(kernel)}"
            )
        return kernel, strides, pad, dil

    def _out_hw(self, h: int, w: int) -> tuple[int, int]:
        (kh, kw), (sh, sw), pad, (dh, dw) = self._window()
        ceil = self.attr("ceil_mode")
        oh = pool_output_size(h, kh, sh, pad[0], pad[2], dh, ceil)
        ow = pool_output_size(w, kw, sw, pad[1], pad[3], dw, ceil)
        if oh < 1 or ow < 1:
            raise ShapeError(f"{self.name}: the window does not fit the {h}x{w} input")
        return oh, ow

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        self._check_dtype(x, self.ACCEPTS)
        layout = self._layout()
        n, c, h, w = layout.logical_shape(x.get_shape(), "data")
        oh, ow = self._out_hw(h, w)
        return [tensor(layout.physical_shape((n, c, oh, ow), "result"), x.element_type)]

    def _windows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gathered windows [N, C, OH, KH, OW, KW] of canonical x, with the two masks."""
        (kh, kw), (sh, sw), pad, (dh, dw) = self._window()
        h, w = x.shape[2], x.shape[3]
        oh, ow = self._out_hw(h, w)
        ih, in_h, pad_h = _window_index(h, oh, kh, sh, pad[0], pad[2], dh)
        iw, in_w, pad_w = _window_index(w, ow, kw, sw, pad[1], pad[3], dw)
        vals = x[:, :, ih][:, :, :, :, iw]  # [N, C, OH, KH, OW, KW]
        inside = in_h[:, :, None, None] & in_w[None, None, :, :]
        in_padded = pad_h[:, :, None, None] & pad_w[None, None, :, :]
        return vals, inside, in_padded

    def pool(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        layout = self._layout()
        x = layout.to_canonical(inputs[0])
        out = self.pool(x).astype(inputs[0].dtype)
        return [layout.from_canonical(out)]

    def _te_window(self, x: TensorRef) -> tuple[tuple[int, ...], int, int, WindowRead]:
        """(output shape, KH, KW, read): `read(out index, kh, kw)` is the input index of one
        window tap and the condition that it lies inside the input (None: always)."""
        layout = self._layout()
        (kh, kw), (sh, sw), pad, (dh, dw) = self._window()
        _, _, h, w = layout.logical_shape(x.shape, "data")
        out = tuple(self.infer_result_types([x.type])[0].get_shape())
        letters = [a if f == 0 else "" for a, f in layout.axes]
        ha, wa = letters.index("H"), letters.index("W")
        oh_n, ow_n = out[ha], out[wa]
        need = {
            "h0": pad[0] > 0,
            "h1": (oh_n - 1) * sh + (kh - 1) * dh - pad[0] >= h,
            "w0": pad[1] > 0,
            "w1": (ow_n - 1) * sw + (kw - 1) * dw - pad[1] >= w,
        }

        def read(idx: Sequence[Expr], rh: Expr, rw: Expr) -> tuple[list[Expr], Expr | None]:
            ih = idx[ha] * sh + rh * dh - pad[0]
            iw = idx[wa] * sw + rw * dw - pad[1]
            conds = []
            if need["h0"]:
                conds.append(ih >= 0)
            if need["h1"]:
                conds.append(ih < h)
            if need["w0"]:
                conds.append(iw >= 0)
            if need["w1"]:
                conds.append(iw < w)
            src = list(idx)
            src[ha], src[wa] = ih, iw
            return src, topi.all_true(conds)

        return out, kh, kw, read

    # -- gradients: one strided view and one scatter per window tap ---------------------------

    def _canonical_for_vjp(self) -> None:
        if self.attr("layout") != "NCHW":
            raise NoGradient(f"{self.name} in layout {self.attr('layout')} has no gradient")

    def _tap(self, g: VJPBuilder, x: SSAValue, th: int, tw: int, fill: float) -> SSAValue:
        """The input element that tap (th, tw) of every window reads: [N, C, OH, OW]."""
        (_, _), (sh, sw), pad, (dh, dw) = self._window()
        n, c, h, w = shape(x)
        oh, ow = shape(self.result)[2:]
        need_h = (oh - 1) * sh + th * dh + 1
        need_w = (ow - 1) * sw + tw * dw + 1
        hi_h, hi_w = max(0, need_h - h - pad[0]), max(0, need_w - w - pad[1])
        pads = [0, 0, pad[0], pad[1], 0, 0, hi_h, hi_w]
        padded = g.op("pad", x, pads=pads, value=fill) if any(pads) else x
        return g.op(
            "slice",
            padded,
            starts=[th * dh, tw * dw],
            ends=[need_h, need_w],
            axes=[2, 3],
            steps=[sh, sw],
        )

    def _scatter(self, g: VJPBuilder, v: SSAValue, th: int, tw: int) -> SSAValue:
        """The adjoint of `_tap`: v [N, C, OH, OW] placed where tap (th, tw) read, zeros
        elsewhere, cropped to the input."""
        (_, _), (sh, sw), pad, (dh, dw) = self._window()
        n, c, h, w = shape(self.data)
        oh, ow = shape(v)[2:]
        if sh > 1 or sw > 1:
            v = g.op("reshape", v, shape=[n, c, oh, 1, ow, 1])
            v = g.op("pad", v, pads=[0, 0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1])
            v = g.op("reshape", v, shape=[n, c, oh * sh, ow * sw])
        lo_h, lo_w = th * dh - pad[0], tw * dw - pad[1]
        hi_h, hi_w = h - (oh * sh + lo_h), w - (ow * sw + lo_w)
        return g.op("pad", v, pads=[0, 0, lo_h, lo_w, 0, 0, hi_h, hi_w])

    def _taps(self) -> list[tuple[int, int]]:
        (kh, kw), *_ = self._window()
        return [(a, b) for a in range(kh) for b in range(kw)]


def _lowest(dtype: np.dtype) -> np.generic:
    if np.issubdtype(dtype, np.floating):
        return dtype.type(-np.inf)
    return dtype.type(np.iinfo(dtype).min)


@irdl_op_definition
class MaxPool2DOp(_Pool2DOp):
    """`nnvm.max_pool2d %x {pool_size = [3, 3], ...}`: window maximum; padding never wins."""

    name = "nnvm.max_pool2d"
    ACCEPTS: ClassVar[str] = "numeric"
    data = operand_def()
    result = result_def()
    pool_size = ints_prop()
    strides = ints_prop((1, 1))
    padding = ints_prop((0, 0, 0, 0))
    dilation = ints_prop((1, 1))
    ceil_mode = bool_prop(False)
    layout = str_prop("NCHW")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def pool(self, x: np.ndarray) -> np.ndarray:
        vals, inside, _ = self._windows(x)
        return np.where(inside, vals, _lowest(x.dtype)).max(axis=(3, 5))

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        out, kh, kw, read = self._te_window(x)
        lowest = topi.identity("max", x.dtype)

        def body(*args: Expr) -> Expr:
            *idx, rh, rw = args
            src, cond = read(idx, rh, rw)
            return x[src] if cond is None else te.select(cond, x[src], lowest)

        return [b.reduce(out, "max", (kh, kw), body, reduce_axes=("kh", "kw"), template="pool")]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Each window's cotangent goes to its first tap that holds the maximum."""
        self._canonical_for_vjp()
        (dy,) = grads
        x = self.data
        lowest = float(np.finfo(numpy_dtype_of(x.type.element_type)).min)
        zero = g.scalar(0.0, dy)
        taken: SSAValue | None = None
        dx: SSAValue | None = None
        for th, tw in self._taps():
            hit = g.op("equal", self._tap(g, x, th, tw, lowest), self.result)
            first = hit if taken is None else g.op("logical_and", hit, g.op("logical_not", taken))
            taken = hit if taken is None else g.op("logical_or", taken, hit)
            part = self._scatter(g, g.op("where", first, dy, zero), th, tw)
            dx = part if dx is None else g.op("add", dx, part)
        return [dx]


@irdl_op_definition
class AvgPool2DOp(_Pool2DOp):
    """`nnvm.avg_pool2d %x {pool_size = [2, 2], ...}`: window mean. The divisor counts the
    window's elements inside the input, or inside input + padding with count_include_pad (a
    ceil-mode window running past the padding is clipped, as ONNX does)."""

    name = "nnvm.avg_pool2d"
    data = operand_def()
    result = result_def()
    pool_size = ints_prop()
    strides = ints_prop((1, 1))
    padding = ints_prop((0, 0, 0, 0))
    dilation = ints_prop((1, 1))
    ceil_mode = bool_prop(False)
    count_include_pad = bool_prop(False)
    layout = str_prop("NCHW")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def pool(self, x: np.ndarray) -> np.ndarray:
        vals, inside, in_padded = self._windows(x.astype(np.float64))
        total = np.where(inside, vals, 0.0).sum(axis=(3, 5))
        counted = in_padded if self.attr("count_include_pad") else inside
        count = counted.sum(axis=(1, 3))
        return total / np.maximum(count, 1)

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        out, kh, kw, read = self._te_window(x)
        acc = topi.accumulation_type(x.dtype)

        def body(*args: Expr) -> Expr:
            *idx, rh, rw = args
            src, cond = read(idx, rh, rw)
            v = te.cast(x[src], acc)
            return v if cond is None else te.select(cond, v, 0.0)

        total = b.reduce(
            out, "sum", (kh, kw), body, name="sum", reduce_axes=("kh", "kw"), template="pool"
        )
        count = self._te_count(x, out)
        return [b.compute(out, lambda *i: te.cast(total[i] / count(i), x.dtype))]

    def _te_count(self, x: TensorRef, out: Sequence[int]) -> Callable[[Sequence[Expr]], Expr]:
        """The divisor of one output element: window taps inside the input (or inside input and
        padding with count_include_pad), clipped where ceil-mode windows run past it."""
        layout = self._layout()
        (kh, kw), (sh, sw), pad, (dh, dw) = self._window()
        _, _, h, w = layout.logical_shape(x.shape, "data")
        letters = [a if f == 0 else "" for a, f in layout.axes]
        ha, wa = letters.index("H"), letters.index("W")
        include = self.attr("count_include_pad")
        acc = topi.accumulation_type(x.dtype)

        def taps(o: Expr, k: int, s: int, d: int, p_lo: int, p_hi: int, n: int) -> Expr:
            lo, hi = (-p_lo, n + p_hi) if include else (0, n)
            start = o * s - p_lo
            if d == 1:
                first = te.maximum(start, lo)
                last = te.minimum(start + k, hi)
                return te.maximum(last - first, 0)
            total: Expr | None = None
            for t in range(k):
                pos = start + t * d
                inside = te.select((pos >= lo) & (pos < hi), 1, 0)
                total = inside if total is None else total + inside
            assert total is not None
            return total

        def count(i: Sequence[Expr]) -> Expr:
            ch = taps(i[ha], kh, sh, dh, pad[0], pad[2], h)
            cw = taps(i[wa], kw, sw, dw, pad[1], pad[3], w)
            return te.maximum(te.cast(ch * cw, acc), 1.0)

        return count

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Each window's cotangent, divided by its divisor, goes to every tap inside the input."""
        self._canonical_for_vjp()
        (dy,) = grads
        (kh, kw), (sh, sw), pad, (dh, dw) = self._window()
        h, w = shape(self.data)[2:]
        oh, ow = shape(dy)[2:]
        _, in_h, pad_h = _window_index(h, oh, kh, sh, pad[0], pad[2], dh)
        _, in_w, pad_w = _window_index(w, ow, kw, sw, pad[1], pad[3], dw)
        ch, cw = (pad_h, pad_w) if self.attr("count_include_pad") else (in_h, in_w)
        count = np.maximum(ch.sum(axis=1)[:, None] * cw.sum(axis=1)[None, :], 1)
        share = g.op("div", dy, g.constant(count, dy))
        dx: SSAValue | None = None
        for th, tw in self._taps():
            part = self._scatter(g, share, th, tw)
            dx = part if dx is None else g.op("add", dx, part)
        return [dx]


class _GlobalPool2DOp(_LayoutOp):
    """Pooling over all of H and W: [N, C, H, W] -> [N, C, 1, 1] (in the op's layout)."""

    data = operand_def()
    result = result_def()
    layout = str_prop("NCHW")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    ACCEPTS: ClassVar[str] = "float"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        self._check_dtype(x, self.ACCEPTS)
        layout = self._layout()
        n, c, h, w = layout.logical_shape(x.get_shape(), "data")
        if h < 1 or w < 1:
            raise ShapeError(f"{self.name}: cannot pool an empty {h}x{w} input")
        return [tensor(layout.physical_shape((n, c, 1, 1), "result"), x.element_type)]

    def pool(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        layout = self._layout()
        x = layout.to_canonical(inputs[0])
        out = self.pool(x).astype(inputs[0].dtype)
        return [layout.from_canonical(out)]

    def _te_reduce(self, b: KernelBuilder, x: TensorRef, kind: str) -> tuple[TensorRef, int]:
        layout = self._layout()
        letters = [a if f == 0 else "" for a, f in layout.axes]
        ha, wa = letters.index("H"), letters.index("W")
        acc = topi.accumulation_type(x.dtype) if kind == "sum" else x.dtype
        r = topi.reduce_over(
            b,
            x,
            [ha, wa],
            kind,
            keepdims=True,
            name=kind,
            value=lambda v: te.cast(v, acc),
            dtype=acc,
        )
        return r, x.shape[ha] * x.shape[wa]


@irdl_op_definition
class GlobalAvgPool2DOp(_GlobalPool2DOp):
    """`nnvm.global_avg_pool2d %x`: the mean of each (n, c) plane."""

    name = "nnvm.global_avg_pool2d"

    def pool(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.float64).mean(axis=(2, 3), keepdims=True)

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        total, count = self._te_reduce(b, x, "sum")
        return [b.compute(total.shape, lambda *i: te.cast(total[i] * (1.0 / count), x.dtype))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        if self.attr("layout") != "NCHW":
            raise NoGradient(f"{self.name} in layout {self.attr('layout')} has no gradient")
        (dy,) = grads
        src = shape(self.data)
        share = g.op("mul", dy, g.scalar(1.0 / (src[2] * src[3]), dy))
        return [g.op("broadcast_to", share, shape=list(src))]


@irdl_op_definition
class GlobalMaxPool2DOp(_GlobalPool2DOp):
    """`nnvm.global_max_pool2d %x`: the maximum of each (n, c) plane."""

    name = "nnvm.global_max_pool2d"
    ACCEPTS: ClassVar[str] = "numeric"

    def pool(self, x: np.ndarray) -> np.ndarray:
        return x.max(axis=(2, 3), keepdims=True)

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        m, _ = self._te_reduce(b, x, "max")
        return [m]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """To the elements equal to the maximum, shared by ties."""
        if self.attr("layout") != "NCHW":
            raise NoGradient(f"{self.name} in layout {self.attr('layout')} has no gradient")
        (dy,) = grads
        x = self.data
        src = shape(x)
        hit = g.op("equal", x, g.op("broadcast_to", self.result, shape=list(src)))
        ones = g.op("cast", hit, to=str(numpy_dtype_of(x.type.element_type)))
        ties = g.op("sum", ones, axes=[2, 3], keepdims=True)
        share = g.op("broadcast_to", g.op("div", dy, ties), shape=list(src))
        return [g.op("where", hit, share, g.scalar(0.0, share))]


POOLING_OPS: list[type[NNVMOp]] = [
    MaxPool2DOp,
    AvgPool2DOp,
    GlobalAvgPool2DOp,
    GlobalMaxPool2DOp,
]
