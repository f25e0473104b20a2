"""pad: grow (or, with negative pads, crop) each axis at both ends, filling by mode: a constant,
a reflection, the edge value or a wrap-around."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition

from nnvm.dialects.nnvm.autodiff import NoGradient, VJPBuilder, shape
from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    UnaryTransformOp,
    float_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

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

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Constant mode: the padding's cotangent is dropped and a crop's comes back as zeros."""
        if self.attr("mode") != "constant":
            raise NoGradient(f"pad in mode {self.attr('mode')!r} has no gradient (constant has)")
        (dy,) = grads
        out_shape = shape(dy)
        rank = len(out_shape)
        pads = self.attr("pads")
        lo, hi = pads[:rank], pads[rank:]
        starts = [max(v, 0) for v in lo]
        ends = [d - max(v, 0) for d, v in zip(out_shape, hi, strict=True)]
        inner = g.op(
            "slice", dy, starts=starts, ends=ends, axes=list(range(rank)), steps=[1] * rank
        )
        crops = [max(-v, 0) for v in lo] + [max(-v, 0) for v in hi]
        return [g.op("pad", inner, pads=crops) if any(crops) else inner]


PAD_OPS: list[type[NNVMOp]] = [PadOp]
