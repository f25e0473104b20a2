"""Selecting ops: slice (a strided box) and gather / gather_nd / gather_elements (entries picked
by an index tensor; negative indices count from the end, others out of range are an error)."""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    UnaryTransformOp,
    int_prop,
    ints_prop,
    normalize_axis,
    tensor,
    unique_axes,
)
from nnvm.dialects.nnvm.dtypes import is_integer
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


def slice_indices(dim: int, start: int, end: int, step: int) -> range:
    """The input indices one ONNX Slice entry selects on an axis of extent `dim` (negative
    starts/ends count from the end; out-of-range values clamp, differently for negative steps)."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, 0), dim - 1)
        end = min(max(end, -1), dim - 1)
    return range(start, end, step)


@irdl_op_definition
class SliceOp(UnaryTransformOp):
    """ONNX Slice with explicit starts, ends, axes and steps (one entry per sliced axis)."""

    name = "nnvm.slice"
    starts = ints_prop()
    ends = ints_prop()
    axes = ints_prop()
    steps = ints_prop()

    def _ranges(self, shape: Sequence[int]) -> list[range]:
        starts, ends = self.attr("starts"), self.attr("ends")
        axes, steps = self.attr("axes"), self.attr("steps")
        if not len(starts) == len(ends) == len(axes) == len(steps):
            raise ShapeError(
                f"slice: starts, ends, axes and steps must have one length, got {len(starts)}, "
                f"{len(ends)}, {len(axes)}, {len(steps)}"
            )
        ranges = [range(d) for d in shape]
        for a, s, e, st in zip(
            unique_axes(axes, len(shape), "slice: axis"), starts, ends, steps, strict=True
        ):
            if st == 0:
                raise ShapeError("slice: steps must be non-zero")
            ranges[a] = slice_indices(shape[a], s, e, st)
        return ranges

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        return [tensor([len(r) for r in self._ranges(t.get_shape())], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        index = tuple(
            slice(r.start, r.stop if r.stop >= 0 else None, r.step) for r in self._ranges(x.shape)
        )
        return [np.asarray(x[index], order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        ranges = self._ranges(x.shape)
        return [
            b.compute(
                [len(r) for r in ranges],
                lambda *i: x[[i[k] * r.step + r.start for k, r in enumerate(ranges)]],
            )
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Unit steps: the cotangent padded back with zeros where the slice cut."""
        src = shape(self.input)
        ranges = self._ranges(src)
        if any(r.step != 1 for r in ranges):
            raise NoGradient("slice with steps other than 1 has no gradient")
        lo = [r.start if len(r) else 0 for r in ranges]
        hi = [d - (r.stop if len(r) else 0) for d, r in zip(src, ranges, strict=True)]
        return [g.op("pad", grads[0], pads=[*lo, *hi])]


def _check_indices(t: TensorType, what: str) -> None:
    if not is_integer(t.element_type):
        raise ShapeError(f"{what}: indices must be integers, got {t.element_type}")


def check_index_box(data: Sequence[int], indices: Sequence[int], axis: int, what: str) -> None:
    """Element-wise indices (GatherElements, ScatterElements) may be smaller than data off the
    axis, never larger."""
    for k, (n, m) in enumerate(zip(data, indices, strict=True)):
        if k != axis and m > n:
            raise ShapeError(f"{what}: indices extent {m} exceeds data extent {n} on axis {k}")


def wrap_indices(idx: np.ndarray, dim: int, what: str) -> np.ndarray:
    """Negative indices count from the end; anything still outside [0, dim) is an error."""
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + dim, idx)
    if idx.size and (idx.min() < 0 or idx.max() >= dim):
        raise IndexError(f"{what}: an index is out of range for an axis of extent {dim}")
    return idx


@irdl_op_definition
class GatherOp(NNVMOp):
    """ONNX Gather: pick entries of `data` along `axis` by integer indices (negative ones count
    from the end); the result shape is data[:axis] + indices + data[axis+1:]."""

    name = "nnvm.gather"
    data = operand_def()
    indices = operand_def()
    result = result_def()
    axis = int_prop(0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, i = operand_types
        _check_indices(i, "gather")
        shape = d.get_shape()
        if not shape:
            raise ShapeError("gather: data must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), "gather: axis")
        out = [*shape[:axis], *i.get_shape(), *shape[axis + 1 :]]
        return [tensor(out, d.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data, idx = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "gather: axis")
        idx = wrap_indices(idx, data.shape[axis], "gather")
        return [np.take(data, idx, axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "gather: axis")
        shape = self.infer_result_types([data.type, idx.type])[0].get_shape()
        q = idx.ndim

        def body(*i: Expr) -> Expr:
            j = wrap(topi.to_index(idx[i[axis : axis + q]]), data.shape[axis])
            return data[[*i[:axis], j, *i[axis + q :]]]

        return [b.compute(shape, body)]


@irdl_op_definition
class GatherNDOp(NNVMOp):
    """ONNX GatherND: the last axis of `indices` addresses a slice of `data` (after
    `batch_dims` leading axes that data and indices share)."""

    name = "nnvm.gather_nd"
    data = operand_def()
    indices = operand_def()
    result = result_def()
    batch_dims = int_prop(0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, i = operand_types
        _check_indices(i, "gather_nd")
        ds, js = d.get_shape(), i.get_shape()
        b = self.attr("batch_dims")
        if not ds or not js:
            raise ShapeError("gather_nd: data and indices must have rank >= 1")
        if not 0 <= b < min(len(ds), len(js)):
            raise ShapeError(
                f"gather_nd: batch_dims {b} must be less than both ranks ({len(ds)}, {len(js)})"
            )
        if ds[:b] != js[:b]:
            raise ShapeError(
                f"gather_nd: the {b} batch axes differ: data {list(ds[:b])}, indices {list(js[:b])}"
            )
        m = js[-1]
        if not 1 <= m <= len(ds) - b:
            raise ShapeError(
                f"gather_nd: indices address {m} axes, but data has {len(ds) - b} after the "
                "batch axes"
            )
        return [tensor([*js[:-1], *ds[b + m :]], d.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data, idx = inputs
        b = self.attr("batch_dims")
        m = idx.shape[-1]
        batch = math.prod(data.shape[:b])
        flat_data = data.reshape(batch, *data.shape[b:])
        flat_idx = idx.reshape(batch, -1, m).astype(np.int64)
        for k in range(m):
            flat_idx[..., k] = wrap_indices(flat_idx[..., k], data.shape[b + k], "gather_nd")
        pieces = [flat_data[n][tuple(flat_idx[n].T)] for n in range(batch)]
        out_shape = (*idx.shape[:-1], *data.shape[b + m :])
        if not pieces:
            return [np.zeros(out_shape, data.dtype)]
        return [np.asarray(np.stack(pieces), order="C").reshape(out_shape)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx = inputs
        bd = self.attr("batch_dims")
        m = idx.shape[-1]
        shape = self.infer_result_types([data.type, idx.type])[0].get_shape()
        lead = idx.ndim - 1

        def body(*i: Expr) -> Expr:
            head, rest = i[:lead], i[lead:]
            picked = [wrap(topi.to_index(idx[[*head, k]]), data.shape[bd + k]) for k in range(m)]
            return data[[*head[:bd], *picked, *rest]]

        return [b.compute(shape, body)]


@irdl_op_definition
class GatherElementsOp(NNVMOp):
    """ONNX GatherElements: out[i] = data[i with axis coordinate indices[i]]; `indices` has
    data's rank, the result its shape (extents at most data's off the axis)."""

    name = "nnvm.gather_elements"
    data = operand_def()
    indices = operand_def()
    result = result_def()
    axis = int_prop(0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, i = operand_types
        _check_indices(i, "gather_elements")
        ds, js = d.get_shape(), i.get_shape()
        if not ds or len(ds) != len(js):
            raise ShapeError(
                f"gather_elements: data and indices must have one rank >= 1, got {len(ds)} "
                f"and {len(js)}"
            )
        axis = normalize_axis(self.attr("axis"), len(ds), "gather_elements: axis")
        check_index_box(ds, js, axis, "gather_elements")
        return [tensor(js, d.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data, idx = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "gather_elements: axis")
        idx = wrap_indices(idx, data.shape[axis], "gather_elements")
        box = tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(idx.shape))
        return [np.take_along_axis(data[box], idx, axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "gather_elements: axis")

        def body(*i: Expr) -> Expr:
            at = list(i)
            at[axis] = wrap(topi.to_index(idx[i]), data.shape[axis])
            return data[at]

        return [b.compute(idx.shape, body)]


def wrap(v: Expr, dim: int) -> Expr:
    """A negative index counts from the end."""
    return te.select(v < 0, v + dim, v)


INDEXING_OPS: list[type[NNVMOp]] = [SliceOp, GatherOp, GatherNDOp, GatherElementsOp]
