"""Reductions over axes (sum, mean, max, min, prod) and the index reductions argmax / argmin.

`axes` is always explicit; an empty list reduces nothing (the result is a copy of the input, as
ONNX's noop_with_empty_axes), so a frontend never has to guess what "no axes" means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    int_prop,
    ints_prop,
    normalize_axis,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_bool, is_float, numpy_dtype_of
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


class ReduceOp(NNVMOp):
    """`%y = nnvm.<reduce> %x {axes = [1, 2], keepdims = false}`; float and integer inputs."""

    data = operand_def()
    result = result_def()
    axes = ints_prop()
    keepdims = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.COMM_REDUCE))

    #: True when the reduction has no identity (max, min): reducing an empty axis is an error.
    NEEDS_ELEMENTS: ClassVar[bool] = False

    def normalized_axes(self, rank: int) -> tuple[int, ...]:
        if rank == 0 and self.attr("axes"):
            raise ShapeError(f"{self.name}: a rank-0 tensor has no axes to reduce")
        axes = [normalize_axis(a, rank, f"{self.name} axis") for a in self.attr("axes")]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{self.name}: axes {list(self.attr('axes'))} repeat an axis")
        return tuple(sorted(axes))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        if is_bool(x.element_type):
            raise ShapeError(f"{self.name} does not accept element type {x.element_type}")
        shape = x.get_shape()
        axes = self.normalized_axes(len(shape))
        if self.NEEDS_ELEMENTS and any(shape[a] == 0 for a in axes):
            raise ShapeError(f"{self.name}: cannot reduce an axis of extent 0")
        return [tensor(reduced_shape(shape, axes, self.attr("keepdims")), x.element_type)]

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        (x,) = inputs
        axes = self.normalized_axes(x.ndim)
        if not axes:
            return [x.copy()]
        out = self.reduce(x, axes)
        if self.attr("keepdims"):
            out = np.expand_dims(out, axes)
        return [np.asarray(out).astype(x.dtype)]

    #: The te reduction kind (sum, prod, max, min).
    TE_KIND: ClassVar[str] = "sum"

    def te_reduce(self, b: KernelBuilder, x: TensorRef, axes: tuple[int, ...]) -> TensorRef:
        """The reduction itself (sums accumulate wide, as the reference does)."""
        keep = self.attr("keepdims")
        if self.TE_KIND in ("sum", "prod"):
            acc = topi.accumulation_type(x.dtype)
            if not is_float(x.dtype):
                acc = i64
            r = topi.reduce_over(
                b,
                x,
                axes,
                self.TE_KIND,
                keepdims=keep,
                dtype=acc,
                value=lambda v: te.cast(v, acc),
                name=self.TE_KIND,
            )
            if acc == x.dtype:
                return r
            return b.compute(r.shape, lambda *i: te.cast(r[i], x.dtype))
        return topi.reduce_over(b, x, axes, self.TE_KIND, keepdims=keep)

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axes = self.normalized_axes(x.ndim)
        if not axes:
            return [b.copy(x)]
        return [self.te_reduce(b, x, axes)]

    def spread(self, g: VJPBuilder, v: SSAValue) -> SSAValue:
        """A reduced value broadcast back over the input's shape."""
        src = shape(self.data)
        axes = self.normalized_axes(len(src))
        kept = reduced_shape(src, axes, True)
        if shape(v) != kept:
            v = g.op("reshape", v, shape=list(kept))
        return v if kept == src else g.op("broadcast_to", v, shape=list(src))

    def _extreme_vjp(self, g: VJPBuilder, dy: SSAValue) -> list[SSAValue | None]:
        """max/min: the cotangent goes to the elements equal to the result, shared by ties."""
        x = self.data
        hit = g.op("equal", x, self.spread(g, self.result))
        ones = g.op("cast", hit, to=str(numpy_dtype_of(x.type.element_type)))
        ties = g.op("sum", ones, axes=list(self.normalized_axes(len(shape(x)))), keepdims=True)
        share = g.op("div", self.spread(g, dy), self.spread(g, ties))
        return [g.op("where", hit, share, g.scalar(0.0, share))]


def _wide(x: np.ndarray) -> np.ndarray:
    if np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float64)
    if np.issubdtype(x.dtype, np.unsignedinteger):
        return x.astype(np.uint64)
    return x.astype(np.int64)


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "nnvm.sum"

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.sum(_wide(x), axis=axes)

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [self.spread(g, grads[0])]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """The mean; for integers the sum divided by the count, truncated toward zero (as ONNX)."""

    name = "nnvm.mean"

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        total = np.sum(_wide(x), axis=axes)
        count = max(int(np.prod([x.shape[a] for a in axes])), 1)
        if np.issubdtype(x.dtype, np.floating):
            return total / count
        return np.sign(total) * (np.abs(total) // count)

    def te_reduce(self, b: KernelBuilder, x: TensorRef, axes: tuple[int, ...]) -> TensorRef:
        count = 1
        for a in axes:
            count *= x.shape[a]
        wide = topi.accumulation_type(x.dtype) if is_float(x.dtype) else i64
        total = topi.reduce_over(
            b,
            x,
            axes,
            "sum",
            keepdims=self.attr("keepdims"),
            dtype=wide,
            value=lambda v: te.cast(v, wide),
            name="sum",
        )
        if is_float(x.dtype):
            return b.compute(total.shape, lambda *i: te.cast(total[i] * (1.0 / count), x.dtype))
        return b.compute(total.shape, lambda *i: te.cast(total[i] / count, x.dtype))

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        src = shape(self.data)
        count = math.prod(src[a] for a in self.normalized_axes(len(src)))
        dy = g.op("mul", grads[0], g.scalar(1.0 / max(count, 1), grads[0]))
        return [self.spread(g, dy)]


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "nnvm.max"
    NEEDS_ELEMENTS: ClassVar[bool] = True

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.max(x, axis=axes)

    TE_KIND: ClassVar[str] = "max"

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return self._extreme_vjp(g, grads[0])


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "nnvm.min"
    NEEDS_ELEMENTS: ClassVar[bool] = True

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.min(x, axis=axes)

    TE_KIND: ClassVar[str] = "min"

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return self._extreme_vjp(g, grads[0])


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    name = "nnvm.prod"

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        return np.prod(_wide(x), axis=axes)

    TE_KIND: ClassVar[str] = "prod"


class ArgReduceOp(NNVMOp):
    """`%i = nnvm.argmax %x {axis = 0, keepdims = true, select_last_index = false}` -> i64.

    Pattern kind comm-reduce: the combiner over (value, index) pairs that prefers the smaller
    index on ties (the larger with select_last_index) is commutative and associative, so it
    reduces one axis like sum does and elementwise producers can fuse into it.
    """

    data = operand_def()
    result = result_def()
    axis = int_prop(0)
    keepdims = bool_prop(True)
    select_last_index = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.COMM_REDUCE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        if is_bool(x.element_type):
            raise ShapeError(f"{self.name} does not accept element type {x.element_type}")
        shape = x.get_shape()
        if len(shape) == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), f"{self.name} axis")
        if shape[axis] == 0:
            raise ShapeError(f"{self.name}: cannot reduce an axis of extent 0")
        return [tensor(reduced_shape(shape, (axis,), self.attr("keepdims")), i64)]

    def pick(self, x: np.ndarray, axis: int) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        if self.attr("select_last_index"):
            n = x.shape[axis]
            out = n - 1 - self.pick(np.flip(x, axis), axis)
        else:
            out = self.pick(x, axis)
        if self.attr("keepdims"):
            out = np.expand_dims(out, axis)
        return [np.asarray(out, dtype=np.int64)]

    #: max for argmax, min for argmin.
    TE_KIND: ClassVar[str] = "max"

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """The extreme value, then the first (or last) index holding it."""
        (x,) = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        keep = self.attr("keepdims")
        n = x.shape[axis]
        m = topi.reduce_over(b, x, [axis], self.TE_KIND, keepdims=True, name=self.TE_KIND)
        last = self.attr("select_last_index")
        out_shape = reduced_shape(x.shape, (axis,), keep)

        def body(*args: Expr) -> Expr:
            *idx, r = args
            full = list(idx)
            if not keep:
                full.insert(axis, 0)
            src = list(full)
            src[axis] = r
            hit = x[src].eq(m[full])
            return te.select(hit, te.cast(r, i64), -1 if last else n)

        kind = "max" if last else "min"
        return [b.reduce(out_shape, kind, (n,), body, dtype=i64, reduce_axes=("r",))]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "nnvm.argmax"

    def pick(self, x: np.ndarray, axis: int) -> np.ndarray:
        return np.argmax(x, axis=axis)


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "nnvm.argmin"

    def pick(self, x: np.ndarray, axis: int) -> np.ndarray:
        return np.argmin(x, axis=axis)

    TE_KIND: ClassVar[str] = "min"


REDUCE_OPS: list[type[NNVMOp]] = [
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceProdOp,
    ArgMaxOp,
    ArgMinOp,
]
