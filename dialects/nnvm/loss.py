"""Loss ops for training: scalar (rank-0) means over a batch, each with its vector-Jacobian
product. `softmax_cross_entropy` takes logits [N, C] and integer class labels [N];
`mse_loss` any two tensors of one shape."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import VJPBuilder, shape
from nnvm.dialects.nnvm.base import EvalContext, NNVMOp, ShapeError, tensor
from nnvm.dialects.nnvm.dtypes import is_float, is_integer, numpy_dtype_of
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


@irdl_op_definition
class SoftmaxCrossEntropyOp(NNVMOp):
    """`nnvm.softmax_cross_entropy %logits, %labels`: mean over the batch of
    -log softmax(logits)[n, labels[n]]. A label outside [0, C) is an error in the reference;
    compiled code clamps it into range (it never reads out of bounds)."""

    name = "nnvm.softmax_cross_entropy"
    logits = operand_def()
    labels = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        x, y = operand_types
        xs, ys = x.get_shape(), y.get_shape()
        if not is_float(x.element_type) or len(xs) != 2:
            raise ShapeError(f"softmax_cross_entropy: logits must be float [N, C], got {x}")
        if not is_integer(y.element_type) or tuple(ys) != (xs[0],):
            raise ShapeError(
                f"softmax_cross_entropy: labels must be integer [{xs[0]}] class indices, got {y}"
            )
        if xs[0] < 1 or xs[1] < 1:
            raise ShapeError("softmax_cross_entropy: needs at least one row and one class")
        return [tensor((), x.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, labels = inputs
        n, c = x.shape
        if labels.size and (labels.min() < 0 or labels.max() >= c):
            raise ValueError(f"softmax_cross_entropy: labels must lie in [0, {c})")
        xd = x.astype(np.float64)
        m = xd.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(xd - m).sum(axis=1))
        picked = xd[np.arange(n), labels.astype(np.int64)]
        return [np.asarray((lse - picked).mean(), dtype=x.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, labels = inputs
        n, c = x.shape
        m = topi.reduce_over(b, x, [1], "max", name="max")
        s = b.reduce(
            (n,), "sum", (c,), lambda i, k: te.exp(x[i, k] - m[i]), name="sum", reduce_axes=("k",)
        )

        def row(i: Expr) -> Expr:
            label = te.minimum(te.maximum(topi.to_index(labels[i]), 0), c - 1)
            return m[i] + te.log(s[i]) - x[i, label]

        per_row = b.compute((n,), row, name="nll")
        total = b.reduce((), "sum", (n,), lambda k: per_row[k], name="total", reduce_axes=("n",))
        return [b.compute((), lambda: total[()] * (1.0 / n))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """d logits = (softmax(logits) - onehot(labels)) * dy / N."""
        (dy,) = grads
        x, labels = self.logits, self.labels
        n, c = shape(x)
        classes = g.constant(np.arange(c), labels)
        onehot = g.op("equal", g.op("expand_dims", labels, axes=[1]), classes)
        target = g.op("cast", onehot, to=str(numpy_dtype_of(x.type.element_type)))
        diff = g.op("sub", g.op("softmax", x, axis=1), target)
        return [g.op("mul", diff, g.op("mul", dy, g.scalar(1.0 / n, dy))), None]


@irdl_op_definition
class MSELossOp(NNVMOp):
    """`nnvm.mse_loss %prediction, %target`: mean of the squared differences."""

    name = "nnvm.mse_loss"
    prediction = operand_def()
    target = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        p, t = operand_types
        if not is_float(p.element_type) or p != t:
            raise ShapeError(
                f"mse_loss: prediction and target must be one float type, got {p}, {t}"
            )
        if 0 in p.get_shape():
            raise ShapeError("mse_loss: empty tensors have no mean")
        return [tensor((), p.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        p, t = inputs
        d = p.astype(np.float64) - t.astype(np.float64)
        return [np.asarray((d * d).mean(), dtype=p.dtype)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        p, t = inputs
        count = int(np.prod(p.shape))

        def sq(*i: Expr) -> Expr:
            d = p[i] - t[i]
            return d * d

        total = b.reduce((), "sum", p.shape, sq, name="total")
        return [b.compute((), lambda: total[()] * (1.0 / count))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        (dy,) = grads
        p, t = self.prediction, self.target
        count = int(np.prod(shape(p)))
        diff = g.op("mul", g.op("sub", p, t), g.op("mul", dy, g.scalar(2.0 / count, dy)))
        return [diff if g.needs(0) else None, g.op("neg", diff) if g.needs(1) else None]


LOSS_OPS: list[type[NNVMOp]] = [SoftmaxCrossEntropyOp, MSELossOp]
