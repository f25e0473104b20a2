"""2-D convolution with strides, padding, dilation, groups and explicit layouts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
    int_prop,
    ints_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef


def conv_output_size(
    size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int
) -> int:
    """Output extent of one spatial axis of a convolution or pooling window."""
    return (size + pad_lo + pad_hi - dilation * (kernel - 1) - 1) // stride + 1


@irdl_op_definition
class Conv2DOp(NNVMOp):
    """`nnvm.conv2d %data, %weight`: no bias (a following `bias_add` carries it, and fuses).

    padding is [top, left, bottom, right]. data_layout is NCHW or blocked NCHW<c>c;
    kernel_layout is OIHW or blocked OIHW<i>i<o>o (see layout.py); out_layout, when set, is the
    result's layout (else data_layout's): a stem conv over 3 input channels reads NCHW and
    writes NCHW<c>c, so the network after it runs blocked.
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
    out_layout = str_prop("")
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OUT_ELEMWISE_FUSABLE))

    def _layouts(self) -> tuple[Layout, Layout]:
        try:
            data = Layout.parse(self.attr("data_layout"), "NCHW")
            kernel = Layout.parse(self.attr("kernel_layout"), "OIHW")
        except ValueError as err:
            raise ShapeError(f"conv2d: {err}") from None
        return data, kernel

    def _out_layout(self) -> Layout:
        try:
            return Layout.parse(self.attr("out_layout") or self.attr("data_layout"), "NCHW")
        except ValueError as err:
            raise ShapeError(f"conv2d: {err}") from None

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
        out_layout = self._out_layout()
        return [tensor(out_layout.physical_shape((n, o, oh, ow), "result"), d.element_type)]

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
        return [self._out_layout().from_canonical(out).astype(inputs[0].dtype, copy=False)]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """Padding as its own stage, then the sum over (input channels, kh, kw). NCHW,
        NCHW<c>c with a matching OIHW<c>i<c>o kernel, depthwise NCHW<c>c (OIHW1i<c>o) and the
        NCHW -> NCHW<c>c stem get direct formulas (no index division), the blocked ones the
        register-tiled conv2d_nchwc schedule; any other layout pair goes through logical
        indices."""
        x, w = inputs
        data_layout, kernel_layout = self._layouts()
        (sh, sw), pad, (dh, dw) = self.attr("strides"), self.attr("padding"), self.attr("dilation")
        groups = self.attr("groups")
        out_shape = tuple(self.infer_result_types([x.type, w.type])[0].get_shape())
        _, c, _, _ = data_layout.logical_shape(x.shape, "data")
        o, ig, kh, kw = kernel_layout.logical_shape(w.shape, "weight")
        og = o // groups
        letters = [a if f == 0 else "" for a, f in data_layout.axes]
        lo, hi = [0] * x.ndim, [0] * x.ndim
        lo[letters.index("H")], lo[letters.index("W")] = pad[0], pad[1]
        hi[letters.index("H")], hi[letters.index("W")] = pad[2], pad[3]
        xp = topi.pad(b, x, lo, hi, 0.0)

        def window(oh: Expr, ow: Expr, rh: Expr, rw: Expr) -> tuple[Expr, Expr]:
            return oh * sh + rh * dh, ow * sw + rw * dw

        def conv(
            fn: Callable[..., Expr],
            reduce: tuple[int, ...],
            names: tuple[str, ...],
            axes: tuple[str, ...],
            template: str | None,
        ) -> list[TensorRef]:
            return [
                b.reduce(
                    out_shape, "sum", reduce, fn, axes=axes, reduce_axes=names, template=template
                )
            ]

        nchw = ("n", "oc", "oh", "ow")
        cb = data_layout.block("C")
        out_layout = self._out_layout()
        ob = out_layout.block("C")
        stem = (
            ob is not None
            and groups == 1
            and data_layout.text == "NCHW"
            and out_layout.text == f"NCHW{ob}c"
            and kernel_layout.text == f"OIHW{c}i{ob}o"
        )
        if stem:

            def nchw_in_nchwc_out(*a: Expr) -> Expr:
                n, ocb, oh, ow, oc, ic, rh, rw = a
                ih, iw = window(oh, ow, rh, rw)
                return xp[n, ic, ih, iw] * w[ocb, 0, rh, rw, ic, oc]

            return conv(
                nchw_in_nchwc_out,
                (c, kh, kw),
                ("ic", "kh", "kw"),
                ("n", "ocb", "oh", "ow", "oc"),
                "conv2d_nchwc",
            )
        same = out_layout.text == data_layout.text
        if same and data_layout.text == "NCHW" and kernel_layout.text == "OIHW":
            if ig == 1 and groups > 1:  # depthwise (with a channel multiplier og)

                def depthwise(*a: Expr) -> Expr:
                    n, oc, oh, ow, rh, rw = a
                    ih, iw = window(oh, ow, rh, rw)
                    return xp[n, oc // og, ih, iw] * w[oc, 0, rh, rw]

                return conv(depthwise, (kh, kw), ("kh", "kw"), nchw, "depthwise_conv2d_nchw")

            def direct(*a: Expr) -> Expr:
                n, oc, oh, ow, ic, rh, rw = a
                ih, iw = window(oh, ow, rh, rw)
                cin = (oc // og) * ig + ic if groups > 1 else ic
                return xp[n, cin, ih, iw] * w[oc, ic, rh, rw]

            return conv(direct, (ig, kh, kw), ("ic", "kh", "kw"), nchw, "conv2d_nchw")
        depthwise_blocked = (
            same
            and cb is not None
            and groups == c == o
            and data_layout.text == f"NCHW{cb}c"
            and kernel_layout.text == f"OIHW1i{cb}o"
        )
        if depthwise_blocked:

            def depthwise_nchwc(*a: Expr) -> Expr:
                n, cblk, oh, ow, ci, rh, rw = a
                ih, iw = window(oh, ow, rh, rw)
                return xp[n, cblk, ih, iw, ci] * w[cblk, 0, rh, rw, 0, ci]

            return conv(
                depthwise_nchwc,
                (kh, kw),
                ("kh", "kw"),
                ("n", "ocb", "oh", "ow", "oc"),
                "conv2d_nchwc",
            )
        grouped_blocked = (
            same
            and cb is not None
            and groups > 1
            and ig % cb == 0
            and og % cb == 0
            and data_layout.text == f"NCHW{cb}c"
            and kernel_layout.text == f"OIHW{cb}i{cb}o"
        )
        if grouped_blocked:  # every channel block inside one group
            assert cb is not None
            in_blocks, out_blocks = ig // cb, og // cb

            def grouped_nchwc(*a: Expr) -> Expr:
                n, ocb, oh, ow, oc, icb, rh, rw, ic = a
                ih, iw = window(oh, ow, rh, rw)
                first = (ocb // out_blocks) * in_blocks  # the group's first input block
                return xp[n, first + icb, ih, iw, ic] * w[ocb, icb, rh, rw, ic, oc]

            return conv(
                grouped_nchwc,
                (in_blocks, kh, kw, cb),
                ("icb", "kh", "kw", "ic"),
                ("n", "ocb", "oh", "ow", "oc"),
                "conv2d_nchwc",
            )
        blocked = (
            cb is not None
            and ob is not None
            and groups == 1
            and data_layout.text == f"NCHW{cb}c"
            and out_layout.text == f"NCHW{ob}c"
            and kernel_layout.text == f"OIHW{cb}i{ob}o"
        )
        if blocked:  # input and output blocks may differ (NCHW16c in, NCHW8c out)
            assert cb is not None

            def nchwc(*a: Expr) -> Expr:
                n, ocb, oh, ow, oc, icb, rh, rw, ic = a
                ih, iw = window(oh, ow, rh, rw)
                return xp[n, icb, ih, iw, ic] * w[ocb, icb, rh, rw, ic, oc]

            return conv(
                nchwc,
                (c // cb, kh, kw, cb),
                ("icb", "kh", "kw", "ic"),
                ("n", "ocb", "oh", "ow", "oc"),
                "conv2d_nchwc",
            )

        def generic(*args: Expr) -> Expr:
            """Any other layout pair: logical indices through the layouts."""
            spatial, (ic, rh, rw) = args[: len(out_shape)], args[len(out_shape) :]
            on, oc, oh, ow = topi.from_blocked(out_layout.axes, out_layout.canonical, spatial)
            ih, iw = window(oh, ow, rh, rw)
            cin = (oc // og) * ig + ic if groups > 1 else ic
            xv = xp[topi.to_blocked(data_layout.axes, {"N": on, "C": cin, "H": ih, "W": iw})]
            wv = w[topi.to_blocked(kernel_layout.axes, {"O": oc, "I": ic, "H": rh, "W": rw})]
            return xv * wv

        return [b.reduce(out_shape, "sum", (ig, kh, kw), generic, reduce_axes=("ic", "kh", "kw"))]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        """Both products are convolutions (so they run on the conv schedules): the data's is
        the stride-dilated cotangent correlated with the flipped, group-transposed kernel; the
        weight's correlates the padded data with the cotangent, strides and dilation swapped."""
        if (self.attr("data_layout"), self.attr("kernel_layout")) != ("NCHW", "OIHW") or (
            self.attr("out_layout") not in ("", "NCHW")
        ):
            raise NoGradient("conv2d has a gradient in the NCHW / OIHW layouts only")
        (dy,) = grads
        x, w = self.data, self.weight
        n, c, h, wd = shape(x)
        o, cg, kh, kw = shape(w)
        oh, ow = shape(dy)[2:]
        (sh, sw), pad, (dh, dw), groups = (
            self.attr("strides"),
            self.attr("padding"),
            self.attr("dilation"),
            self.attr("groups"),
        )
        og = o // groups
        dx = dw_ = None
        if g.needs(0):
            up = dy
            if sh > 1 or sw > 1:  # zeros between the cotangent's rows and columns
                up = g.op("reshape", up, shape=[n, o, oh, 1, ow, 1])
                up = g.op("pad", up, pads=[0, 0, 0, 0, 0, 0, 0, 0, 0, sh - 1, 0, sw - 1])
                up = g.op("reshape", up, shape=[n, o, oh * sh, ow * sw])
            lo_h, lo_w = dh * (kh - 1) - pad[0], dw * (kw - 1) - pad[1]
            hi_h, hi_w = h + pad[0] - oh * sh, wd + pad[1] - ow * sw
            up = g.op("pad", up, pads=[0, 0, lo_h, lo_w, 0, 0, hi_h, hi_w])
            wt = g.op("reshape", w, shape=[groups, og, cg, kh, kw])
            wt = g.op("transpose", wt, perm=[0, 2, 1, 3, 4])
            wt = g.op("reshape", wt, shape=[c, og, kh, kw])
            wt = g.op(
                "slice", wt, starts=[-1, -1], ends=[-kh - 1, -kw - 1], axes=[2, 3], steps=[-1, -1]
            )
            dx = g.op("conv2d", up, wt, dilation=[dh, dw], groups=groups)
        if g.needs(1):
            xp = g.op("pad", x, pads=[0, 0, pad[0], pad[1], 0, 0, pad[2], pad[3]])
            hp, wp = h + pad[0] + pad[2], wd + pad[1] + pad[3]
            xt = g.op("reshape", xp, shape=[n, groups, cg, hp, wp])
            xt = g.op("transpose", xt, perm=[2, 1, 0, 3, 4])
            xt = g.op("reshape", xt, shape=[cg, groups * n, hp, wp])
            kt = g.op("transpose", dy, perm=[1, 0, 2, 3])
            full = g.op("conv2d", xt, kt, strides=[dh, dw], dilation=[sh, sw], groups=groups)
            if shape(full)[2:] != (kh, kw):
                full = g.op("slice", full, starts=[0, 0], ends=[kh, kw], axes=[2, 3], steps=[1, 1])
            dw_ = g.op("transpose", full, perm=[1, 0, 2, 3])
        return [dx, dw_]


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
                    :,
                    :,
                    a * dh : a * dh + sh * (oh - 1) + 1 : sh,
                    b * dw : b * dw + sw * (ow - 1) + 1 : sw,
                ]
        wg = w[g * og : (g + 1) * og].astype(np.float64).reshape(og, -1)
        out[:, g * og : (g + 1) * og] = np.einsum(
            "ok,nkp->nop", wg, cols.reshape(n, i * kh * kw, oh * ow)
        ).reshape(n, og, oh, ow)
    return out
