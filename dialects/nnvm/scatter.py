"""Scattering ops: ONNX ScatterElements and ScatterND. The result is `data` with some entries
replaced by (or, with a reduction, combined with) entries of `updates` at positions an index
tensor names. Negative indices count from the end; others out of range are an error.

As index formulas, each output entry looks for the updates that land on it: with no
reduction it takes the last one (the order onnxruntime applies them in), with add / mul / max /
min it combines all of them. That is O(outputs x candidate updates): for ScatterElements the
candidates are the index entries along the axis, for ScatterND every index tuple."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    int_prop,
    normalize_axis,
    str_prop,
)
from nnvm.dialects.nnvm.dtypes import is_integer
from nnvm.dialects.nnvm.indexing import check_index_box, wrap, wrap_indices
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

#: reduction -> (numpy ufunc applied at the positions, te reduce kind, te combine).
REDUCTIONS = {
    "add": (np.add, "sum", lambda a, b: a + b),
    "mul": (np.multiply, "prod", lambda a, b: a * b),
    "max": (np.maximum, "max", te.maximum),
    "min": (np.minimum, "min", te.minimum),
}

I64 = IntegerType(64)


class _ScatterOp(NNVMOp):
    data = operand_def()
    indices = operand_def()
    updates = operand_def()
    result = result_def()
    reduction = str_prop("none")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def verify_(self) -> None:
        if self.attr("reduction") not in ("none", *REDUCTIONS):
            raise ShapeError(
                f"{self.name}: reduction must be none, add, mul, max or min, got "
                f"{self.attr('reduction')!r}"
            )
        super().verify_()

    def _check(self, d: TensorType, i: TensorType, u: TensorType) -> None:
        if not is_integer(i.element_type):
            raise ShapeError(f"{self.name}: indices must be integers, got {i.element_type}")
        if u.element_type != d.element_type:
            raise ShapeError(
                f"{self.name}: updates have element type {u.element_type}, data {d.element_type}"
            )

    def _apply(self, out: np.ndarray, where: tuple[np.ndarray, ...], upd: np.ndarray) -> None:
        reduction = self.attr("reduction")
        if reduction == "none":
            out[where] = upd  # duplicates: numpy assigns in order, the last one wins
        else:
            REDUCTIONS[reduction][0].at(out, where, upd)

    def _combine(
        self,
        b: KernelBuilder,
        data: TensorRef,
        hit: TensorRef,
        update_at: TensorRef | None,
    ) -> TensorRef:
        """The result from the per-entry reduction `hit` (the last update's number with no
        reduction, else the combined updates, identity where none lands)."""
        reduction = self.attr("reduction")
        if reduction == "none":
            assert update_at is not None
            return b.compute(data.shape, lambda *p: te.select(hit[p] >= 0, update_at[p], data[p]))
        combine = REDUCTIONS[reduction][2]
        return b.compute(data.shape, lambda *p: combine(data[p], hit[p]))


@irdl_op_definition
class ScatterElementsOp(_ScatterOp):
    """ONNX ScatterElements (and the older Scatter): for each index entry u, the data entry at
    u with its `axis` coordinate replaced by indices[u] takes (or combines with) updates[u]."""

    name = "nnvm.scatter_elements"
    axis = int_prop(0)

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, i, u = operand_types
        self._check(d, i, u)
        ds, js, us = d.get_shape(), i.get_shape(), u.get_shape()
        if not ds or not len(ds) == len(js) == len(us):
            raise ShapeError(
                f"scatter_elements: data, indices and updates must share a rank >= 1, got "
                f"{len(ds)}, {len(js)} and {len(us)}"
            )
        if js != us:
            raise ShapeError(
                f"scatter_elements: indices {list(js)} and updates {list(us)} differ in shape"
            )
        axis = normalize_axis(self.attr("axis"), len(ds), "scatter_elements: axis")
        check_index_box(ds, js, axis, "scatter_elements")
        return [d]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data, idx, upd = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "scatter_elements: axis")
        idx = wrap_indices(idx, data.shape[axis], "scatter_elements")
        grid = list(np.indices(idx.shape, sparse=True))
        grid[axis] = idx
        out = data.copy()
        where = tuple(np.broadcast_arrays(*grid))
        self._apply(out, where, upd)
        return [out]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx, upd = inputs
        axis = normalize_axis(self.attr("axis"), data.ndim, "scatter_elements: axis")
        ext = idx.shape
        reduction = self.attr("reduction")

        def candidate(p: Sequence[Expr], r: Expr) -> tuple[Expr, list[Expr]]:
            """Whether index entry (p off the axis, r on it) lands on p, and where it is."""
            at = [r if k == axis else te.minimum(p[k], ext[k] - 1) for k in range(len(ext))]
            lands = wrap(topi.to_index(idx[at]), data.shape[axis]).eq(p[axis])
            inside = [
                p[k] < ext[k] for k in range(len(ext)) if k != axis and ext[k] < data.shape[k]
            ]
            cond = te.all_of([*inside, lands])
            assert cond is not None
            return cond, at

        if reduction == "none":

            def last(*args: Expr) -> Expr:
                *p, r = args
                cond, _ = candidate(p, r)
                return te.select(cond, te.cast(r, I64), te.const(-1, I64))

            hit = b.reduce(data.shape, "max", (ext[axis],), last, name="last_update")

            def update_at(*p: Expr) -> Expr:
                at = [
                    te.maximum(topi.to_index(hit[p]), 0) if k == axis
                    else te.minimum(p[k], ext[k] - 1)
                    for k in range(len(ext))
                ]  # fmt: skip
                return upd[at]

            picked = b.compute(data.shape, update_at, name="update")
            return [self._combine(b, data, hit, picked)]

        kind = REDUCTIONS[reduction][1]
        identity = te.identity_of(kind, data.dtype)

        def combined(*args: Expr) -> Expr:
            *p, r = args
            cond, at = candidate(p, r)
            return te.select(cond, upd[at], te.const(identity, data.dtype))

        hit = b.reduce(data.shape, kind, (ext[axis],), combined, name="updates")
        return [self._combine(b, data, hit, None)]


@irdl_op_definition
class ScatterNDOp(_ScatterOp):
    """ONNX ScatterND: each index tuple indices[q, :] (of length m) names a slice of data
    (the axes after m), which takes (or combines with) updates[q]."""

    name = "nnvm.scatter_nd"

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, i, u = operand_types
        self._check(d, i, u)
        ds, js, us = d.get_shape(), i.get_shape(), u.get_shape()
        if not ds or not js:
            raise ShapeError("scatter_nd: data and indices must have rank >= 1")
        m = js[-1]
        if not 1 <= m <= len(ds):
            raise ShapeError(f"scatter_nd: index tuples have {m} entries, data has rank {len(ds)}")
        want = [*js[:-1], *ds[m:]]
        if list(us) != want:
            raise ShapeError(f"scatter_nd: updates must have shape {want}, got {list(us)}")
        return [d]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data, idx, upd = inputs
        m = idx.shape[-1]
        flat = idx.reshape(-1, m).astype(np.int64)
        for k in range(m):
            flat[:, k] = wrap_indices(flat[:, k], data.shape[k], "scatter_nd")
        out = data.copy()
        rows = upd.reshape(flat.shape[0], *data.shape[m:])
        if self.attr("reduction") == "none":
            for q in range(flat.shape[0]):
                out[tuple(flat[q])] = rows[q]
        else:
            self._apply(out, tuple(flat.T), rows)
        return [out]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        data, idx, upd = inputs
        m = idx.shape[-1]
        lead = list(idx.shape[:-1])
        count = math.prod(lead)
        reduction = self.attr("reduction")

        def tuple_at(r: Expr) -> list[Expr]:
            """The index position of tuple number r (row-major over indices' leading axes)."""
            at: list[Expr] = []
            rest = r
            for k in range(len(lead)):
                stride = math.prod(lead[k + 1 :])
                at.append(rest // stride if stride != 1 else rest)
                rest = rest % stride if stride != 1 else rest
            return at

        def lands(p: Sequence[Expr], q: list[Expr]) -> Expr:
            conds = [wrap(topi.to_index(idx[[*q, k]]), data.shape[k]).eq(p[k]) for k in range(m)]
            cond = te.all_of(conds)
            assert cond is not None
            return cond

        if reduction == "none":
            head = list(data.shape[:m])

            def last(*args: Expr) -> Expr:
                *p, r = args
                return te.select(lands(p, tuple_at(r)), te.cast(r, I64), te.const(-1, I64))

            hit_head = b.reduce(head, "max", (count,), last, name="last_update")
            hit = b.compute(data.shape, lambda *p: hit_head[p[:m]], name="last_update_at")

            def update_at(*p: Expr) -> Expr:
                q = tuple_at(te.maximum(topi.to_index(hit_head[p[:m]]), 0))
                return upd[[*q, *p[m:]]]

            picked = b.compute(data.shape, update_at, name="update")
            return [self._combine(b, data, hit, picked)]

        kind = REDUCTIONS[reduction][1]
        identity = te.identity_of(kind, data.dtype)

        def combined(*args: Expr) -> Expr:
            *p, r = args
            q = tuple_at(r)
            return te.select(lands(p, q), upd[[*q, *p[m:]]], te.const(identity, data.dtype))

        hit = b.reduce(data.shape, kind, (count,), combined, name="updates")
        return [self._combine(b, data, hit, None)]


SCATTER_OPS: list[type[NNVMOp]] = [ScatterElementsOp, ScatterNDOp]
