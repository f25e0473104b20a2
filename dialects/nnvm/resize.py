"""resize: ONNX Resize to a static size, as onnxruntime computes it (nearest, linear or cubic, every
coordinate transformation mode); its te kernel is in resize_kernel.py."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    UnaryTransformOp,
    bool_prop,
    float_prop,
    floats_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.te.builder import KernelBuilder, TensorRef

_RESIZE_MODES = ("nearest", "linear", "cubic")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

_F32 = np.float32


_COORDINATE_MODES = (
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
    "half_pixel_symmetric",
)


def _source_coordinates(
    mode: str,
    x: np.ndarray,
    s: np.float32,
    lo: np.float32,
    li: np.float32,
    r0: np.float32,
    r1: np.float32,
) -> np.ndarray:
    """Input coordinates of the output indices `x` for one ONNX coordinate_transformation_mode
    (scale s, output/input lengths lo/li, roi r0..r1), in float32 as onnxruntime evaluates
    them, so that nearest-neighbour ties land where onnxruntime's do."""
    one, half = _F32(1), _F32(0.5)
    if mode == "half_pixel":
        return (x + half) / s - half
    if mode == "pytorch_half_pixel":
        return (x + half) / s - half if lo > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return np.zeros_like(x) if lo == 1 else x * (li - one) / (lo - one)
    if mode == "asymmetric":
        return x / s
    if mode == "tf_crop_and_resize":
        if lo > 1:
            return r0 * (li - one) + (x * (r1 - r0) * (li - one)) / (lo - one)
        return np.full_like(x, half * (r0 + r1) * (li - one))
    assert mode == "half_pixel_symmetric", mode
    adjustment = lo / (s * li)
    offset = (li / _F32(2)) * (one - adjustment)
    return offset + (x + half) / s - half


def _nearest_index(x: np.ndarray, mode: str) -> np.ndarray:
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    tie = x - np.floor(x) == _F32(0.5)
    if mode == "round_prefer_floor":
        return np.where(tie, np.floor(x), np.round(x))
    return np.where(tie, np.ceil(x), np.round(x))


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic convolution weights of the 4 taps at distances 1+t, t, 1-t, 2-t."""

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return np.stack([far(1 + t), near(t), near(1 - t), far(2 - t)], axis=-1)


@irdl_op_definition
class ResizeOp(UnaryTransformOp):
    """ONNX Resize to a static `size` (nearest, N-D linear or cubic interpolation) with every
    coordinate transformation mode. `scales`, when the model gave them, drive the coordinate
    transform as in ONNX; `roi` ([starts..., ends...], normalized) serves tf_crop_and_resize.
    Like onnxruntime, an axis of scale 1 is copied as is. With `antialias`, a downsampled
    axis (scale < 1) of linear or cubic mode filters with the kernel stretched by 1 / scale
    (more taps, weights normalized to sum 1), as ONNX defines it."""

    name = "nnvm.resize"
    size = ints_prop()
    scales = floats_prop(())
    roi = floats_prop(())
    mode = str_prop("nearest")
    coordinate_transformation_mode = str_prop("half_pixel")
    nearest_mode = str_prop("round_prefer_floor")
    cubic_coeff_a = float_prop(-0.75)
    exclude_outside = bool_prop(False)
    extrapolation_value = float_prop(0.0)
    antialias = bool_prop(False)

    def _check(self, t: TensorType) -> None:
        shape = t.get_shape()
        rank = len(shape)
        size, scales, roi = self.attr("size"), self.attr("scales"), self.attr("roi")
        mode, ctm = self.attr("mode"), self.attr("coordinate_transformation_mode")
        if mode not in _RESIZE_MODES:
            raise ShapeError(f"resize: mode must be nearest, linear or cubic, got {mode!r}")
        if ctm not in _COORDINATE_MODES:
            raise ShapeError(f"resize: unknown coordinate_transformation_mode {ctm!r}")
        if self.attr("nearest_mode") not in _NEAREST_MODES:
            raise ShapeError(f"resize: unknown nearest_mode {self.attr('nearest_mode')!r}")
        if mode != "nearest" and not is_float(t.element_type):
            raise ShapeError(
                f"resize: {mode} interpolation needs a float tensor, got {t.element_type}"
            )
        if len(size) != rank:
            raise ShapeError(f"resize: size {list(size)} must have one entry per axis ({rank})")
        if any(d < 1 for d in size) or any(d < 1 for d in shape):
            raise ShapeError("resize: input and output extents must be >= 1")
        if scales and (len(scales) != rank or min(scales) <= 0):
            raise ShapeError(f"resize: scales must be empty or {rank} positive values")
        if roi and len(roi) != 2 * rank:
            raise ShapeError(f"resize: roi must be empty or {2 * rank} values")

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        self._check(t)
        return [tensor(self.attr("size"), t.element_type)]

    def axis_coordinates(self, axis: int, in_len: int, out_len: int) -> np.ndarray:
        scales, roi = self.attr("scales"), self.attr("roi")
        rank = len(self.attr("size"))
        scale = _F32(scales[axis]) if scales else _F32(out_len) / _F32(in_len)
        r0, r1 = (_F32(roi[axis]), _F32(roi[rank + axis])) if roi else (_F32(0), _F32(1))
        x = np.arange(out_len, dtype=_F32)
        if scale == _F32(1):
            # onnxruntime leaves an axis of scale 1 untouched, even where tf_crop_and_resize's
            # roi would crop it; we match it
            return x
        ctm = self.attr("coordinate_transformation_mode")
        coords = _source_coordinates(ctm, x, scale, _F32(out_len), _F32(in_len), r0, r1)
        return np.asarray(coords, dtype=_F32)

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        mode = self.attr("mode")
        extrapolate = self.attr("coordinate_transformation_mode") == "tf_crop_and_resize"
        work = x if mode == "nearest" else x.astype(np.float64)
        outside = np.zeros(self.attr("size"), dtype=bool)
        for axis, out_len in enumerate(self.attr("size")):
            in_len = x.shape[axis]
            coords = self.axis_coordinates(axis, in_len, out_len)
            if extrapolate:
                off = (coords < 0) | (coords > in_len - 1)
                shape = [1] * x.ndim
                shape[axis] = out_len
                outside |= off.reshape(shape)
            if out_len == in_len and np.array_equal(coords, np.arange(in_len, dtype=_F32)):
                continue
            work = self._resample(work, axis, coords, in_len)
        out = work.astype(x.dtype)
        if extrapolate:
            out[outside] = np.array(self.attr("extrapolation_value")).astype(x.dtype)
        return [out]

    def _resample(self, x: np.ndarray, axis: int, coords: np.ndarray, in_len: int) -> np.ndarray:
        """Interpolate along one axis (resizing is separable in every mode)."""
        taps, weights = self.taps(axis, coords, in_len)
        if weights is None:
            return np.take(x, taps[:, 0], axis=axis)
        moved = np.moveaxis(x, axis, -1)
        out = np.einsum("...ot,ot->...o", moved[..., taps], weights)
        return np.moveaxis(out, -1, axis)

    def taps(
        self, axis: int, coords: np.ndarray, in_len: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The input index of each tap of each output position along one axis, and the taps'
        weights (None for nearest): what both the reference and the te kernel interpolate by."""
        mode = self.attr("mode")
        if mode == "nearest":
            idx = _nearest_index(coords, self.attr("nearest_mode")).astype(np.int64)
            return np.clip(idx, 0, in_len - 1)[:, None], None
        scale = self._scale(axis, in_len)
        if self.attr("antialias") and scale < 1:
            return self._antialias_taps(coords, in_len, scale)
        if mode == "linear":
            c = np.clip(coords, _F32(0), _F32(in_len - 1)).astype(np.float64)
            i0 = np.floor(c).astype(np.int64)
            w1 = c - i0
            return np.stack([i0, np.minimum(i0 + 1, in_len - 1)], -1), np.stack([1 - w1, w1], -1)
        c = coords.astype(np.float64)
        base = np.floor(c).astype(np.int64)
        taps = base[:, None] + np.arange(-1, 3)[None, :]
        weights = _cubic_weights(c - base, self.attr("cubic_coeff_a"))
        if self.attr("exclude_outside"):
            weights = np.where((taps < 0) | (taps >= in_len), 0.0, weights)
            weights = weights / weights.sum(axis=1, keepdims=True)
        return np.clip(taps, 0, in_len - 1), weights

    def _scale(self, axis: int, in_len: int) -> float:
        scales = self.attr("scales")
        return float(_F32(scales[axis]) if scales else _F32(self.attr("size")[axis]) / _F32(in_len))

    def _antialias_taps(
        self, coords: np.ndarray, in_len: int, scale: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The stretched filter: tap base + i (i from `first`, n taps) of an output at source
        coordinate base + ratio weighs f(scale * (i - ratio)), f the triangle (linear) or the
        Keys cubic, normalized; ratio is in (0, 1] (an integer coordinate has ratio 1).
        Taps past the edges read the edge value (or, with exclude_outside, weigh 0)."""
        c = coords.astype(np.float64)
        base = np.floor(c)
        ratio = c - base
        whole = ratio == 0
        base = np.where(whole, base - 1, base).astype(np.int64)
        ratio = np.where(whole, 1.0, ratio)
        reach = 1 if self.attr("mode") == "linear" else 2
        first = int(np.floor(-reach / scale) + 1)
        offsets = np.arange(first, 2 - first)
        d = np.abs(scale * (offsets[None, :] - ratio[:, None]))
        if self.attr("mode") == "linear":
            weights = np.clip(1 - d, 0, 1)
        else:
            a = self.attr("cubic_coeff_a")
            near = ((a + 2) * d - (a + 3)) * d * d + 1
            far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
            weights = np.where(d <= 1, near, np.where(d < 2, far, 0.0))
        taps = base[:, None] + offsets[None, :]
        weights = weights / weights.sum(axis=1, keepdims=True)
        if self.attr("exclude_outside"):
            weights = np.where((taps < 0) | (taps >= in_len), 0.0, weights)
            weights = weights / weights.sum(axis=1, keepdims=True)
        return np.clip(taps, 0, in_len - 1), weights

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """One stage per resampled axis over constant tap tables (resize_kernel.py)."""
        from nnvm.dialects.nnvm.resize_kernel import resize_kernel

        return resize_kernel(self, b, inputs)


RESIZE_OPS: list[type[NNVMOp]] = [ResizeOp]
