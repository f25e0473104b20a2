"""Neural-network ops: dense and matrix products, bias, softmax, normalizations, LRN, PReLU."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import NoGradient, VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    broadcast_shapes,
    float_prop,
    int_prop,
    normalize_axis,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_bool, is_byte, is_float
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

# ----------------------------------------------------------------------------------------------
# Shared checks
# ----------------------------------------------------------------------------------------------


def _same_element_type(op: str, types: Sequence[TensorType], accept: str = "float") -> None:
    """All operands share one element type, and it is a float ("float") or not bool ("numeric")."""
    elt = types[0].element_type
    for t in types[1:]:
        if t.element_type != elt:
            raise ShapeError(
                f"{op} operands must share one element type, got {elt} and {t.element_type}"
            )
    ok = is_float(elt) if accept == "float" else not is_bool(elt)
    if not ok:
        kind = "a float" if accept == "float" else "a numeric"
        raise ShapeError(f"{op} needs {kind} element type, got {elt}")


def _check_vector(op: str, what: str, t: TensorType, length: int) -> None:
    if tuple(t.get_shape()) != (length,):
        raise ShapeError(f"{op}: {what} must have shape [{length}], got {list(t.get_shape())}")


def _acc(x: np.ndarray) -> np.ndarray:
    """The accumulation copy of an operand: float64 for floats, int64 for integers."""
    if np.issubdtype(x.dtype, np.floating):
        return x.astype(np.float64)
    if np.issubdtype(x.dtype, np.unsignedinteger):
        return x.astype(np.uint64)
    return x.astype(np.int64)


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A 1-D array reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = v.shape[0]
    return v.reshape(shape)


# ----------------------------------------------------------------------------------------------
# Matrix products
# ----------------------------------------------------------------------------------------------


DOT_BYTES = 4
"""Bytes of one 8-bit dot-product step (x86 vpdpbusd, Arm sdot: four products into an int32)."""


def pack_dot_weight(w: np.ndarray, lanes: int) -> np.ndarray:
    """int8 w [N, K] -> [N/lanes, K/4, lanes, 4] (a dense's `weight_lanes` layout): each
    block of `lanes` outputs holds, for every 4 consecutive k, their 4 bytes side by side."""
    n, k = w.shape
    blocks = w.reshape(n // lanes, lanes, k // DOT_BYTES, DOT_BYTES)
    return np.ascontiguousarray(blocks.transpose(0, 2, 1, 3))


def unpack_dot_weight(packed: np.ndarray) -> np.ndarray:
    """The inverse of pack_dot_weight."""
    nb, kb, lanes, q = packed.shape
    return packed.transpose(0, 2, 1, 3).reshape(nb * lanes, kb * q)


@irdl_op_definition
class DenseOp(NNVMOp):
    """`nnvm.dense %x, %w`: x [..., K] times w [N, K] transposed -> [..., N] (no bias; a
    following `bias_add` carries it and fuses into the output loop).

    8-bit integer operands (int8 or uint8, mixed allowed) accumulate into an int32 result,
    as QNN dense does: the form quantized models run in on a CPU with byte dot products."""

    name = "nnvm.dense"
    data = operand_def()
    weight = operand_def()
    result = result_def()
    weight_lanes = int_prop(0)
    """0: w is [N, K]. L > 0 (8-bit weights only): w is packed [N/L, K/4, L, 4] for byte dot
    products (`pack_dot_weight`; alter-layout packs constant weights, fold-constants computes
    them): a vector of L int32 outputs takes 4 consecutive k of each in one instruction."""
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def _weight_shape(self, ws: Sequence[int]) -> tuple[int, ...]:
        """The logical [N, K] of the weight operand."""
        lanes = self.attr("weight_lanes")
        if not lanes:
            return tuple(ws)
        if lanes < 0 or len(ws) != 4 or ws[2] != lanes or ws[3] != DOT_BYTES:
            raise ShapeError(
                f"dense: weight_lanes = {lanes} needs a [N/{lanes}, K/4, {lanes}, 4] weight, "
                f"got {list(ws)}"
            )
        return (ws[0] * lanes, ws[1] * DOT_BYTES)

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x, w = operand_types
        bytes_ = is_byte(x.element_type) and is_byte(w.element_type)
        if not bytes_:
            _same_element_type("dense", operand_types)
        elif self.attr("weight_lanes") and w.element_type != IntegerType(8):
            raise ShapeError("dense: a packed weight (weight_lanes) must be int8")
        xs, ws = x.get_shape(), self._weight_shape(w.get_shape())
        if len(xs) < 1:
            raise ShapeError("dense: data must have rank >= 1")
        if len(ws) != 2:
            raise ShapeError(f"dense: weight must be 2-D [N, K], got rank {len(ws)}")
        if xs[-1] != ws[1]:
            raise ShapeError(
                f"dense: data has K = {xs[-1]} but weight [{ws[0]}, {ws[1]}] expects K = {ws[1]}"
            )
        return [tensor((*xs[:-1], ws[0]), IntegerType(32) if bytes_ else x.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, w = inputs
        if self.attr("weight_lanes"):
            w = unpack_dot_weight(w)
        out = np.matmul(_acc(x), _acc(w).T)
        if x.dtype.itemsize == 1 and w.dtype.itemsize == 1 and x.dtype.kind in "iu":
            return [out.astype(np.int32)]
        return [out.astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, w = inputs
        lanes = self.attr("weight_lanes")
        n, k = self._weight_shape(w.shape)
        shape = (*x.shape[:-1], n)
        axes = [f"i{d}" for d in range(len(shape) - 1)] + ["n"]
        if is_byte(x.dtype) and is_byte(w.dtype):
            acc = IntegerType(32)

            def product(*args: Expr) -> Expr:
                *rows, col, r = args
                if lanes:
                    wv = w[col // lanes, r // DOT_BYTES, col % lanes, r % DOT_BYTES]
                else:
                    wv = w[col, r]
                return te.cast(x[(*rows, r)], acc) * te.cast(wv, acc)

            template = "dense_dot_bytes" if lanes else "dense"
            return [
                b.reduce(
                    shape,
                    "sum",
                    (k,),
                    product,
                    dtype=acc,
                    axes=axes,
                    reduce_axes=("k",),
                    template=template,
                )
            ]

        def body(*args: Expr) -> Expr:
            *rows, col, r = args
            return x[(*rows, r)] * w[col, r]

        return [
            topi.summed(
                b, shape, (k,), body, x.dtype, axes=axes, reduce_axes=("k",), template="dense"
            )
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        (dy,) = grads
        x, w = self.data, self.weight
        dx = g.op("dense", dy, g.op("transpose", w, perm=[1, 0])) if g.needs(0) else None
        dw = None
        if g.needs(1):
            n, k = shape(w)
            m = math.prod(shape(x)[:-1])
            rows = g.op("reshape", dy, shape=[m, n])
            xs = g.op("reshape", x, shape=[m, k])
            dw = g.op("matmul", g.op("transpose", rows, perm=[1, 0]), xs)
        return [dx, dw]


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The result shape of numpy's matmul (1-D operands promoted then dropped, batch broadcast)."""
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = tuple(a) if len(a) >= 2 else (1, *a)
    b2 = tuple(b) if len(b) >= 2 else (*b, 1)
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"matmul: contracting dimensions differ: {list(a)} x {list(b)} ({a2[-1]} vs {b2[-2]})"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = [*batch]
    if len(a) >= 2:
        out.append(a2[-2])
    if len(b) >= 2:
        out.append(b2[-1])
    return tuple(out)


@irdl_op_definition
class MatmulOp(NNVMOp):
    """`nnvm.matmul %a, %b`: numpy/ONNX MatMul (1-D operands, broadcast batch dimensions)."""

    name = "nnvm.matmul"
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    rhs_panel = int_prop(0)
    """0: rhs is [..., K, N]. P > 0: rhs is a constant [K, N] weight packed into column panels
    [N/P, K, P] (alter-layout packs it once, fold-constants computes it)."""
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def _rhs_shape(self, rhs: Sequence[int]) -> tuple[int, ...]:
        """The logical [K, N] shape of a packed rhs (the shape itself when not packed)."""
        p = self.attr("rhs_panel")
        if not p:
            return tuple(rhs)
        if p < 0 or len(rhs) != 3 or rhs[2] != p:
            raise ShapeError(
                f"matmul: rhs_panel = {p} needs a [N/{p}, K, {p}] rhs, got {list(rhs)}"
            )
        return (rhs[1], rhs[0] * p)

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        a, b = operand_types
        _same_element_type("matmul", operand_types, "numeric")
        rhs = self._rhs_shape(b.get_shape())
        return [tensor(matmul_shape(a.get_shape(), rhs), a.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        a, b = inputs
        if self.attr("rhs_panel"):
            b = unpack_panels(b)
        return [np.asarray(np.matmul(_acc(a), _acc(b))).astype(a.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        a, c = inputs
        panel = self.attr("rhs_panel")
        rhs_shape = self._rhs_shape(c.shape)
        shape = matmul_shape(a.shape, rhs_shape)
        a2, c2 = a.ndim >= 2, len(rhs_shape) >= 2
        nb = len(shape) - int(a2) - int(c2)
        k = a.shape[-1]
        n = shape[-1] if shape else 1  # 1-D x 1-D is a scalar
        width = panel or b.panel
        packed = c if panel else None
        if packed is None and a2 and c.ndim == 2 and should_pack(a.shape[-2], k, n, width):
            # pack the second operand into [N/P][K][P] column panels of the target's width P:
            # the register tiles then stream it contiguously instead of with a row stride (a
            # constant weight comes packed already: rhs_panel)
            packed = b.compute(
                (n // width, k, width),
                lambda jo, kk, ji: c[kk, jo * width + ji],
                name="pack",
                template="pack",
            )

        def body(*args: Expr) -> Expr:
            *idx, r = args
            batch = idx[:nb]
            ai = [*topi.broadcast_index(batch, a.shape[:-2]), idx[nb], r] if a2 else [r]
            if packed is not None:
                j = idx[-1]
                return a[ai] * packed[j // width, r, j % width]
            ci = [*topi.broadcast_index(batch, c.shape[:-2]), r, idx[-1]] if c2 else [r]
            return a[ai] * c[ci]

        template = "matmul" if a2 and c2 else None
        # the default spatial names are i, j, k, ...: a rank-3+ result already has a "k"
        reduce = "k" if len(shape) < 3 else "r"
        return [
            topi.summed(b, shape, (k,), body, a.dtype, reduce_axes=(reduce,), template=template)
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """numpy matmul: 1-D operands promoted to matrices, broadcast batches summed back."""
        if self.attr("rhs_panel"):
            raise NoGradient("matmul with a packed rhs (after alter-layout) has no gradient")
        (dy,) = grads
        a, b = self.lhs, self.rhs
        sa, sb = shape(a), shape(b)
        a2 = a if len(sa) >= 2 else g.op("reshape", a, shape=[1, sa[0]])
        b2 = b if len(sb) >= 2 else g.op("reshape", b, shape=[sb[0], 1])
        dy2 = g.op("reshape", dy, shape=list(matmul_shape(shape(a2), shape(b2))))

        def t(v: SSAValue) -> SSAValue:
            r = len(shape(v))
            return g.op("transpose", v, perm=[*range(r - 2), r - 1, r - 2])

        da = db = None
        if g.needs(0):
            da = g.sum_to(g.op("matmul", dy2, t(b2)), shape(a2))
            da = g.op("reshape", da, shape=list(sa)) if len(sa) < 2 else da
        if g.needs(1):
            db = g.sum_to(g.op("matmul", t(a2), dy2), shape(b2))
            db = g.op("reshape", db, shape=list(sb)) if len(sb) < 2 else db
        return [da, db]


MIN_PACKED_CONSTANT_ROWS = 3
"""Rows from which a constant weight is packed: the matmul template tiles the columns of three
or more rows by the panel width (one or two rows are a GEMV, whose tiles span several panels;
see GEMV_PANELS)."""
GEMV_PANELS = 4
"""Panels one GEMV tile spans (8 vectors of 16 lanes, four 32-wide panels): a constant weight of
one or two rows is packed when its columns are a whole number of such tiles, and the GEMV runs
as a matmul over them (8 independent accumulators over k, no horizontal sums) instead of a
dense's dot products (8 rows of the weight at once, each output's 16 lanes summed at the end):
768 . 768x768 50 -> 46 us with the weight in cache (`python -m bench --gemm`)."""


def should_pack(rows: int, k: int, n: int, panel: int, constant: bool = False) -> bool:
    """Is a [K, N] right operand worth packing into column panels of width `panel` (the
    target's; 0: never) for `rows` rows of the left one (the register tiles then stream it
    contiguously instead of with a row stride)? An operand computed at run time is packed on
    every call, which pays only when `panel` or more rows reuse it; a `constant` one is packed
    once at build time (fold-constants), so few rows gain too: unpacked, each step of the
    reduction reads a different row of the weight (a 12 KiB stride for N = 3072), out of reach
    of the prefetcher and a TLB miss each, which made BERT's seq-16 projections 3x slower
    than the same GEMM with a warm weight."""
    min_rows = MIN_PACKED_CONSTANT_ROWS if constant else panel
    if constant and rows < min_rows and panel > 0 and n % (GEMV_PANELS * panel) == 0:
        min_rows = 1  # a GEMV whose tiles take whole panels
    return panel > 0 and n % panel == 0 and k >= panel and rows >= min_rows


def unpack_panels(packed: np.ndarray) -> np.ndarray:
    """[N/P, K, P] column panels -> the [K, N] matrix."""
    panels, k, p = packed.shape
    return np.ascontiguousarray(packed.transpose(1, 0, 2)).reshape(k, panels * p)


@irdl_op_definition
class BatchMatmulOp(NNVMOp):
    """`nnvm.batch_matmul %a, %b`: [B, M, K] x [B, K, N] -> [B, M, N], each operand optionally
    transposed in its last two axes; a batch of 1 broadcasts."""

    name = "nnvm.batch_matmul"
    lhs = operand_def()
    rhs = operand_def()
    result = result_def()
    transpose_a = bool_prop(False)
    transpose_b = bool_prop(False)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        a, b = operand_types
        _same_element_type("batch_matmul", operand_types, "numeric")
        sa, sb = a.get_shape(), b.get_shape()
        if len(sa) != 3 or len(sb) != 3:
            raise ShapeError(
                f"batch_matmul operands must be 3-D, got ranks {len(sa)} and {len(sb)}"
            )
        ba, m, ka = (sa[0], sa[2], sa[1]) if self.attr("transpose_a") else sa
        bb, kb, n = (sb[0], sb[2], sb[1]) if self.attr("transpose_b") else sb
        if ka != kb:
            raise ShapeError(f"batch_matmul: contracting dimensions differ ({ka} vs {kb})")
        if ba != bb and 1 not in (ba, bb):
            raise ShapeError(f"batch_matmul: batch sizes {ba} and {bb} do not broadcast")
        return [tensor((ba if bb == 1 else bb, m, n), a.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        a, b = (_acc(v) for v in inputs)
        if self.attr("transpose_a"):
            a = a.transpose(0, 2, 1)
        if self.attr("transpose_b"):
            b = b.transpose(0, 2, 1)
        return [np.matmul(a, b).astype(inputs[0].dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        a, c = inputs
        out = self.infer_result_types([a.type, c.type])[0]
        ta, tc = self.attr("transpose_a"), self.attr("transpose_b")
        k = a.shape[1] if ta else a.shape[2]

        def body(bb: Expr, i: Expr, j: Expr, r: Expr) -> Expr:
            ab = 0 if a.shape[0] == 1 else bb
            cb = 0 if c.shape[0] == 1 else bb
            av = a[ab, r, i] if ta else a[ab, i, r]
            cv = c[cb, j, r] if tc else c[cb, r, j]
            return av * cv

        return [
            topi.summed(
                b,
                tuple(out.get_shape()),
                (k,),
                body,
                a.dtype,
                axes=("b", "i", "j"),
                reduce_axes=("k",),
                template="matmul",
            )
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        (dy,) = grads
        a, b = self.lhs, self.rhs
        ta, tb = self.attr("transpose_a"), self.attr("transpose_b")
        da = db = None
        if g.needs(0):  # dA = dY B^T, stored transposed when transpose_a
            if ta:
                da = g.op("batch_matmul", b, dy, transpose_a=tb, transpose_b=True)
            else:
                da = g.op("batch_matmul", dy, b, transpose_b=not tb)
            da = g.sum_to(da, shape(a))
        if g.needs(1):  # dB = A^T dY, stored transposed when transpose_b
            if tb:
                db = g.op("batch_matmul", dy, a, transpose_a=True, transpose_b=ta)
            else:
                db = g.op("batch_matmul", a, dy, transpose_a=not ta)
            db = g.sum_to(db, shape(b))
        return [da, db]


# ----------------------------------------------------------------------------------------------
# Bias and activations with an axis
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class BiasAddOp(NNVMOp):
    """`nnvm.bias_add %x, %b {axis = 1}`: adds the 1-D b along one axis of x."""

    name = "nnvm.bias_add"
    data = operand_def()
    bias = operand_def()
    result = result_def()
    axis = int_prop(1)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x, b = operand_types
        _same_element_type("bias_add", operand_types, "numeric")
        shape = x.get_shape()
        if len(shape) == 0:
            raise ShapeError("bias_add: data must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), "bias_add axis")
        _check_vector("bias_add", "bias", b, shape[axis])
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, b = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        return [(x + _along(b, axis, x.ndim)).astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, bias = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        return [b.compute(x.shape, lambda *i: x[i] + bias[i[axis]])]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:

        (dy,) = grads
        rank = len(shape(dy))
        axis = normalize_axis(self.attr("axis"), rank)
        db = None
        if g.needs(1):
            db = g.op("sum", dy, axes=[k for k in range(rank) if k != axis])
        return [dy, db]


class _SoftmaxBase(NNVMOp):
    """softmax / log_softmax along one axis, numerically stable (the max is subtracted first)."""

    data = operand_def()
    result = result_def()
    axis = int_prop(-1)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        _same_element_type(self.name, operand_types)
        rank = len(x.get_shape())
        if rank == 0:
            raise ShapeError(f"{self.name}: data must have rank >= 1")
        normalize_axis(self.attr("axis"), rank, f"{self.name} axis")
        return [x]

    def _shifted(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        axis = normalize_axis(self.attr("axis"), x.ndim)
        xd = x.astype(np.float64)
        with np.errstate(invalid="ignore"):  # a row of -inf (fully masked) is NaN, as in ONNX
            return xd - np.max(xd, axis=axis, keepdims=True), axis

    def _te_stats(
        self, b: KernelBuilder, x: TensorRef
    ) -> tuple[int, TensorRef, TensorRef, TensorRef]:
        """(axis, max over the axis, sum of exp(x - max), exp(x - max)); the reductions keep
        the axis (extent 1)."""
        axis = normalize_axis(self.attr("axis"), x.ndim)
        m = topi.reduce_over(b, x, [axis], "max", keepdims=True, name="max")

        def at0(i: Sequence[Expr]) -> list[Expr | int]:
            return [0 if d == axis else v for d, v in enumerate(i)]

        e = b.compute(x.shape, lambda *i: te.exp(x[i] - m[at0(i)]), name="exp")
        s = topi.reduce_over(b, e, [axis], "sum", keepdims=True, name="sum")
        return axis, m, s, e


@irdl_op_definition
class SoftmaxOp(_SoftmaxBase):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""

    name = "nnvm.softmax"

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        s, axis = self._shifted(inputs[0])
        e = np.exp(s)
        return [(e / np.sum(e, axis=axis, keepdims=True)).astype(inputs[0].dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis, _, s, e = self._te_stats(b, x)

        def body(*i: Expr) -> Expr:
            return e[i] / s[[0 if d == axis else v for d, v in enumerate(i)]]

        return [b.compute(x.shape, body)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """dx = y * (dy - sum(dy * y))."""
        (dy,) = grads
        y = self.result
        dot = g.op("sum", g.op("mul", dy, y), axes=[self.attr("axis")], keepdims=True)
        return [g.op("mul", y, g.op("sub", dy, dot))]


@irdl_op_definition
class LogSoftmaxOp(_SoftmaxBase):
    """(x - max) - log(sum(exp(x - max))) along `axis`."""

    name = "nnvm.log_softmax"

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        s, axis = self._shifted(inputs[0])
        out = s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
        return [out.astype(inputs[0].dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        axis, m, s, _ = self._te_stats(b, x)

        def body(*i: Expr) -> Expr:
            j = [0 if d == axis else v for d, v in enumerate(i)]
            return x[i] - m[j] - te.log(s[j])

        return [b.compute(x.shape, body)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """dx = dy - softmax(x) * sum(dy)."""
        (dy,) = grads
        total = g.op("sum", dy, axes=[self.attr("axis")], keepdims=True)
        return [g.op("sub", dy, g.op("mul", g.op("exp", self.result), total))]


# ----------------------------------------------------------------------------------------------
# Normalizations
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class BatchNormOp(NNVMOp):
    """`nnvm.batch_norm %x, %gamma, %beta, %mean, %var`: inference-mode batch normalization
    with the running statistics, per channel along `axis`."""

    name = "nnvm.batch_norm"
    data = operand_def()
    gamma = operand_def()
    beta = operand_def()
    moving_mean = operand_def()
    moving_var = operand_def()
    result = result_def()
    axis = int_prop(1)
    epsilon = float_prop(1e-5)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x = operand_types[0]
        _same_element_type("batch_norm", operand_types)
        shape = x.get_shape()
        if len(shape) == 0:
            raise ShapeError("batch_norm: data must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), "batch_norm axis")
        for what, t in zip(("gamma", "beta", "mean", "var"), operand_types[1:], strict=True):
            _check_vector("batch_norm", what, t, shape[axis])
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x = inputs[0]
        axis = normalize_axis(self.attr("axis"), x.ndim)
        g, b, m, v = (_along(p.astype(np.float64), axis, x.ndim) for p in inputs[1:])
        scale = g / np.sqrt(v + self.attr("epsilon"))
        return [((x.astype(np.float64) - m) * scale + b).astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, g, beta, mean, var = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        eps = self.attr("epsilon")

        def body(*i: Expr) -> Expr:
            c = i[axis]
            scale = g[c] * te.unary("rsqrt", var[c] + eps)
            return (x[i] - mean[c]) * scale + beta[c]

        return [b.compute(x.shape, body)]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """With the running statistics: y = (x - mean) * gamma * rsqrt(var + eps) + beta."""
        (dy,) = grads
        x, gamma, _, mean, var = self.operands
        rank = len(shape(x))
        axis = normalize_axis(self.attr("axis"), rank)
        others = [k for k in range(rank) if k != axis]
        along = [shape(x)[axis] if k == axis else 1 for k in range(rank)]

        def bc(v: SSAValue) -> SSAValue:
            return g.op("reshape", v, shape=along)

        rstd = g.op("rsqrt", g.op("add", var, g.scalar(self.attr("epsilon"), var)))
        centered = g.op("sub", x, bc(mean))
        out: list[SSAValue | None] = [None] * 5
        if g.needs(0):
            out[0] = g.op("mul", dy, bc(g.op("mul", gamma, rstd)))
        if g.needs(1):
            xhat = g.op("mul", centered, bc(rstd))
            out[1] = g.op("sum", g.op("mul", dy, xhat), axes=others)
        total = g.op("sum", dy, axes=others) if g.needs(2) or g.needs(3) else None
        out[2] = total if g.needs(2) else None
        if g.needs(3):
            assert total is not None
            out[3] = g.op("neg", g.op("mul", total, g.op("mul", gamma, rstd)))
        if g.needs(4):
            rstd3 = g.op("mul", rstd, g.op("mul", rstd, rstd))
            s = g.op("sum", g.op("mul", dy, centered), axes=others)
            out[4] = g.op("mul", g.op("mul", s, gamma), g.op("mul", rstd3, g.scalar(-0.5, rstd3)))
        return out


@irdl_op_definition
class LayerNormOp(NNVMOp):
    """`nnvm.layer_norm %x, %gamma, %beta`: normalizes over axes [axis, rank); gamma and beta
    broadcast to x.shape[axis:] (ONNX LayerNormalization, first output only)."""

    name = "nnvm.layer_norm"
    data = operand_def()
    gamma = operand_def()
    beta = operand_def()
    result = result_def()
    axis = int_prop(-1)
    epsilon = float_prop(1e-5)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x = operand_types[0]
        _same_element_type("layer_norm", operand_types)
        shape = tuple(x.get_shape())
        if len(shape) == 0:
            raise ShapeError("layer_norm: data must have rank >= 1")
        axis = normalize_axis(self.attr("axis"), len(shape), "layer_norm axis")
        normalized = shape[axis:]
        for what, t in zip(("gamma", "beta"), operand_types[1:], strict=True):
            ts = tuple(t.get_shape())
            ok = len(ts) <= len(normalized)
            if ok:
                try:
                    ok = broadcast_shapes(normalized, ts) == normalized
                except ShapeError:
                    ok = False
            if not ok:
                raise ShapeError(
                    f"layer_norm: {what} of shape {list(ts)} does not broadcast to the "
                    f"normalized shape {list(normalized)}"
                )
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, g, b = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        axes = tuple(range(axis, x.ndim))
        xd = x.astype(np.float64)
        mean = xd.mean(axis=axes, keepdims=True)
        var = ((xd - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (xd - mean) / np.sqrt(var + self.attr("epsilon"))
        return [(y * g.astype(np.float64) + b.astype(np.float64)).astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, g, beta = inputs
        axis = normalize_axis(self.attr("axis"), x.ndim)
        axes = list(range(axis, x.ndim))
        y = _te_normalize(b, x, axes, self.attr("epsilon"))
        return [
            b.compute(
                x.shape,
                lambda *i: (
                    y[i] * g[topi.broadcast_index(i[axis:], g.shape)]
                    + beta[topi.broadcast_index(i[axis:], beta.shape)]
                ),
            )
        ]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """xhat = (x - mu) * rstd over axes [axis, rank); dx = rstd * (dxhat - mean(dxhat)
        - xhat * mean(dxhat * xhat)) with dxhat = dy * gamma."""
        (dy,) = grads
        x, gamma, beta = self.operands
        rank = len(shape(x))
        axis = normalize_axis(self.attr("axis"), rank)
        axes = list(range(axis, rank))
        mu = g.op("mean", x, axes=axes, keepdims=True)
        centered = g.op("sub", x, mu)
        var = g.op("mean", g.op("mul", centered, centered), axes=axes, keepdims=True)
        rstd = g.op("rsqrt", g.op("add", var, g.scalar(self.attr("epsilon"), var)))
        xhat = g.op("mul", centered, rstd)
        out: list[SSAValue | None] = [None, None, None]
        if g.needs(0):
            dxhat = g.op("mul", dy, gamma)
            m1 = g.op("mean", dxhat, axes=axes, keepdims=True)
            m2 = g.op("mean", g.op("mul", dxhat, xhat), axes=axes, keepdims=True)
            inner = g.op("sub", g.op("sub", dxhat, m1), g.op("mul", xhat, m2))
            out[0] = g.op("mul", rstd, inner)
        if g.needs(1):
            out[1] = g.sum_to(g.op("mul", dy, xhat), shape(gamma))
        if g.needs(2):
            out[2] = g.sum_to(dy, shape(beta))
        return out


@irdl_op_definition
class InstanceNormOp(NNVMOp):
    """`nnvm.instance_norm %x, %gamma, %beta`: x [N, C, spatial...] normalized per (n, c) over
    its spatial axes, then scaled and shifted per channel by gamma, beta [C]."""

    name = "nnvm.instance_norm"
    data = operand_def()
    gamma = operand_def()
    beta = operand_def()
    result = result_def()
    epsilon = float_prop(1e-5)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x = operand_types[0]
        _same_element_type("instance_norm", operand_types)
        shape = x.get_shape()
        if len(shape) < 3:
            raise ShapeError(
                f"instance_norm: data must be [N, C, spatial...], got rank {len(shape)}"
            )
        for what, t in zip(("gamma", "beta"), operand_types[1:], strict=True):
            _check_vector("instance_norm", what, t, shape[1])
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, g, b = inputs
        axes = tuple(range(2, x.ndim))
        xd = x.astype(np.float64)
        mean = xd.mean(axis=axes, keepdims=True)
        var = ((xd - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (xd - mean) / np.sqrt(var + self.attr("epsilon"))
        y = y * _along(g.astype(np.float64), 1, x.ndim) + _along(b.astype(np.float64), 1, x.ndim)
        return [y.astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, g, beta = inputs
        y = _te_normalize(b, x, list(range(2, x.ndim)), self.attr("epsilon"))
        return [b.compute(x.shape, lambda *i: y[i] * g[i[1]] + beta[i[1]])]


@irdl_op_definition
class LRNOp(NNVMOp):
    """`nnvm.lrn %x {size = 5}`: ONNX local response normalization across channels (axis 1):
    x / (bias + alpha / size * sum of x^2 over a window of `size` channels) ^ beta."""

    name = "nnvm.lrn"
    data = operand_def()
    result = result_def()
    size = int_prop()
    alpha = float_prop(1e-4)
    beta = float_prop(0.75)
    bias = float_prop(1.0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        (x,) = operand_types
        _same_element_type("lrn", operand_types)
        if len(x.get_shape()) < 3:
            raise ShapeError(f"lrn: data must be [N, C, spatial...], got rank {len(x.get_shape())}")
        if self.attr("size") < 1:
            raise ShapeError(f"lrn: size must be >= 1, got {self.attr('size')}")
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        (x,) = inputs
        size = self.attr("size")
        lo, hi = (size - 1) // 2, size // 2  # floor and ceil of (size - 1) / 2
        xd = x.astype(np.float64)
        sq = np.pad(xd * xd, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
        channels = x.shape[1]
        window = sum(sq[:, k : k + channels] for k in range(size))
        denom = (self.attr("bias") + self.attr("alpha") / size * window) ** self.attr("beta")
        return [(xd / denom).astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        (x,) = inputs
        size = self.attr("size")
        lo = (size - 1) // 2
        channels = x.shape[1]

        def window(*args: Expr) -> Expr:
            *i, r = args
            c = i[1] + r - lo
            v = x[[i[0], c, *i[2:]]]
            inside = (c >= 0) & (c < channels)
            return te.select(inside, v * v, 0.0)

        sq = b.reduce(x.shape, "sum", (size,), window, name="window", reduce_axes=("r",))
        alpha, beta, bias = self.attr("alpha"), self.attr("beta"), self.attr("bias")

        def body(*i: Expr) -> Expr:
            base = sq[i] * (alpha / size) + bias
            return x[i] / te.binary("pow", base, beta)

        return [b.compute(x.shape, body)]


@irdl_op_definition
class PReluOp(NNVMOp):
    """`nnvm.prelu %x, %slope`: x where x >= 0, else slope * x; slope broadcasts to x."""

    name = "nnvm.prelu"
    data = operand_def()
    slope = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.BROADCAST))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x, s = operand_types
        _same_element_type("prelu", operand_types, "numeric")
        xs, ss = tuple(x.get_shape()), tuple(s.get_shape())
        ok = len(ss) <= len(xs)
        if ok:
            try:
                ok = broadcast_shapes(xs, ss) == xs
            except ShapeError:
                ok = False
        if not ok:
            raise ShapeError(f"prelu: slope of shape {list(ss)} does not broadcast to {list(xs)}")
        return [x]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, s = inputs
        return [np.where(x < 0, x * s, x).astype(x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, slope = inputs

        def body(*i: Expr) -> Expr:
            v = x[i]
            return te.select(v < 0, v * slope[topi.broadcast_index(i, slope.shape)], v)

        return [b.compute(x.shape, body)]


def _te_normalize(b: KernelBuilder, x: TensorRef, axes: list[int], eps: float) -> TensorRef:
    """(x - mean) / sqrt(var + eps) over `axes` (mean and variance as two reductions)."""
    count = 1
    for a in axes:
        count *= x.shape[a]

    def at0(i: Sequence[Expr]) -> list[Expr | int]:
        return [0 if d in axes else v for d, v in enumerate(i)]

    total = topi.reduce_over(b, x, axes, "sum", keepdims=True, name="sum")

    def dev(*args: Expr) -> Expr:
        spatial, red = args[: x.ndim], args[x.ndim :]
        idx = list(spatial)
        for pos, a in enumerate(axes):
            idx[a] = red[pos]
        d = x[idx] - total[at0(spatial)] * (1.0 / count)
        return d * d

    var = b.reduce(
        [1 if d in axes else n for d, n in enumerate(x.shape)],
        "sum",
        [x.shape[a] for a in axes],
        dev,
        name="var",
        reduce_axes=[f"r{a}" for a in axes],
    )

    def body(*i: Expr) -> Expr:
        j = at0(i)
        return (x[i] - total[j] * (1.0 / count)) * te.unary("rsqrt", var[j] * (1.0 / count) + eps)

    return b.compute(x.shape, body, name="norm")


NN_OPS: list[type[NNVMOp]] = [
    DenseOp,
    MatmulOp,
    BatchMatmulOp,
    BiasAddOp,
    SoftmaxOp,
    LogSoftmaxOp,
    BatchNormOp,
    LayerNormOp,
    InstanceNormOp,
    LRNOp,
    PReluOp,
]
