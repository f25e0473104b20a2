"""2-D convolution with strides, padding, dilation, groups and explicit layouts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    int_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind


def conv_output_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int) -> int:
    """Output extent of one spatial axis of a convolution or pooling window."""
    return (size + pad_lo + pad_hi - dilation * (kernel - 1) - 1) // stride + 1


@irdl_op_definition
class Conv2DOp(NNVMOp):
    """`nnvm.conv2d %data, %weight`: no bias (a following `bias_add` carries it, and fuses).

    padding is [top, left, bottom, right]. data_layout is NCHW or blocked NCHW<c>c;
    kernel_layout is OIHW or blocked OIHW<i>i<o>o (see layout.py).
    """

    name = "nnvm.conv2d"
    data = operand_def()
    weight = operand_def()
    result = result_def()
    strides = ints_prop((1, 1))
    padding = ints_prop((0, 0, 0, 0))
    dilation = ints_prop((1, 1))
    groups = int_prop(1)
    data_layout = str_prop("NCHW")
    kernel_layout = str_prop("OIHW")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def _layouts(self) -> tuple[Layout, Layout]:
        try:
            data = Layout.parse(self.attr("data_layout"), "NCHW")
            kernel = Layout.parse(self.attr("kernel_layout"), "OIHW")
        except ValueError as err:
            raise ShapeError(f"conv2d: {err}") from None
        return data, kernel

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, w = operand_types
        if not is_float(d.element_type) or d.element_type != w.element_type:
            raise ShapeError(
                f"conv2d needs float data and weight of one element type, got {d.element_type} "
                f"and {w.element_type}"
            )
        data_layout, kernel_layout = self._layouts()
        n, c, h, wd = data_layout.logical_shape(d.get_shape(), "data")
        o, i, kh, kw = kernel_layout.logical_shape(w.get_shape(), "weight")
        strides, pad, dil, groups = (
            self.attr("strides"),
            self.attr("padding"),
            self.attr("dilation"),
            self.attr("groups"),
        )
        if len(strides) != 2 or len(dil) != 2 or len(pad) != 4:
            raise ShapeError("conv2d: strides and dilation need 2 values, padding 4")
        if min(strides) < 1 or min(dil) < 1 or min(pad) < 0:
            raise ShapeError("conv2d: strides and dilation must be >= 1 and padding >= 0")
        if groups < 1 or c % groups or o % groups:
            raise ShapeError(
                f"conv2d: groups={groups} must divide input channels {c} and output channels {o}"
            )
        if i * groups != c:
            raise ShapeError(
                f"conv2d: weight expects {i * groups} input channels ({i} per group x {groups} "
                f"groups), data has {c}"
            )
        oh = conv_output_size(h, kh, strides[0], pad[0], pad[2], dil[0])
        ow = conv_output_size(wd, kw, strides[1], pad[1], pad[3], dil[1])
        if oh < 1 or ow < 1:
            raise ShapeError(f"conv2d: the window does not fit the {h}x{wd} input")
        return [tensor(data_layout.physical_shape((n, o, oh, ow), "result"), d.element_type)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data_layout, kernel_layout = self._layouts()
        x = data_layout.to_canonical(inputs[0])
        w = kernel_layout.to_canonical(inputs[1])
        out = conv2d_nchw(
            x,
            w,
            self.attr("strides"),
            self.attr("padding"),
            self.attr("dilation"),
            self.attr("groups"),
        )
        return [data_layout.from_canonical(out).astype(inputs[0].dtype, copy=False)]


def conv2d_nchw(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> np.ndarray:
    """Reference NCHW/OIHW convolution via im2col per group (float64 accumulation)."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    xp = np.pad(
        x.astype(np.float64),
        ((0, 0), (0, 0), (padding[0], padding[2]), (padding[1], padding[3])),
    )
    oh = conv_output_size(h, kh, sh, padding[0], padding[2], dh)
    ow = conv_output_size(wd, kw, sw, padding[1], padding[3], dw)
    out = np.zeros((n, o, oh, ow), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * i : (g + 1) * i]
        cols = np.empty((n, i, kh, kw, oh, ow), dtype=np.float64)
        for a in range(kh):
            for b in range(kw):
                cols[:, :, a, b] = xs[
                    :, :, a * dh : a * dh + sh * (oh - 1) + 1 : sh, b * dw : b * dw + sw * (ow - 1) + 1 : sw
                ]
        wg = w[g * og : (g + 1) * og].astype(np.float64).reshape(og, -1)
        out[:, g * og : (g + 1) * og] = np.einsum("ok,nkp->nop", wg, cols.reshape(n, i * kh * kw, oh * ow)).reshape(n, og, oh, ow)
    return out
