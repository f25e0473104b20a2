"""Data-movement ops: each output element is some input element found by an index computation
(reshape, transpose, slice, gather, pad, layout_transform, ...), plus resize and cumsum.

All shapes are static: frontends resolve ONNX's -1/0 conventions and shape inputs into properties
before building these ops, so a property list here is always explicit and complete.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    broadcast_shapes,
    float_prop,
    floats_prop,
    int_prop,
    ints_prop,
    normalize_axis,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float, is_integer
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


def _unique_axes(axes: Sequence[int], rank: int, what: str) -> list[int]:
    """Normalized axes, rejecting duplicates (they would silently mean one axis)."""
    out = [normalize_axis(a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {list(axes)} name an axis twice")
    return out


class UnaryTransformOp(NNVMOp):
    """Shared shape of the one-input, one-result data-movement ops."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))


# ----------------------------------------------------------------------------------------------
# Reshaping: reshape, flatten, squeeze, expand_dims
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(UnaryTransformOp):
    """Reinterpret the row-major data with a new static shape (same element count)."""

    name = "nnvm.reshape"
    shape = ints_prop()

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = self.attr("shape")
        if any(d < 0 for d in shape):
            raise ShapeError(f"reshape: target shape {list(shape)} must be static (no -1)")
        if math.prod(shape) != math.prod(t.get_shape()):
            raise ShapeError(
                f"reshape: cannot reshape {list(t.get_shape())} ({math.prod(t.get_shape())} "
                f"elements) to {list(shape)} ({math.prod(shape)} elements)"
            )
        return [tensor(shape, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.reshape(inputs[0], self.attr("shape"))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [_te_reshape(b, x, tuple(self.attr("shape")))]


@irdl_op_definition
class FlattenOp(UnaryTransformOp):
    """ONNX Flatten: collapse axes [0, axis) and [axis, rank) into a 2-D matrix."""

    name = "nnvm.flatten"
    axis = int_prop(1)

    def _split(self, rank: int) -> int:
        axis = self.attr("axis")
        if not -rank <= axis <= rank:
            raise ShapeError(f"flatten: axis {axis} is out of range for rank {rank}")
        return axis + rank if axis < 0 else axis

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        k = self._split(len(shape))
        return [tensor((math.prod(shape[:k]), math.prod(shape[k:])), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        k = self._split(x.ndim)
        return [x.reshape(math.prod(x.shape[:k]), math.prod(x.shape[k:]))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        out = self.infer_result_types([x.type])[0]
        return [_te_reshape(b, x, tuple(out.get_shape()))]


@irdl_op_definition
class SqueezeOp(UnaryTransformOp):
    """Drop the listed size-1 axes (axes index the input)."""

    name = "nnvm.squeeze"
    axes = ints_prop()

    def _axes(self, shape: Sequence[int]) -> list[int]:
        axes = _unique_axes(self.attr("axes"), len(shape), "squeeze: axis")
        for a in axes:
            if shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} has extent {shape[a]}, not 1")
        return axes

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        axes = self._axes(shape)
        return [tensor([d for k, d in enumerate(shape) if k not in axes], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.squeeze(inputs[0], axis=tuple(self._axes(inputs[0].shape)))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [_te_reshape(b, x, tuple(self.infer_result_types([x.type])[0].get_shape()))]


@irdl_op_definition
class ExpandDimsOp(UnaryTransformOp):
    """ONNX Unsqueeze: insert size-1 axes; the axes index the output."""

    name = "nnvm.expand_dims"
    axes = ints_prop()

    def _axes(self, rank: int) -> list[int]:
        return _unique_axes(self.attr("axes"), rank + len(self.attr("axes")), "expand_dims: axis")

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = list(t.get_shape())
        axes = self._axes(len(shape))
        out: list[int] = []
        rest = iter(shape)
        for k in range(len(shape) + len(axes)):
            out.append(1 if k in axes else next(rest))
        return [tensor(out, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.expand_dims(inputs[0], tuple(self._axes(inputs[0].ndim)))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [_te_reshape(b, x, tuple(self.infer_result_types([x.type])[0].get_shape()))]


# ----------------------------------------------------------------------------------------------
# Reordering: transpose, layout_transform, depth_to_space, space_to_depth
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class TransposeOp(UnaryTransformOp):
    """Permute axes: result axis k is input axis perm[k]."""

    name = "nnvm.transpose"
    perm = ints_prop()

    def _perm(self, rank: int) -> tuple[int, ...]:
        perm = self.attr("perm")
        if sorted(perm) != list(range(rank)):
            raise ShapeError(f"transpose: perm {list(perm)} is not a permutation of 0..{rank - 1}")
        return perm

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        return [tensor([shape[p] for p in self._perm(len(shape))], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        return [np.asarray(np.transpose(x, self._perm(x.ndim)), order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        perm = self._perm(x.ndim)
        shape = [x.shape[p] for p in perm]

        def body(*i: Expr) -> Expr:
            src: list[Expr] = [i[0]] * x.ndim
            for k, p in enumerate(perm):
                src[p] = i[k]
            return x[src]

        return [b.compute(shape, body)]


@irdl_op_definition
class LayoutTransformOp(UnaryTransformOp):
    """Re-store a tensor from one layout to another over the same primal axes ("NCHW" ->
    "NCHW8c"); alter-layout inserts these around ops that prefer blocked data."""

    name = "nnvm.layout_transform"
    src_layout = str_prop()
    dst_layout = str_prop()

    def _layouts(self) -> tuple[Layout, Layout]:
        src_text, dst_text = self.attr("src_layout"), self.attr("dst_layout")
        canonical = "".join(c for c in src_text if c.isupper())
        try:
            src = Layout.parse(src_text, canonical)
        except ValueError as err:
            raise ShapeError(f"layout_transform: {err}") from None
        try:
            dst = Layout.parse(dst_text, canonical)
        except ValueError:
            raise ShapeError(
                f"layout_transform: {dst_text!r} is not a layout over the axes of {src_text!r}"
            ) from None
        return src, dst

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        src, dst = self._layouts()
        logical = src.logical_shape(t.get_shape(), "layout_transform input")
        return [tensor(dst.physical_shape(logical, "layout_transform result"), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        src, dst = self._layouts()
        return [np.asarray(dst.from_canonical(src.to_canonical(inputs[0])), order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        src, dst = self._layouts()
        shape = self.infer_result_types([x.type])[0].get_shape()

        def body(*i: Expr) -> Expr:
            logical = topi.from_blocked(dst.axes, dst.canonical, i)
            return x[topi.to_blocked(src.axes, dict(zip(dst.canonical, logical, strict=True)))]

        # between blocked layouts the default schedule keeps vectors within one source block
        reblock = self.attr("src_layout")[-1].islower() and self.attr("dst_layout")[-1].islower()
        return [b.compute(shape, body, template="reblock" if reblock else None)]


_BLOCK_MODES = ("DCR", "CRD")


class BlockRearrangeOp(UnaryTransformOp):
    """Shared checks of depth_to_space and space_to_depth (4-D NCHW, a block size, a mode)."""

    blocksize = int_prop()
    mode = str_prop("DCR")

    def _block(self, t: TensorType) -> tuple[int, str]:
        b, mode = self.attr("blocksize"), self.attr("mode")
        if len(t.get_shape()) != 4:
            raise ShapeError(f"{self.name} needs a 4-D NCHW input, got rank {len(t.get_shape())}")
        if b < 1:
            raise ShapeError(f"{self.name}: blocksize must be >= 1, got {b}")
        if mode not in _BLOCK_MODES:
            raise ShapeError(f"{self.name}: mode must be DCR or CRD, got {mode!r}")
        return b, mode


@irdl_op_definition
class DepthToSpaceOp(BlockRearrangeOp):
    """ONNX DepthToSpace: move blocks of channels into b x b spatial tiles."""

    name = "nnvm.depth_to_space"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        b, _ = self._block(t)
        n, c, h, w = t.get_shape()
        if c % (b * b):
            raise ShapeError(
                f"depth_to_space: channels {c} are not divisible by blocksize^2 {b * b}"
            )
        return [tensor((n, c // (b * b), h * b, w * b), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        b = self.attr("blocksize")
        n, c, h, w = x.shape
        if self.attr("mode") == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return [np.asarray(y, order="C").reshape(n, c // (b * b), h * b, w * b)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        bs = self.attr("blocksize")
        shape = self.infer_result_types([x.type])[0].get_shape()
        c_out = shape[1]
        dcr = self.attr("mode") == "DCR"

        def body(n: Expr, c: Expr, h: Expr, w: Expr) -> Expr:
            b1, b2 = h % bs, w % bs
            cin = (b1 * bs + b2) * c_out + c if dcr else c * (bs * bs) + b1 * bs + b2
            return x[n, cin, h // bs, w // bs]

        return [b.compute(shape, body)]


@irdl_op_definition
class SpaceToDepthOp(BlockRearrangeOp):
    """ONNX SpaceToDepth: fold b x b spatial tiles into channels (the inverse of depth_to_space
    in the same mode; ONNX's op is mode DCR)."""

    name = "nnvm.space_to_depth"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        b, _ = self._block(t)
        n, c, h, w = t.get_shape()
        if h % b or w % b:
            raise ShapeError(f"space_to_depth: spatial extents {h}x{w} are not divisible by {b}")
        return [tensor((n, c * b * b, h // b, w // b), t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        b = self.attr("blocksize")
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b)
        order = (0, 3, 5, 1, 2, 4) if self.attr("mode") == "DCR" else (0, 1, 3, 5, 2, 4)
        out = np.asarray(y.transpose(order), order="C")
        return [out.reshape(n, c * b * b, h // b, w // b)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        bs = self.attr("blocksize")
        shape = self.infer_result_types([x.type])[0].get_shape()
        c_in = x.shape[1]
        dcr = self.attr("mode") == "DCR"

        def body(n: Expr, oc: Expr, h: Expr, w: Expr) -> Expr:
            if dcr:
                b1, b2, c = oc // (bs * c_in), (oc // c_in) % bs, oc % c_in
            else:
                c, b1, b2 = oc // (bs * bs), (oc // bs) % bs, oc % bs
            return x[n, c, h * bs + b1, w * bs + b2]

        return [b.compute(shape, body)]


# ----------------------------------------------------------------------------------------------
# Joining and splitting: concat, split
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class ConcatOp(NNVMOp):
    """Join one or more tensors along `axis`; all other extents must agree."""

    name = "nnvm.concat"
    inputs = var_operand_def()
    result = result_def()
    axis = int_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        if not operand_types:
            raise ShapeError("concat needs at least one operand")
        first = operand_types[0]
        rank = len(first.get_shape())
        if rank == 0:
            raise ShapeError("concat: operands must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), rank, "concat: axis")
        total = 0
        for k, t in enumerate(operand_types):
            shape = t.get_shape()
            if t.element_type != first.element_type:
                raise ShapeError(
                    f"concat: operand #{k} has element type {t.element_type}, operand #0 "
                    f"{first.element_type}"
                )
            if len(shape) != rank:
                raise ShapeError(f"concat: operand #{k} has rank {len(shape)}, operand #0 {rank}")
            for d in range(rank):
                if d != axis and shape[d] != first.get_shape()[d]:
                    raise ShapeError(
                        f"concat: operand #{k} has shape {list(shape)}, which differs from "
                        f"{list(first.get_shape())} off the concatenation axis {axis}"
                    )
            total += shape[axis]
        out = list(first.get_shape())
        out[axis] = total
        return [tensor(out, first.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        axis = normalize_axis(self.attr("axis"), inputs[0].ndim, "concat: axis")
        return [np.concatenate(list(inputs), axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        axis = normalize_axis(self.attr("axis"), inputs[0].ndim, "concat: axis")
        shape = self.infer_result_types([x.type for x in inputs])[0].get_shape()
        starts = [0]
        for x in inputs:
            starts.append(starts[-1] + x.shape[axis])

        def body(*i: Expr) -> Expr:
            value: Expr | None = None
            for k in reversed(range(len(inputs))):
                src = list(i)
                src[axis] = i[axis] - starts[k]
                v = inputs[k][src]
                value = v if value is None else te.select(i[axis] < starts[k + 1], v, value)
            assert value is not None
            return value

        return [b.compute(shape, body)]


@irdl_op_definition
class SplitOp(NNVMOp):
    """Cut a tensor along `axis` into pieces of the given sizes, one result each."""

    name = "nnvm.split"
    input = operand_def()
    outputs = var_result_def()
    axis = int_prop(0)
    sizes = ints_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        axis = normalize_axis(self.attr("axis"), len(shape), "split: axis")
        sizes = self.attr("sizes")
        if not sizes:
            raise ShapeError("split: sizes must not be empty")
        if min(sizes) < 0 or sum(sizes) != shape[axis]:
            raise ShapeError(
                f"split: sizes {list(sizes)} do not add up to the extent {shape[axis]} of axis "
                f"{axis}"
            )
        outs = []
        for s in sizes:
            piece = list(shape)
            piece[axis] = s
            outs.append(tensor(piece, t.element_type))
        return outs

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        axis = normalize_axis(self.attr("axis"), x.ndim, "split: axis")
        cuts = np.cumsum(self.attr("sizes"))[:-1]
        return [np.asarray(p, order="C") for p in np.split(x, cuts, axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, "split: axis")
        outs = []
        start = 0
        for k, t in enumerate(self.infer_result_types([x.type])):

            def body(*i: Expr, offset: int = start) -> Expr:
                src = list(i)
                src[axis] = i[axis] + offset
                return x[src]

            outs.append(b.compute(t.get_shape(), body, name=f"part{k}"))
            start += t.get_shape()[axis]
        return outs


# ----------------------------------------------------------------------------------------------
# Selecting: slice, gather, gather_nd
# ----------------------------------------------------------------------------------------------


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
            _unique_axes(axes, len(shape), "slice: axis"), starts, ends, steps, strict=True
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


def _check_indices(t: TensorType, what: str) -> None:
    if not is_integer(t.element_type):
        raise ShapeError(f"{what}: indices must be integers, got {t.element_type}")


def _wrap_indices(idx: np.ndarray, dim: int, what: str) -> np.ndarray:
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
        idx = _wrap_indices(idx, data.shape[axis], "gather")
        return [np.take(data, idx, axis=axis)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "gather: axis")
        shape = self.infer_result_types([data.type, idx.type])[0].get_shape()
        q = idx.ndim

        def body(*i: Expr) -> Expr:
            j = _wrap(topi.to_index(idx[i[axis : axis + q]]), data.shape[axis])
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
            flat_idx[..., k] = _wrap_indices(flat_idx[..., k], data.shape[b + k], "gather_nd")
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
            picked = [_wrap(topi.to_index(idx[[*head, k]]), data.shape[bd + k]) for k in range(m)]
            return data[[*head[:bd], *picked, *rest]]

        return [b.compute(shape, body)]


# ----------------------------------------------------------------------------------------------
# Growing: broadcast_to, tile, pad
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class BroadcastToOp(UnaryTransformOp):
    """Numpy-broadcast a tensor to a given shape (ONNX Expand, after the frontend has computed
    the bidirectional result shape)."""

    name = "nnvm.broadcast_to"
    shape = ints_prop()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        target = tuple(self.attr("shape"))
        src = tuple(t.get_shape())
        try:
            fits = len(src) <= len(target) and broadcast_shapes(src, target) == target
        except ShapeError:
            fits = False
        if not fits:
            raise ShapeError(
                f"broadcast_to: shape {list(src)} does not broadcast to {list(target)}"
            )
        return [tensor(target, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.array(np.broadcast_to(inputs[0], self.attr("shape")))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        return [b.compute(self.attr("shape"), lambda *i: x[topi.broadcast_index(i, x.shape)])]


@irdl_op_definition
class TileOp(UnaryTransformOp):
    """Repeat the whole tensor `repeats[k]` times along each axis k."""

    name = "nnvm.tile"
    repeats = ints_prop()

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape, reps = t.get_shape(), self.attr("repeats")
        if len(reps) != len(shape):
            raise ShapeError(f"tile: {len(reps)} repeats for a tensor of rank {len(shape)}")
        if any(r < 0 for r in reps):
            raise ShapeError(f"tile: repeats {list(reps)} must be >= 0")
        return [tensor([d * r for d, r in zip(shape, reps, strict=True)], t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [np.tile(inputs[0], self.attr("repeats"))]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        shape = self.infer_result_types([x.type])[0].get_shape()
        reps = self.attr("repeats")
        return [
            b.compute(
                shape,
                lambda *i: x[
                    [v if r == 1 else v % d for v, r, d in zip(i, reps, x.shape, strict=True)]
                ],
            )
        ]


_PAD_MODES = ("constant", "reflect", "edge", "wrap")


@irdl_op_definition
class PadOp(UnaryTransformOp):
    """ONNX Pad: pads are all begins then all ends; negative pads crop first, then the
    positive ones fill by mode (constant `value`, reflect, edge or wrap)."""

    name = "nnvm.pad"
    pads = ints_prop()
    mode = str_prop("constant")
    value = float_prop(0.0)

    def _plan(self, shape: Sequence[int]) -> tuple[list[int], list[int]]:
        """Per axis: the extent after cropping, and the pads that remain (all >= 0)."""
        pads, mode = self.attr("pads"), self.attr("mode")
        rank = len(shape)
        if mode not in _PAD_MODES:
            raise ShapeError(f"pad: mode must be constant, reflect, edge or wrap, got {mode!r}")
        if len(pads) != 2 * rank:
            raise ShapeError(f"pad: {len(pads)} pads for a tensor of rank {rank} (need {2 * rank})")
        cropped = []
        for k, d in enumerate(shape):
            lo, hi = pads[k], pads[rank + k]
            c = d + min(lo, 0) + min(hi, 0)
            if c < 0:
                raise ShapeError(f"pad: pads {lo}, {hi} crop more than the extent {d} of axis {k}")
            grow = max(lo, 0) + max(hi, 0)
            if grow and mode != "constant" and c == 0:
                raise ShapeError(f"pad: mode {mode} cannot pad the empty axis {k}")
            if mode == "reflect" and max(lo, hi) > c - 1:
                raise ShapeError(
                    f"pad: reflect pads {lo}, {hi} exceed the extent {c} - 1 of axis {k}"
                )
            cropped.append(c)
        return cropped, [max(p, 0) for p in pads]

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        shape = t.get_shape()
        cropped, grow = self._plan(shape)
        rank = len(shape)
        out = [c + grow[k] + grow[rank + k] for k, c in enumerate(cropped)]
        return [tensor(out, t.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        rank = x.ndim
        _, grow = self._plan(x.shape)
        pads = self.attr("pads")
        crop = tuple(
            slice(max(-pads[k], 0), x.shape[k] - max(-pads[rank + k], 0)) for k in range(rank)
        )
        x = x[crop]
        widths = [(grow[k], grow[rank + k]) for k in range(rank)]
        mode = self.attr("mode")
        if mode == "constant":
            fill = np.array(self.attr("value")).astype(x.dtype)
            out = np.pad(x, widths, mode="constant", constant_values=fill)
        else:
            out = np.pad(x, widths, mode=mode)
        return [out.astype(inputs[0].dtype, copy=False)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        rank = x.ndim
        cropped, grow = self._plan(x.shape)
        pads, mode = self.attr("pads"), self.attr("mode")
        shape = self.infer_result_types([x.type])[0].get_shape()
        crop = [max(-pads[k], 0) for k in range(rank)]
        fill = self.attr("value")
        if not is_float(x.dtype):
            fill = int(fill)

        def body(*i: Expr) -> Expr:
            src: list[Expr] = []
            conds: list[Expr] = []
            for k in range(rank):
                lo, hi, c = grow[k], grow[rank + k], cropped[k]
                j = i[k] - lo
                if lo or hi:
                    if mode == "constant":
                        if lo:
                            conds.append(j >= 0)
                        if hi:
                            conds.append(j < c)
                    elif mode == "edge":
                        j = te.minimum(te.maximum(j, 0), c - 1)
                    elif mode == "reflect":
                        j = te.select(j < 0, 0 - j, j)
                        j = te.select(j >= c, 2 * (c - 1) - j, j)
                    else:  # wrap
                        j = j - te.binary("floordiv", j, c) * c
                src.append(j + crop[k])
            v = x[src]
            cond = topi.all_true(conds)
            return v if cond is None else te.select(cond, v, fill)

        return [b.compute(shape, body)]


# ----------------------------------------------------------------------------------------------
# Resize (ONNX Resize, as onnxruntime computes it)
# ----------------------------------------------------------------------------------------------

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
    Like onnxruntime, an axis of scale 1 is copied as is. Antialiasing is not supported."""

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

    def _axis_coordinates(self, axis: int, in_len: int, out_len: int) -> np.ndarray:
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
            coords = self._axis_coordinates(axis, in_len, out_len)
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
        mode = self.attr("mode")
        if mode == "nearest":
            idx = _nearest_index(coords, self.attr("nearest_mode")).astype(np.int64)
            return np.take(x, np.clip(idx, 0, in_len - 1), axis=axis)
        if mode == "linear":
            c = np.clip(coords, _F32(0), _F32(in_len - 1)).astype(np.float64)
            i0 = np.floor(c).astype(np.int64)
            i1 = np.minimum(i0 + 1, in_len - 1)
            w1 = c - i0
            taps, weights = np.stack([i0, i1], -1), np.stack([1 - w1, w1], -1)
        else:
            c = coords.astype(np.float64)
            base = np.floor(c).astype(np.int64)
            taps = base[:, None] + np.arange(-1, 3)[None, :]
            weights = _cubic_weights(c - base, self.attr("cubic_coeff_a"))
            if self.attr("exclude_outside"):
                weights = np.where((taps < 0) | (taps >= in_len), 0.0, weights)
                weights = weights / weights.sum(axis=1, keepdims=True)
            taps = np.clip(taps, 0, in_len - 1)
        moved = np.moveaxis(x, axis, -1)
        out = np.einsum("...ot,ot->...o", moved[..., taps], weights)
        return np.moveaxis(out, -1, axis)

    def _te_taps(
        self, axis: int, coords: np.ndarray, in_len: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The input index of each tap of each output position along one axis, and the taps'
        weights (None for nearest), as `_resample` computes them."""
        mode = self.attr("mode")
        if mode == "nearest":
            idx = _nearest_index(coords, self.attr("nearest_mode")).astype(np.int64)
            return np.clip(idx, 0, in_len - 1)[:, None], None
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

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """One stage per resampled axis (resizing is separable); the tap indices and weights
        depend only on the output position, so they are computed here and kept as constant
        tables (exactly the reference's)."""
        (x,) = inputs
        cur = x
        extrapolate = self.attr("coordinate_transformation_mode") == "tf_crop_and_resize"
        off_tables: list[tuple[int, TensorRef]] = []
        for axis, out_len in enumerate(self.attr("size")):
            in_len = x.shape[axis]
            coords = self._axis_coordinates(axis, in_len, out_len)
            if extrapolate:
                off = (coords < 0) | (coords > in_len - 1)
                if off.any():
                    off_tables.append((axis, b.constant(off.astype(np.bool_))))
            if out_len == in_len and np.array_equal(coords, np.arange(in_len, dtype=_F32)):
                continue
            taps, weights = self._te_taps(axis, coords, in_len)
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
            value = self.attr("extrapolation_value")
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


# ----------------------------------------------------------------------------------------------
# Pass-throughs and scans: identity, dropout, cumsum
# ----------------------------------------------------------------------------------------------


class PassThroughOp(NNVMOp):
    """The value itself; simplify-inference removes these."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.ELEMWISE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        return [operand_types[0]]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [inputs[0]]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        return [b.copy(inputs[0], name="")]


@irdl_op_definition
class IdentityOp(PassThroughOp):
    """ONNX Identity."""

    name = "nnvm.identity"


@irdl_op_definition
class DropoutOp(PassThroughOp):
    """ONNX Dropout at inference time: the identity."""

    name = "nnvm.dropout"


@irdl_op_definition
class CumSumOp(NNVMOp):
    """ONNX CumSum: running sums along `axis`, optionally exclusive and/or from the end."""

    name = "nnvm.cumsum"
    input = operand_def()
    result = result_def()
    axis = int_prop()
    exclusive = bool_prop(False)
    reverse = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (t,) = operand_types
        if not (is_float(t.element_type) or is_integer(t.element_type)):
            raise ShapeError(f"cumsum does not accept element type {t.element_type}")
        normalize_axis(self.attr("axis"), len(t.get_shape()), "cumsum: axis")
        return [t]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        axis = normalize_axis(self.attr("axis"), x.ndim, "cumsum: axis")
        y = np.flip(x, axis) if self.attr("reverse") else x
        if self.attr("exclusive"):
            # shift by one along the axis: element k sums the elements before k
            head = np.zeros_like(np.take(y, [0], axis=axis))
            y = np.concatenate([head, np.delete(y, -1, axis=axis)], axis=axis)
        out = np.cumsum(y, axis=axis, dtype=x.dtype)
        if self.attr("reverse"):
            out = np.flip(out, axis)
        return [np.asarray(out, order="C")]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim, "cumsum: axis")
        excl, rev = self.attr("exclusive"), self.attr("reverse")

        def body(*args: Expr) -> Expr:
            *i, r = args
            src = list(i)
            src[axis] = r
            pos = i[axis]
            take = (r > pos if excl else r >= pos) if rev else (r < pos if excl else r <= pos)
            return te.select(take, x[src], 0)

        return [b.reduce(x.shape, "sum", (x.shape[axis],), body, reduce_axes=("r",))]


def _te_reshape(b: KernelBuilder, x: TensorRef, shape: tuple[int, ...]) -> TensorRef:
    """Row-major reinterpretation: drop and insert extent-1 axes directly, else through the
    flat position."""
    src_dims = [d for d in x.shape if d != 1]
    dst_dims = [d for d in shape if d != 1]
    if src_dims == dst_dims:

        def direct(*i: Expr) -> Expr:
            kept = iter([v for v, d in zip(i, shape, strict=True) if d != 1])
            return x[[0 if d == 1 else next(kept) for d in x.shape]]

        return b.compute(shape, direct)
    return b.compute(shape, lambda *i: x[topi.unravel(topi.ravel(i, shape), x.shape)])


def _wrap(v: Expr, dim: int) -> Expr:
    """A negative index counts from the end."""
    return te.select(v < 0, v + dim, v)


TRANSFORM_OPS: list[type[NNVMOp]] = [
    ReshapeOp,
    FlattenOp,
    SqueezeOp,
    ExpandDimsOp,
    TransposeOp,
    LayoutTransformOp,
    DepthToSpaceOp,
    SpaceToDepthOp,
    ConcatOp,
    SplitOp,
    SliceOp,
    GatherOp,
    GatherNDOp,
    BroadcastToOp,
    TileOp,
    PadOp,
    ResizeOp,
    IdentityOp,
    DropoutOp,
    CumSumOp,
]
