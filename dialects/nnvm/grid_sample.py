"""grid_sample: ONNX GridSample. Each output position reads the input at the position a grid
gives (normalized to [-1, 1], the last grid axis in reverse axis order: x, y, z), by nearest,
linear or cubic interpolation over 1 to 3 spatial axes; outside the input, padding is zeros,
the border value or a reflection.

Per spatial axis the same steps run in the numpy semantics and the te formula: denormalize
the coordinate (align_corners maps -1 and 1 to the corner pixels' centers, else to their
outer edges), round it for nearest, bring an outside coordinate back for border / reflection
padding, then take 1, 2 or 4 taps with their weights; a tap outside the input reads 0 (zeros),
the edge (border) or its reflection. The output sums over every combination of taps."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import EvalContext, NNVMOp, ShapeError, bool_prop, str_prop, tensor
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

_MODES = ("nearest", "linear", "cubic")
_PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75


def _cubic(t: Any) -> list[Any]:
    """Keys cubic weights of the taps at x0 - 1, x0, x0 + 1, x0 + 2 for t = x - x0 in [0, 1)."""
    a = CUBIC_A

    def near(d: Any) -> Any:
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: Any) -> Any:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


class _Math:
    """The few operations the per-axis steps need, for numpy arrays or te expressions."""

    def __init__(self, numpy: bool):
        self.numpy = numpy

    def floor(self, x: Any) -> Any:
        return np.floor(x) if self.numpy else te.unary("floor", x)

    def rint(self, x: Any) -> Any:
        return np.rint(x) if self.numpy else te.unary("roundeven", x)

    def where(self, c: Any, a: Any, b: Any) -> Any:
        return np.where(c, a, b) if self.numpy else te.select(c, a, b)

    def clamp(self, x: Any, lo: float, hi: float) -> Any:
        if self.numpy:
            return np.clip(x, lo, hi)
        return te.minimum(te.maximum(x, lo), hi)

    def reflect(self, x: Any, lo: float, hi: float) -> Any:
        """Fold x into [lo, hi] by reflecting at the nearer border, as often as needed."""
        span = hi - lo
        if span <= 0:
            return x * 0 + lo
        below = x < lo
        dx = self.where(below, lo - x, x - hi)
        n = self.floor(dx / span)
        r = dx - n * span
        even = (n - 2 * self.floor(n / 2)) < 0.5
        inside_below = self.where(even, lo + r, hi - r)
        inside_above = self.where(even, hi - r, lo + r)
        folded = self.where(below, inside_below, inside_above)
        return self.where(below | (x > hi), folded, x)


@irdl_op_definition
class GridSampleOp(NNVMOp):
    """`%y = nnvm.grid_sample %x, %grid {mode, padding_mode, align_corners}`: x is
    [N, C, D1..Dk], grid [N, O1..Ok, k] (k = 1 to 3), y [N, C, O1..Ok]."""

    name = "nnvm.grid_sample"
    input = operand_def()
    grid = operand_def()
    result = result_def()
    mode = str_prop("linear")
    padding_mode = str_prop("zeros")
    align_corners = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x, g = operand_types
        if self.attr("mode") not in _MODES:
            raise ShapeError(f"grid_sample: mode must be one of {_MODES}")
        if self.attr("padding_mode") not in _PADDINGS:
            raise ShapeError(f"grid_sample: padding_mode must be one of {_PADDINGS}")
        xs, gs = x.get_shape(), g.get_shape()
        k = len(xs) - 2
        if not 1 <= k <= 3:
            raise ShapeError(f"grid_sample: the input must have 1 to 3 spatial axes, got {k}")
        if len(gs) != k + 2 or gs[0] != xs[0] or gs[-1] != k:
            raise ShapeError(
                f"grid_sample: the grid must have shape [{xs[0]}, out..., {k}], got {list(gs)}"
            )
        if not (is_float(x.element_type) and is_float(g.element_type)):
            raise ShapeError("grid_sample: input and grid must be float tensors")
        return [tensor([xs[0], xs[1], *gs[1:-1]], x.element_type)]

    def _borders(self, length: int) -> tuple[float, float]:
        return (0.0, length - 1.0) if self.attr("align_corners") else (-0.5, length - 0.5)

    def _axis_taps(self, m: _Math, g: Any, length: int) -> list[tuple[Any, Any, Any | None]]:
        """(index, weight, valid) of each tap along one axis for normalized coordinate g;
        indices are safe to read (clamped), valid is None when every tap is."""
        mode, padding = self.attr("mode"), self.attr("padding_mode")
        lo, hi = self._borders(length)
        if self.attr("align_corners"):
            x = (g + 1) / 2 * (length - 1)
        else:
            x = ((g + 1) * length - 1) / 2
        if mode == "nearest":
            x = m.rint(x)
        if mode != "cubic":
            # cubic pads only its taps (as onnxruntime and PyTorch do), the others first bring
            # a coordinate outside the borders back in
            outside = (x < lo) | (x > hi)
            if padding == "border":
                x = m.where(outside, m.clamp(x, 0.0, length - 1.0), x)
            elif padding == "reflection":
                x = m.reflect(x, lo, hi)
        if mode == "nearest":
            starts, weights = [m.where(x < 0, -m.floor(-x), m.floor(x))], [1.0]  # truncation
        else:
            x0 = m.floor(x)
            t = x - x0
            if mode == "linear":
                starts, weights = [x0, x0 + 1], [1 - t, t]
            else:
                starts, weights = [x0 - 1, x0, x0 + 1, x0 + 2], _cubic(t)
        taps = []
        for i, w in zip(starts, weights, strict=True):
            valid = None
            if padding == "zeros":
                valid = (i >= 0) & (i <= length - 1)
            elif padding == "reflection":
                i = m.reflect(i, lo, hi)
                i = m.where(i < 0, -m.floor(-i), m.floor(i))
            taps.append((m.clamp(i, 0.0, length - 1.0), w, valid))
        return taps

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, grid = inputs
        k = x.ndim - 2
        g = grid.astype(np.float64)
        m = _Math(numpy=True)
        per_axis = [self._axis_taps(m, g[..., k - 1 - a], x.shape[2 + a]) for a in range(k)]
        n_idx = np.arange(x.shape[0]).reshape(-1, *[1] * k)
        out = np.zeros((x.shape[0], x.shape[1], *grid.shape[1:-1]))
        with np.errstate(all="ignore"):
            for combo in itertools.product(*per_axis):
                weight: Any = 1.0
                index: list[np.ndarray] = []
                for i, w, valid in combo:
                    weight = weight * (w if valid is None else np.where(valid, w, 0.0))
                    index.append(i.astype(np.int64))
                picked = x[(n_idx, slice(None), *index)]  # [N, out..., C]
                picked = np.moveaxis(picked, -1, 1)
                weight = np.broadcast_to(np.asarray(weight, np.float64), index[0].shape)
                out = out + weight[:, None] * picked
        return [out.astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, grid = inputs
        k = x.ndim - 2
        m = _Math(numpy=False)
        shape = self.infer_result_types([x.type, grid.type])[0].get_shape()

        def body(n: Expr, c: Expr, *o: Expr) -> Expr:
            per_axis = [
                self._axis_taps(m, grid[[n, *o, k - 1 - a]], x.shape[2 + a]) for a in range(k)
            ]
            total: Expr | None = None
            for combo in itertools.product(*per_axis):
                weight: Expr | float = 1.0
                index: list[Expr] = []
                for i, w, valid in combo:
                    weight = weight * (w if valid is None else te.select(valid, w, 0.0))
                    index.append(topi.to_index(i))
                term = te.cast(x[[n, c, *index]], grid.dtype) * weight
                total = term if total is None else total + term
            assert total is not None
            return te.cast(total, x.dtype)

        return [b.compute(shape, body)]


GRID_SAMPLE_OPS: list[type[NNVMOp]] = [GridSampleOp]
