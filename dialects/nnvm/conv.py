"""2-D convolution with strides, padding, dilation, groups and explicit layouts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue
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
from nnvm.dialects.nnvm.dtypes import is_byte, is_float
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
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
    pad_value = int_prop(0)
    """What the padding reads (integer data only): an unsigned-offset int8 conv pads with the
    offset (128), the value that stands for zero."""
    weight_lanes = int_prop(0)
    """0: the weight is laid out as kernel_layout says. L > 0 (int8 weights, kernel_layout
    OIHW<i>i<L>o): the weight is packed [O/L, I/i, KH, KW, i/4, L, 4] for byte dot products
    (each L output channels take 4 consecutive input channels in one instruction)."""
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

    def is_plain_nchw(self) -> bool:
        """Ungrouped, in the canonical layouts (NCHW data and result, an OIHW weight as it
        is): the form alter-layout and the int8 rewrites start from."""
        return (
            self.attr("groups") == 1
            and self.attr("data_layout") == "NCHW"
            and self.attr("kernel_layout") == "OIHW"
            and not self.attr("out_layout")
            and not self.attr("weight_lanes")
        )

    def _is_bytes(self, d: Attribute, w: Attribute) -> bool:
        """u8 or i8 data and int8 weight: an integer conv accumulating in int32."""
        return is_byte(d) and w == IntegerType(8)

    def _kernel_shape(self, ws: Sequence[int]) -> tuple[int, ...]:
        """The weight's shape as kernel_layout describes it (a packed weight unpacked)."""
        lanes = self.attr("weight_lanes")
        if not lanes:
            return tuple(ws)
        if len(ws) != 7 or ws[5] != lanes or ws[6] != 4:
            raise ShapeError(
                f"conv2d: weight_lanes = {lanes} needs a [O/{lanes}, I/i, KH, KW, i/4, {lanes}, 4] "
                f"weight, got {list(ws)}"
            )
        return (ws[0], ws[1], ws[2], ws[3], ws[4] * 4, ws[5])

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        d, w = operand_types
        integer = self._is_bytes(d.element_type, w.element_type)
        if not integer and (not is_float(d.element_type) or d.element_type != w.element_type):
            raise ShapeError(
                f"conv2d needs float data and weight of one element type (or 8-bit data and an "
                f"int8 weight), got {d.element_type} and {w.element_type}"
            )
        if self.attr("weight_lanes") and not integer:
            raise ShapeError("conv2d: a packed weight (weight_lanes) is int8")
        data_layout, kernel_layout = self._layouts()
        n, c, h, wd = data_layout.logical_shape(d.get_shape(), "data")
        o, i, kh, kw = kernel_layout.logical_shape(self._kernel_shape(w.get_shape()), "weight")
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
        elt = IntegerType(32) if integer else d.element_type
        return [tensor(out_layout.physical_shape((n, o, oh, ow), "result"), elt)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        data_layout, kernel_layout = self._layouts()
        x = data_layout.to_canonical(inputs[0])
        w = inputs[1]
        if self.attr("weight_lanes"):  # [.., i/4, L, 4] -> [.., i, L]
            a, b, kh, kw, cq, lanes, q = w.shape
            w = w.transpose(0, 1, 2, 3, 4, 6, 5).reshape(a, b, kh, kw, cq * q, lanes)
        w = kernel_layout.to_canonical(w)
        pad = self.attr("padding")
        if self.attr("pad_value"):
            t, left, bottom, right = pad
            x = np.pad(
                x.astype(np.int64),
                ((0, 0), (0, 0), (t, bottom), (left, right)),
                constant_values=self.attr("pad_value"),
            )
            pad = (0, 0, 0, 0)
        out = conv2d_nchw(
            x, w, self.attr("strides"), pad, self.attr("dilation"), self.attr("groups")
        )
        out = self._out_layout().from_canonical(out)
        if inputs[0].dtype.kind in "iu" and inputs[1].dtype == np.int8:
            return [np.rint(out).astype(np.int32)]
        return [out.astype(inputs[0].dtype, copy=False)]

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
        o, ig, kh, kw = kernel_layout.logical_shape(self._kernel_shape(w.shape), "weight")
        integer = self._is_bytes(x.dtype, w.dtype)
        acc = IntegerType(32)
        og = o // groups
        letters = [a if f == 0 else "" for a, f in data_layout.axes]
        lo, hi = [0] * x.ndim, [0] * x.ndim
        lo[letters.index("H")], lo[letters.index("W")] = pad[0], pad[1]
        hi[letters.index("H")], hi[letters.index("W")] = pad[2], pad[3]
        xp = topi.pad(b, x, lo, hi, self.attr("pad_value") if integer else 0.0)

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
                    out_shape,
                    "sum",
                    reduce,
                    fn,
                    axes=axes,
                    reduce_axes=names,
                    template=template,
                    dtype=acc if integer else None,
                )
            ]

        def mul(xv: Expr, wv: Expr) -> Expr:
            """One product (in int32 for 8-bit operands)."""
            return te.cast(xv, acc) * te.cast(wv, acc) if integer else xv * wv

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
                return mul(xp[n, ic, ih, iw], w[ocb, 0, rh, rw, ic, oc])

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
                    return mul(xp[n, oc // og, ih, iw], w[oc, 0, rh, rw])

                return conv(depthwise, (kh, kw), ("kh", "kw"), nchw, "depthwise_conv2d_nchw")

            def direct(*a: Expr) -> Expr:
                n, oc, oh, ow, ic, rh, rw = a
                ih, iw = window(oh, ow, rh, rw)
                cin = (oc // og) * ig + ic if groups > 1 else ic
                return mul(xp[n, cin, ih, iw], w[oc, ic, rh, rw])

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
                return mul(xp[n, cblk, ih, iw, ci], w[cblk, 0, rh, rw, 0, ci])

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
                return mul(xp[n, first + icb, ih, iw, ic], w[ocb, icb, rh, rw, ic, oc])

            return conv(
                grouped_nchwc,
                (in_blocks, kh, kw, cb),
                ("icb", "kh", "kw", "ic"),
                ("n", "ocb", "oh", "ow", "oc"),
                "conv2d_nchwc",
            )
        narrow_groups = (  # a block spans groups of og channels in and out
            same
            and cb is not None
            and groups > 1
            and 1 < ig == og < cb
            and cb % og == 0
            and data_layout.text == f"NCHW{cb}c"
            and kernel_layout.text == f"OIHW{ig}i{cb}o"
        )
        if narrow_groups:
            assert cb is not None

            def narrow_grouped_nchwc(*a: Expr) -> Expr:
                # output channel oc of block ocb reads channel ic of its own group, in the
                # same block: lane (oc // og) * og + ic (a shuffle of one input block per
                # pixel once vectorized over oc)
                n, ocb, oh, ow, oc, icb, rh, rw, ic = a
                ih, iw = window(oh, ow, rh, rw)
                return mul(
                    xp[n, ocb + icb, ih, iw, (oc // og) * og + ic], w[ocb, icb, rh, rw, ic, oc]
                )

            return conv(
                narrow_grouped_nchwc,
                (1, kh, kw, ig),
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

            packed = self.attr("weight_lanes")

            def nchwc(*a: Expr) -> Expr:
                n, ocb, oh, ow, oc, icb, rh, rw, ic = a
                ih, iw = window(oh, ow, rh, rw)
                if packed:  # [O/L, I/i, KH, KW, i/4, L, 4]
                    wv = w[ocb, icb, rh, rw, ic // 4, oc, ic % 4]
                else:
                    wv = w[ocb, icb, rh, rw, ic, oc]
                return mul(xp[n, icb, ih, iw, ic], wv)

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
            return mul(xv, wv)

        if self.attr("weight_lanes"):
            raise NotImplementedError(
                f"conv2d: a packed weight needs NCHW<i>c data and an OIHW<i>i<L>o kernel, not "
                f"{data_layout.text} / {kernel_layout.text}"
            )
        return [
            b.reduce(
                out_shape,
                "sum",
                (ig, kh, kw),
                generic,
                reduce_axes=("ic", "kh", "kw"),
                dtype=acc if integer else None,
            )
        ]

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
