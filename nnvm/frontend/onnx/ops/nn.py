"""Converters for ONNX neural-network ops: convolution, matrix products, pooling,
normalizations, softmax and LSTM."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import numpy as np

from nnvm.frontend.onnx.builder import ImportShapeError, Known, Unsupported, Value
from nnvm.frontend.onnx.registry import NodeContext, converter

# -- padding and windows -------------------------------------------------------------------------


def window_pads(
    ctx: NodeContext,
    in_spatial: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX pads [begins..., ends...] after resolving `auto_pad`."""
    n = len(in_spatial)
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad == "NOTSET":
        pads = list(ctx.attr("pads") or [0] * (2 * n))
        if len(pads) != 2 * n:
            raise Unsupported(f"pads has {len(pads)} values for {n} spatial axes")
        return [int(p) for p in pads]
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad={auto_pad!r} not supported")
    begins, ends = [], []
    for size, k, s, d in zip(in_spatial, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _as_2d(ctx: NodeContext, x: Value) -> Value:
    """[N, C, W] -> [N, C, 1, W]: 1-D windows run as 2-D ones of height 1."""
    n, c, w = ctx.shape(x)
    return ctx.emit("nnvm.reshape", x, shape=[n, c, 1, w])


def _from_2d(ctx: NodeContext, y: Value) -> Value:
    n, c, _, w = ctx.shape(y)
    return ctx.emit("nnvm.reshape", y, shape=[n, c, w])


def _to_2d_params(
    spatial: int, strides: list[int], dil: list[int], pads: list[int]
) -> tuple[list[int], list[int], list[int]]:
    """Window parameters in 2-D form: ONNX [b0, b1, e0, e1] is conv2d's [t, l, b, r]."""
    if spatial == 1:
        return [1, strides[0]], [1, dil[0]], [0, pads[0], 0, pads[1]]
    return strides, dil, pads


# -- convolution ---------------------------------------------------------------------------------


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def _conv(ctx: NodeContext) -> list[Value | None]:
    x, w, b = ctx.required(0), ctx.required(1), ctx.input(2)
    spatial = ctx.rank(x) - 2
    if spatial not in (1, 2, 3):
        raise Unsupported(f"{spatial}-D convolution not supported (1-D, 2-D and 3-D are)")
    kernel = list(ctx.shape(w)[2:])
    declared = ctx.attr("kernel_shape")
    if declared and list(declared) != kernel:
        raise Unsupported(f"kernel_shape {list(declared)} disagrees with the weight's {kernel}")
    strides = [int(s) for s in ctx.attr("strides") or [1] * spatial]
    dil = [int(d) for d in ctx.attr("dilations") or [1] * spatial]
    pads = window_pads(ctx, ctx.shape(x)[2:], kernel, strides, dil)
    if spatial == 3:
        y = _conv3d(ctx, x, w, strides, dil, pads, int(ctx.attr("group", 1)))
        return [y if b is None else ctx.emit("nnvm.bias_add", y, b, axis=1)]
    strides, dil, padding = _to_2d_params(spatial, strides, dil, pads)
    if spatial == 1:
        x = _as_2d(ctx, x)
        o, i, k = ctx.shape(w)
        w = ctx.emit("nnvm.reshape", w, shape=[o, i, 1, k])
    y = ctx.emit(
        "nnvm.conv2d",
        x,
        w,
        strides=strides,
        padding=padding,
        dilation=dil,
        groups=int(ctx.attr("group", 1)),
    )
    if b is not None:
        y = ctx.emit("nnvm.bias_add", y, b, axis=1)
    return [_from_2d(ctx, y) if spatial == 1 else y]


def _conv3d(
    ctx: NodeContext,
    x: Value,
    w: Value,
    strides: list[int],
    dil: list[int],
    pads: list[int],
    groups: int,
) -> Value:
    """3-D convolution as a sum over the depth taps of 2-D convolutions: tap kd convolves the
    depth slices kd*dil, kd*dil + stride, ... (batched with N) with the weight's kd plane.

    A kernel of one pixel in height and width (a separable video net's temporal (k, 1, 1)
    convs, pointwise (1, 1, 1) ones) moves nothing between pixels: with no spatial stride or
    padding it is one 2-D conv over [N, C, D, H*W] with a (k, 1) kernel, reading the input as
    it lies (no slices, transposes or sum of taps)."""
    n, c, d, h, wd = ctx.shape(x)
    o, ci, kd_, kh, kw = ctx.shape(w)
    pointwise = kh == kw == 1 and strides[1:] == [1, 1] and not any(pads[1:3] + pads[4:])
    if pointwise:
        flat = ctx.emit("nnvm.reshape", x, shape=[n, c, d, h * wd])
        w2 = ctx.emit("nnvm.reshape", w, shape=[o, ci, kd_, 1])
        y = ctx.emit(
            "nnvm.conv2d",
            flat,
            w2,
            strides=[strides[0], 1],
            padding=[pads[0], 0, pads[3], 0],
            dilation=[dil[0], 1],
            groups=groups,
        )
        return ctx.emit("nnvm.reshape", y, shape=[n, o, ctx.shape(y)[2], h, wd])
    if pads[0] or pads[3]:
        x = ctx.emit("nnvm.pad", x, pads=[0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0])
    d = ctx.shape(x)[2]  # the depth padded
    od = (d - dil[0] * (kd_ - 1) - 1) // strides[0] + 1
    if od < 1:
        raise Unsupported("the depth window does not fit the input")
    taps = []
    for kd in range(kd_):
        start = kd * dil[0]
        xs = ctx.emit(
            "nnvm.slice",
            x,
            starts=[start],
            ends=[start + strides[0] * (od - 1) + 1],
            axes=[2],
            steps=[strides[0]],
        )
        xs = ctx.emit("nnvm.transpose", xs, perm=[0, 2, 1, 3, 4])
        xs = ctx.emit("nnvm.reshape", xs, shape=[n * od, c, h, wd])
        wk = ctx.emit("nnvm.slice", w, starts=[kd], ends=[kd + 1], axes=[2], steps=[1])
        wk = ctx.emit("nnvm.reshape", wk, shape=[o, ci, kh, kw])
        taps.append(
            ctx.emit(
                "nnvm.conv2d",
                xs,
                wk,
                strides=strides[1:],
                padding=[pads[1], pads[2], pads[4], pads[5]],
                dilation=dil[1:],
                groups=groups,
            )
        )
    y = taps[0] if len(taps) == 1 else ctx.emit("nnvm.add_n", *taps)
    _, _, oh, ow = ctx.shape(y)
    y = ctx.emit("nnvm.reshape", y, shape=[n, od, o, oh, ow])
    return ctx.emit("nnvm.transpose", y, perm=[0, 2, 1, 3, 4])


def _flipped_weight(ctx: NodeContext, w: Value, groups: int) -> Value:
    """ConvTranspose's weight [C_in, C_out / g, k...] as a conv's [C_out, C_in / g, k...],
    flipped along each spatial axis."""
    ci, co_g, *ks = ctx.shape(w)
    rank = len(ks)
    wt = ctx.emit("nnvm.reshape", w, shape=[groups, ci // groups, co_g, *ks])
    wt = ctx.emit("nnvm.transpose", wt, perm=[0, 2, 1, *range(3, 3 + rank)])
    wt = ctx.emit("nnvm.reshape", wt, shape=[groups * co_g, ci // groups, *ks])
    big = 2**62
    return ctx.emit(
        "nnvm.slice",
        wt,
        starts=[-1] * rank,
        ends=[-big] * rank,
        axes=list(range(2, 2 + rank)),
        steps=[-1] * rank,
    )


def _phase_convs(
    ctx: NodeContext,
    x: Value,
    w: Value,
    kernel: list[int],
    strides: list[int],
    dil: list[int],
    pads: list[int],
    out_pad: list[int],
    groups: int,
) -> Value | None:
    """A 2-D transposed convolution with stride s as s_h x s_w ordinary convs over the input,
    one per output phase, interleaved (the sub-pixel decomposition): output o = s q + p sums
    x[q + c_p - m] w[t_p + s m] over the taps t of one residue t_p = (p + pad) mod s, a conv
    (stride 1) with the sub-kernel w[t_p::s] flipped. No multiply by an inserted zero: a
    UNet's 4x4 stride-2 upsampling convs did 4x their work (6 ms each at 128x128).

    None (the caller inserts zeros) where a phase has no tap (kernel below the stride),
    dilation is not 1, or a phase would need its input cropped."""
    if any(d != 1 for d in dil) or any(k < s for k, s in zip(kernel, strides, strict=True)):
        return None
    n, _, *sizes = ctx.shape(x)
    outs = [
        s * (size - 1) + extra + k - pads[a] - pads[2 + a]
        for a, (size, k, s, extra) in enumerate(zip(sizes, kernel, strides, out_pad, strict=True))
    ]
    quotients = [-(-o // s) for o, s in zip(outs, strides, strict=True)]
    per_axis = []  # per axis, per phase: (first tap of the flipped kernel, taps, before, after)
    for a in range(2):
        k, s, size, q = kernel[a], strides[a], sizes[a], quotients[a]
        phases = []
        for p in range(s):
            t0 = (p + pads[a]) % s
            taps = -(-(k - t0) // s)
            before = taps - 1 - (p + pads[a] - t0) // s
            after = q + taps - 1 - size - before
            if before < 0 or after < 0:
                return None
            phases.append((k - 1 - t0 - s * (taps - 1), taps, before, after))
        per_axis.append(phases)
    wf = _flipped_weight(ctx, w, groups)
    ys = []
    for first_h, taps_h, top, bottom in per_axis[0]:
        for first_w, taps_w, left, right in per_axis[1]:
            sub = ctx.emit(
                "nnvm.slice",
                wf,
                starts=[first_h, first_w],
                ends=[
                    first_h + strides[0] * (taps_h - 1) + 1,
                    first_w + strides[1] * (taps_w - 1) + 1,
                ],
                axes=[2, 3],
                steps=strides,
            )
            ys.append(
                ctx.emit("nnvm.conv2d", x, sub, padding=[top, left, bottom, right], groups=groups)
            )
    sh, sw = strides
    qh, qw = quotients
    co = ctx.shape(ys[0])[1]
    y = ys[0] if len(ys) == 1 else ctx.emit("nnvm.concat", *ys, axis=1)
    y = ctx.emit("nnvm.reshape", y, shape=[n, sh, sw, co, qh, qw])
    y = ctx.emit("nnvm.transpose", y, perm=[0, 3, 4, 1, 5, 2])
    y = ctx.emit("nnvm.reshape", y, shape=[n, co, qh * sh, qw * sw])
    if [qh * sh, qw * sw] != outs:
        y = ctx.emit("nnvm.slice", y, starts=[0, 0], ends=outs, axes=[2, 3], steps=[1, 1])
    return y


@converter(
    "ConvTranspose",
    attrs=(
        "auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
        "pads", "strides",
    ),
)  # fmt: skip
def _conv_transpose(ctx: NodeContext) -> list[Value | None]:
    """The transposed convolution as direct ones, over the weight flipped spatially with its
    in/out channels swapped per group. A strided 1-D or 2-D one (dilation 1, kernel at least
    the stride) is one conv per output phase (`_phase_convs`); otherwise zeros are inserted
    between input pixels (stride) and the input padded by (k - 1) * dilation - pad each side,
    which multiplies mostly zeros (3/4 of the work at stride 2)."""
    x, w, b = ctx.required(0), ctx.required(1), ctx.input(2)
    spatial = ctx.rank(x) - 2
    if spatial not in (1, 2, 3):
        raise Unsupported(f"{spatial}-D transposed convolution not supported (1-D to 3-D are)")
    groups = int(ctx.attr("group", 1))
    in_sizes = list(ctx.shape(x)[2:])
    kernel = list(ctx.shape(w)[2:])
    strides = [int(s) for s in ctx.attr("strides") or [1] * spatial]
    dil = [int(d) for d in ctx.attr("dilations") or [1] * spatial]
    out_pad = [int(p) for p in ctx.attr("output_padding") or [0] * spatial]
    full = [
        s * (i - 1) + op + (k - 1) * d + 1
        for i, k, s, d, op in zip(in_sizes, kernel, strides, dil, out_pad, strict=True)
    ]
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    out_shape = ctx.attr("output_shape")
    if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if out_shape is not None:
            target = [int(v) for v in out_shape][-spatial:]
        else:
            target = [i * s for i, s in zip(in_sizes, strides, strict=True)]
        # A negative total (output_shape beyond the full output) pads the end with zeros.
        total = [f - t for f, t in zip(full, target, strict=True)]
        half = [int(t / 2) for t in total]  # C division, as onnxruntime computes it
        begins = [
            t - h if auto_pad == "SAME_LOWER" else h for t, h in zip(total, half, strict=True)
        ]
        pads = begins + [t - bg for t, bg in zip(total, begins, strict=True)]
    elif auto_pad == "VALID" or not ctx.attr("pads"):
        pads = [0] * (2 * spatial)
    else:
        pads = [int(p) for p in ctx.attr("pads")]
    return [_transposed_conv(ctx, x, w, b, groups, strides, dil, pads, out_pad)]


def _transposed_conv(
    ctx: NodeContext,
    x: Value,
    w: Value,
    b: Value | None,
    groups: int,
    strides: list[int],
    dil: list[int],
    pads: list[int],
    out_pad: list[int],
) -> Value:
    """ConvTranspose of x [N, C, spatial...] by w [C, O / g, k...] with its pads resolved."""
    spatial = ctx.rank(x) - 2
    kernel = list(ctx.shape(w)[2:])
    if spatial == 1:
        x = _as_2d(ctx, x)
        ci, co, k = ctx.shape(w)
        w = ctx.emit("nnvm.reshape", w, shape=[ci, co, 1, k])
        kernel, strides, dil, out_pad = [1, *kernel], [1, *strides], [1, *dil], [0, *out_pad]
        pads = [0, pads[0], 0, pads[1]]
    rank = len(kernel)
    n, c, *sizes = ctx.shape(x)
    if rank == 2 and any(s > 1 for s in strides):
        phases = _phase_convs(ctx, x, w, kernel, strides, dil, pads, out_pad, groups)
        if phases is not None:
            y = phases if b is None else ctx.emit("nnvm.bias_add", phases, b, axis=1)
            return _from_2d(ctx, y) if spatial == 1 else y
    if any(s > 1 for s in strides):  # zero insertion: [N, C, S0, 1, S1, 1, ...] padded by s - 1
        interleaved = [d for size in sizes for d in (size, 1)]
        x = ctx.emit("nnvm.reshape", x, shape=[n, c, *interleaved])
        ends = [e for s in strides for e in (0, s - 1)]
        x = ctx.emit("nnvm.pad", x, pads=[0] * (2 + 2 * rank) + [0, 0, *ends])
        x = ctx.emit(
            "nnvm.reshape", x, shape=[n, c, *(z * s for z, s in zip(sizes, strides, strict=True))]
        )
    grow = [(k - 1) * d for k, d in zip(kernel, dil, strict=True)]
    before = [grow[a] - pads[a] for a in range(rank)]
    after = [grow[a] - pads[rank + a] + out_pad[a] - (strides[a] - 1) for a in range(rank)]
    if any(before + after):
        x = ctx.emit("nnvm.pad", x, pads=[0, 0, *before, 0, 0, *after])
    wt = _flipped_weight(ctx, w, groups)
    if rank == 3:
        y = _conv3d(ctx, x, wt, [1, 1, 1], dil, [0] * 6, groups)
    else:
        y = ctx.emit("nnvm.conv2d", x, wt, dilation=dil, groups=groups)
    if b is not None:
        y = ctx.emit("nnvm.bias_add", y, b, axis=1)
    return _from_2d(ctx, y) if spatial == 1 else y


@converter("Col2Im", attrs=("dilations", "pads", "strides"), since=18)
def _col2im(ctx: NodeContext) -> list[Value | None]:
    """Col2Im (torch's nn.Fold): columns [N, C * prod(block), L] of the L sliding blocks back
    into an image [N, C, spatial...], overlapping positions summed. Blocks that tile the image
    (a patch transformer's fold: stride = block, no dilation or padding) are a reshape and a
    transpose; otherwise it is the transposed conv (groups C, stride, dilation, pads) whose
    one-hot weight puts each of a block's positions in its place, with output padding for the
    rows and columns no block reaches."""
    x = ctx.required(0)
    image = [int(v) for v in np.asarray(ctx.const(1, "image_shape")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.const(2, "block_shape")).reshape(-1)]
    rank = len(image)
    if rank not in (1, 2, 3) or len(block) != rank:
        raise Unsupported(f"Col2Im over {rank} spatial axes (1 to 3 are supported)")
    strides = [int(v) for v in ctx.attr("strides") or [1] * rank]
    dil = [int(v) for v in ctx.attr("dilations") or [1] * rank]
    pads = [int(v) for v in ctx.attr("pads") or [0] * (2 * rank)]
    if len(strides) != rank or len(dil) != rank or len(pads) != 2 * rank:
        raise ImportShapeError(
            f"Col2Im over {rank} axes: {len(strides)} strides, {len(dil)} dilations, "
            f"{len(pads)} pads"
        )
    if min(image + block + strides + dil) < 1 or min(pads) < 0:
        raise ImportShapeError(
            f"Col2Im: image {image}, block {block}, strides {strides} and dilations {dil} "
            f"must be positive, pads {pads} not negative"
        )
    if ctx.rank(x) != 3:
        raise ImportShapeError(f"Col2Im input {list(ctx.shape(x))}: expected [N, C * block, L]")
    n, ck, length = ctx.shape(x)
    k = math.prod(block)
    if ck % k:
        raise ImportShapeError(f"Col2Im: {ck} columns per block is not a multiple of {k}")
    c = ck // k
    spans = [image[a] + pads[a] + pads[rank + a] - dil[a] * (block[a] - 1) - 1 for a in range(rank)]
    if min(spans) < 0:
        raise ImportShapeError(f"Col2Im: block {block} does not fit image {image}")
    counts = [spans[a] // strides[a] + 1 for a in range(rank)]
    if math.prod(counts) != length:
        raise ImportShapeError(f"Col2Im: {length} blocks given, {counts} fit image {image}")
    y = ctx.emit("nnvm.reshape", x, shape=[n, ck, *counts])
    tiles = strides == block and dil == [1] * rank and not any(pads)
    if tiles and [cn * b for cn, b in zip(counts, block, strict=True)] == image:
        y = ctx.emit("nnvm.reshape", y, shape=[n, c, *block, *counts])
        interleave = [i for a in range(rank) for i in (2 + rank + a, 2 + a)]  # count, block
        y = ctx.emit("nnvm.transpose", y, perm=[0, 1, *interleave])
        return [ctx.emit("nnvm.reshape", y, shape=[n, c, *image])]
    onehot = np.zeros((ck, 1, *block), dtype=ctx.dtype(x))
    for pos in range(k):
        onehot[(np.arange(c) * k + pos, 0, *np.unravel_index(pos, block))] = 1
    w = ctx.known(onehot, tag="col2im_weight")
    out_pad = [spans[a] % strides[a] for a in range(rank)]
    return [_transposed_conv(ctx, y, w, None, c, strides, dil, pads, out_pad)]


# -- matrix products -----------------------------------------------------------------------------


def _dense(ctx: NodeContext, a: Value, w_nk: Value) -> Value:
    """a [..., K] x w [N, K]^T, with a flattened to 2-D around the call (one GEMM kernel)."""
    shape = ctx.shape(a)
    if len(shape) <= 2:
        return ctx.emit("nnvm.dense", a, w_nk)
    a2 = ctx.emit("nnvm.reshape", a, shape=[math.prod(shape[:-1]), shape[-1]])
    y = ctx.emit("nnvm.dense", a2, w_nk)
    return ctx.emit("nnvm.reshape", y, shape=[*shape[:-1], ctx.shape(w_nk)[0]])


def _is_weight(v: Value) -> bool:
    return isinstance(v, Known)


@converter("MatMul")
def _matmul(ctx: NodeContext) -> list[Value | None]:
    """Weights known at import make a dense (a GEMM with pre-packable weights); else matmul."""
    a, b = ctx.required(0), ctx.required(1)
    if (
        _is_weight(b)
        and not isinstance(a, Known)
        and ctx.rank(b) == 2
        and ctx.rank(a) >= 1
        and ctx.dtype(a).kind == "f"
    ):
        return [_dense(ctx, a, ctx.emit("nnvm.transpose", b, perm=[1, 0]))]
    return [ctx.emit("nnvm.matmul", a, b)]


@converter("DFT", attrs=("axis", "inverse", "onesided"), since=17)
def _dft(ctx: NodeContext) -> list[Value | None]:
    """DFT along one signal axis as one GEMM: the signal moved next to the trailing (real,
    imaginary) axis and flattened with it, times the constant matrix of the transform's
    cosines and sines (each output's parts in adjacent rows), which build() packs once.
    O(m K) multiply-adds per signal where an FFT takes O(n log n): FNet's token mixing (32
    tokens, 768 features) is small beside its feed-forward layers. dft_length pads with zeros
    or truncates; onesided keeps the K = L // 2 + 1 non-redundant outputs of a real signal,
    or, with inverse, takes them as input and returns the real signal of length L
    (2 (K - 1) by default; each bin but 0 and L / 2 counts twice, for its mirror); inverse
    scales by 1/L."""
    x = ctx.required(0)
    shape = list(ctx.shape(x))
    rank = len(shape)
    parts = shape[-1]
    if rank < 3 or parts not in (1, 2):
        raise ImportShapeError(f"DFT input {shape}: expected [batch, signal..., 1 or 2]")
    if ctx.opset >= 20:
        given = ctx.int_const(2, "axis")
        axis = -2 if given is None else given
    else:
        axis = int(ctx.attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 1 <= axis <= rank - 2:
        raise ImportShapeError(f"DFT axis {axis} is not a signal axis of {shape}")
    inverse, onesided = ctx.flag("inverse", 0), ctx.flag("onesided", 0)
    n = shape[axis]
    length_in = ctx.int_const(1, "dft_length")
    real_out = inverse and onesided  # one-sided bins in, the real signal out
    default = 2 * (n - 1) if real_out else n
    length = default if length_in is None else length_in
    if length < 1:
        raise ImportShapeError(f"DFT length {length} must be positive")
    # input samples used (the rest are zeros, or cut off), outputs, and their parts
    m = min(n, length // 2 + 1 if real_out else length)
    k_out = length // 2 + 1 if onesided and not inverse else length
    out_parts = 1 if real_out else 2
    others = [d for d in range(rank - 1) if d != axis]
    perm = [*others, axis, rank - 1]
    y = ctx.emit("nnvm.transpose", x, perm=perm) if perm != list(range(rank)) else x
    if m < n:
        y = ctx.emit("nnvm.slice", y, starts=[0], ends=[m], axes=[rank - 2], steps=[1])
    kept = [shape[d] for d in others]
    y = ctx.emit("nnvm.reshape", y, shape=[*kept, m * parts])
    matrix = _dft_matrix(k_out, m, length, parts, inverse, real_out)
    y = _dense(ctx, y, ctx.known(matrix.astype(ctx.dtype(x)), tag="dft_matrix"))
    y = ctx.emit("nnvm.reshape", y, shape=[*kept, k_out, out_parts])
    back = [perm.index(d) for d in range(rank)]
    return [ctx.emit("nnvm.transpose", y, perm=back) if back != list(range(rank)) else y]


def _dft_matrix(
    k_out: int, m: int, length: int, parts: int, inverse: bool = False, real_out: bool = False
) -> np.ndarray:
    """[out_parts * k_out, m * parts] (float64): row 2k + d gives part d (real, imaginary) of
    output k of a length-`length` DFT from m input samples of `parts` parts each (column
    j * parts + c); `real_out`: one real row per output, one-sided bins in (see `_dft`)."""
    theta = 2 * np.pi * np.outer(np.arange(k_out), np.arange(m)) / length  # [K, m]
    cos, sin = np.cos(theta), np.sin(theta)
    sign = 1.0 if inverse else -1.0  # e^{sign i theta}
    w = np.zeros((k_out, 2, m, parts))
    w[:, 0, :, 0], w[:, 1, :, 0] = cos, sign * sin  # from the real parts
    if parts == 2:
        w[:, 0, :, 1], w[:, 1, :, 1] = -sign * sin, cos  # from the imaginary parts
    if real_out:  # bins 1 .. (L - 1) // 2 stand for their mirrors too
        bins = np.arange(m)
        w[:, :, (bins > 0) & (2 * bins < length), :] *= 2
    if inverse:
        w /= length
    out_parts = 1 if real_out else 2
    return w[:, :out_parts].reshape(out_parts * k_out, m * parts)


@converter("STFT", attrs=("onesided",), since=17)
def _stft(ctx: NodeContext) -> list[Value | None]:
    """STFT: the frames gathered from the signal ([B, frames, frame_length, parts], one
    gather by a constant index), then one GEMM with the DFT matrix whose columns carry the
    window (a window known at import is folded into it; one computed at run time multiplies
    the frames first). Output [B, frames, bins, 2], bins = frame_length // 2 + 1 if onesided."""
    x = ctx.required(0)
    batch, samples, parts = ctx.shape(x)
    if parts not in (1, 2):
        raise ImportShapeError(f"STFT signal {[batch, samples, parts]}: expected [B, S, 1 or 2]")
    step = ctx.int_const(1, "frame_step")
    if step is None:
        raise Unsupported("STFT's frame_step is missing")
    window = ctx.input(2)
    given = ctx.int_const(3, "frame_length")
    if given is not None:
        length = given
    else:
        length = ctx.shape(window)[0] if window is not None else samples
    if window is not None and ctx.shape(window) != (length,):
        raise ImportShapeError(f"STFT window {ctx.shape(window)} is not [{length}]")
    if step < 1 or not 1 <= length <= samples:
        raise ImportShapeError(f"STFT frame {length} (step {step}) over {samples} samples")
    onesided = ctx.flag("onesided", 1)
    if onesided and parts == 2:
        raise Unsupported("a one-sided STFT of a complex signal")
    frames = (samples - length) // step + 1
    index = np.arange(frames)[:, None] * step + np.arange(length)[None, :]
    y = ctx.emit("nnvm.gather", x, ctx.known(index.astype(np.int64), tag="frames"), axis=1)
    taper = None
    if isinstance(window, Known):
        taper = np.asarray(window.array, dtype=np.float64)
    elif window is not None:  # computed at run time: [L] -> [L, 1] against [B, F, L, P]
        w2 = ctx.emit("nnvm.reshape", window, shape=[length, 1])
        y = ctx.emit("nnvm.mul", y, w2)
    y = ctx.emit("nnvm.reshape", y, shape=[batch, frames, length * parts])
    bins = length // 2 + 1 if onesided else length
    matrix = _dft_matrix(bins, length, length, parts)
    if taper is not None:
        matrix = matrix * np.repeat(taper, parts)[None, :]
    y = _dense(ctx, y, ctx.known(matrix.astype(ctx.dtype(x)), tag="stft_matrix"))
    return [ctx.emit("nnvm.reshape", y, shape=[batch, frames, bins, 2])]


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB", "broadcast"))
def _gemm(ctx: NodeContext) -> list[Value | None]:
    a, b, c = ctx.required(0), ctx.required(1), ctx.input(2)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if ctx.flag("transA", 0):
        a = ctx.emit("nnvm.transpose", a, perm=[1, 0])
    w_nk = b if ctx.flag("transB", 0) else ctx.emit("nnvm.transpose", b, perm=[1, 0])
    if alpha != 1.0 and isinstance(w_nk, Known):
        w_nk = ctx.emit("nnvm.mul", w_nk, ctx.scalar(alpha, w_nk))
        alpha = 1.0
    y = ctx.emit("nnvm.dense", a, w_nk)
    if alpha != 1.0:
        y = ctx.emit("nnvm.mul", y, ctx.scalar(alpha, y))
    if c is None or beta == 0.0:
        return [y]
    if beta != 1.0:
        c = ctx.emit("nnvm.mul", c, ctx.scalar(beta, c))
    n = ctx.shape(y)[1]
    try:
        fits = np.broadcast_shapes(ctx.shape(c), ctx.shape(y)) == ctx.shape(y)
    except ValueError:
        fits = False
    if not fits:
        raise ImportShapeError(
            f"bias C {list(ctx.shape(c))} does not broadcast to the output {list(ctx.shape(y))}"
        )
    if ctx.shape(c) == (n,):
        return [ctx.emit("nnvm.bias_add", y, c, axis=1)]
    return [ctx.emit("nnvm.add", y, c)]


# -- pooling -------------------------------------------------------------------------------------


def _pool(ctx: NodeContext, op: str) -> list[Value | None]:
    x = ctx.required(0)
    spatial = ctx.rank(x) - 2
    if ctx.num_outputs > 1 and (spatial != 2 or ctx.dtype(x).kind != "f"):
        raise Unsupported("the Indices output is supported for 2-D float pooling only")
    kernel = [int(k) for k in ctx.attr("kernel_shape") or []]
    if len(kernel) != spatial:
        raise Unsupported(f"kernel_shape {kernel} does not match {spatial} spatial axes")
    strides = [int(s) for s in ctx.attr("strides") or [1] * spatial]
    dil = [int(d) for d in ctx.attr("dilations") or [1] * spatial]
    pads = window_pads(ctx, ctx.shape(x)[2:], kernel, strides, dil)
    props = {"ceil_mode": ctx.flag("ceil_mode", 0)}
    if op == "nnvm.avg_pool2d":
        props["count_include_pad"] = ctx.flag("count_include_pad", 0)
    if spatial == 3:
        return [_pool3d(ctx, op, x, kernel, strides, dil, pads, props)]
    if spatial not in (1, 2):
        raise Unsupported(f"{spatial}-D pooling not supported (1-D, 2-D and 3-D are)")
    strides, dil, padding = _to_2d_params(spatial, strides, dil, pads)
    pool = [1, kernel[0]] if spatial == 1 else kernel
    src = _as_2d(ctx, x) if spatial == 1 else x
    y = ctx.emit(op, src, pool_size=pool, strides=strides, padding=padding, dilation=dil, **props)
    if ctx.num_outputs > 1:
        order = int(ctx.attr("storage_order", 0))
        return [y, _max_pool_indices(ctx, x, y, kernel, strides, dil, padding, order)]
    return [_from_2d(ctx, y) if spatial == 1 else y]


def _max_pool_indices(
    ctx: NodeContext,
    x: Value,
    y: Value,
    kernel: list[int],
    strides: list[int],
    dil: list[int],
    padding: list[int],
    storage_order: int,
) -> Value:
    """MaxPool's Indices output from graph ops: gather every window of the -inf padded input
    (a gather table built at import), argmax over the window, and map the winning tap back to
    its flat index in x (row-major, or column-major with storage_order = 1)."""
    n, c, h, w = ctx.shape(x)
    oh, ow = ctx.shape(y)[2:]
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dil
    top, left = padding[0], padding[1]
    rows = np.arange(oh)[:, None, None, None] * sh + np.arange(kh)[None, None, :, None] * dh
    cols = np.arange(ow)[None, :, None, None] * sw + np.arange(kw)[None, None, None, :] * dw
    rows, cols = np.broadcast_arrays(rows, cols)  # [OH, OW, KH, KW], padded coordinates
    hp, wp = max(int(rows.max()) + 1, h + top), max(int(cols.max()) + 1, w + left)
    xp = ctx.emit(
        "nnvm.pad",
        x,
        pads=[0, 0, top, left, 0, 0, hp - h - top, wp - w - left],
        value=-np.inf,
    )
    xp = ctx.emit("nnvm.reshape", xp, shape=[n, c, hp * wp])
    taps = kh * kw
    gather = ctx.known((rows * wp + cols).reshape(oh * ow, taps).astype(np.int64), tag="windows")
    best = ctx.emit(
        "nnvm.argmax", ctx.emit("nnvm.gather", xp, gather, axis=2), axis=3, keepdims=False
    )
    ih, iw = np.clip(rows - top, 0, h - 1), np.clip(cols - left, 0, w - 1)
    flat = (iw * h + ih) if storage_order else (ih * w + iw)
    table = ctx.known(flat.reshape(-1).astype(np.int64), tag="tap_index")
    base = ctx.known((np.arange(oh * ow) * taps).astype(np.int64), tag="window_base")
    index = ctx.emit("nnvm.gather", table, ctx.emit("nnvm.add", best, base), axis=0)
    offsets = ctx.known((np.arange(n * c) * h * w).reshape(n, c, 1).astype(np.int64), tag="plane")
    index = ctx.emit("nnvm.add", index, offsets)
    return ctx.emit("nnvm.reshape", index, shape=[n, c, oh, ow])


def _pool3d(
    ctx: NodeContext,
    op: str,
    x: Value,
    kernel: list[int],
    strides: list[int],
    dil: list[int],
    pads: list[int],
    props: dict[str, bool],
) -> Value:
    """3-D pooling as 2-D pooling over (H, W) and a 2-D pooling over (D, H*W'): both window
    reductions (max, or sum with per-position counts) are separable across axes."""
    if op == "nnvm.avg_pool2d":
        # The average's divisor is not separable in general (count_include_pad = 0 with pads
        # in two directions); it is a product of per-axis counts, so compute it that way.
        return _avg_pool3d(ctx, x, kernel, strides, dil, pads, props)
    return _separable_pool3d(ctx, op, x, kernel, strides, dil, pads, props)


def _separable_pool3d(
    ctx: NodeContext,
    op: str,
    x: Value,
    kernel: list[int],
    strides: list[int],
    dil: list[int],
    pads: list[int],
    props: dict[str, bool],
) -> Value:
    """The two 2-D pools of a 3-D pool: over (H, W), then over (D, H*W')."""
    n, c, d, h, w = ctx.shape(x)
    hw = ctx.emit("nnvm.reshape", x, shape=[n, c * d, h, w])
    hw = ctx.emit(
        op,
        hw,
        pool_size=kernel[1:],
        strides=strides[1:],
        padding=[pads[1], pads[2], pads[4], pads[5]],
        dilation=dil[1:],
        **props,
    )
    _, _, oh, ow = ctx.shape(hw)
    dz = ctx.emit("nnvm.reshape", hw, shape=[n, c, d, oh * ow])
    dz = ctx.emit(
        op,
        dz,
        pool_size=[kernel[0], 1],
        strides=[strides[0], 1],
        padding=[pads[0], 0, pads[3], 0],
        dilation=[dil[0], 1],
        **props,
    )
    od = ctx.shape(dz)[2]
    return ctx.emit("nnvm.reshape", dz, shape=[n, c, od, oh, ow])


def _avg_pool3d(
    ctx: NodeContext,
    x: Value,
    kernel: list[int],
    strides: list[int],
    dil: list[int],
    pads: list[int],
    props: dict[str, bool],
) -> Value:
    """Window sums by separable 2-D average pools that count the padding (avg * window size),
    divided by a divisor computed at import (it depends on shapes only)."""
    _, _, d, h, w = ctx.shape(x)
    counting = {"ceil_mode": props["ceil_mode"], "count_include_pad": True}
    y = _separable_pool3d(ctx, "nnvm.avg_pool2d", x, kernel, strides, dil, pads, counting)
    _, _, od, oh, ow = ctx.shape(y)
    # y is sum / (count the 2-D pools divided by); rescale by (that count / the wanted count).
    ratio = np.ones((od, oh, ow))
    for axis, (size, out) in enumerate(zip((d, h, w), (od, oh, ow), strict=True)):
        counted, wanted = _window_counts(
            size,
            out,
            kernel[axis],
            strides[axis],
            dil[axis],
            pads[axis],
            pads[axis + 3],
            props["count_include_pad"],
        )
        shape = [1, 1, 1]
        shape[axis] = out
        ratio = ratio * (counted / wanted).reshape(shape)
    dtype = ctx.dtype(x)
    return ctx.emit("nnvm.mul", y, ctx.known(ratio.astype(dtype), tag="avg_divisor"))


def _window_counts(
    size: int, out: int, k: int, s: int, dil: int, lo: int, hi: int, include_pad: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per output position along one axis: the divisor a count-the-padding 2-D pool used (taps
    inside [-lo, size + hi), i.e. data plus explicit padding) and the one ONNX wants."""
    counted = np.zeros(out)
    wanted = np.zeros(out)
    for o in range(out):
        taps = o * s - lo + dil * np.arange(k)
        counted[o] = np.count_nonzero(taps < size + hi)
        wanted[o] = counted[o] if include_pad else np.count_nonzero((taps >= 0) & (taps < size))
    return counted, np.maximum(wanted, 1)


@converter(
    "MaxPool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "dilations",
        "kernel_shape",
        "pads",
        "storage_order",
        "strides",
    ),
)
def _max_pool(ctx: NodeContext) -> list[Value | None]:
    return _pool(ctx, "nnvm.max_pool2d")


@converter(
    "AveragePool",
    attrs=(
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "dilations",
        "kernel_shape",
        "pads",
        "strides",
    ),
)
def _avg_pool(ctx: NodeContext) -> list[Value | None]:
    return _pool(ctx, "nnvm.avg_pool2d")


@converter("GlobalAveragePool")
def _global_avg_pool(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    if ctx.rank(x) == 4:
        return [ctx.emit("nnvm.global_avg_pool2d", x)]
    return [ctx.emit("nnvm.mean", x, axes=list(range(2, ctx.rank(x))), keepdims=True)]


@converter("GlobalMaxPool")
def _global_max_pool(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    if ctx.rank(x) == 4:
        return [ctx.emit("nnvm.global_max_pool2d", x)]
    return [ctx.emit("nnvm.max", x, axes=list(range(2, ctx.rank(x))), keepdims=True)]


# -- normalizations ------------------------------------------------------------------------------


@converter(
    "BatchNormalization",
    attrs=("epsilon", "momentum", "spatial", "is_test", "consumed_inputs", "training_mode"),
)
def _batch_norm(ctx: NodeContext) -> list[Value | None]:
    x = ctx.required(0)
    gamma, beta, mean, var = (ctx.required(k) for k in range(1, 5))
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.opset < 9 and not ctx.attr("spatial", 1):
        raise Unsupported("spatial=0 (per-activation statistics) not supported")
    training = ctx.flag("training_mode", 0) if ctx.opset >= 14 else False
    if not training:
        y = ctx.emit("nnvm.batch_norm", x, gamma, beta, mean, var, axis=1, epsilon=eps)
        extra: list[Value | None] = [mean, var] if ctx.opset < 14 else []
        return [y, *extra][: max(ctx.num_outputs, 1)]
    # Training mode: normalize with the batch's statistics and update the running ones.
    axes = [a for a in range(ctx.rank(x)) if a != 1]
    batch_mean = ctx.emit("nnvm.mean", x, axes=axes, keepdims=False)
    centered = ctx.emit("nnvm.sub", x, ctx.emit("nnvm.mean", x, axes=axes, keepdims=True))
    batch_var = ctx.emit(
        "nnvm.mean", ctx.emit("nnvm.mul", centered, centered), axes=axes, keepdims=False
    )
    y = ctx.emit("nnvm.batch_norm", x, gamma, beta, batch_mean, batch_var, axis=1, epsilon=eps)
    momentum = float(ctx.attr("momentum", 0.9))

    def running(old: Value, new: Value) -> Value:
        kept = ctx.emit("nnvm.mul", old, ctx.scalar(momentum, old))
        return ctx.emit("nnvm.add", kept, ctx.emit("nnvm.mul", new, ctx.scalar(1 - momentum, new)))

    return [y, running(mean, batch_mean), running(var, batch_var)]


@converter("InstanceNormalization", attrs=("epsilon",))
def _instance_norm(ctx: NodeContext) -> list[Value | None]:
    x, g, b = ctx.required(0), ctx.required(1), ctx.required(2)
    return [ctx.emit("nnvm.instance_norm", x, g, b, epsilon=float(ctx.attr("epsilon", 1e-5)))]


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"), since=17)
def _layer_norm(ctx: NodeContext) -> list[Value | None]:
    x, g, b = ctx.required(0), ctx.required(1), ctx.input(2)
    rank = ctx.rank(x)
    axis = int(ctx.attr("axis", -1))
    axis = axis + rank if axis < 0 else axis
    eps = float(ctx.attr("epsilon", 1e-5))
    if b is None:
        b = ctx.known(np.zeros(ctx.shape(g), dtype=ctx.dtype(g)), tag="zero_bias")
    y = ctx.emit("nnvm.layer_norm", x, g, b, axis=axis, epsilon=eps)
    outs: list[Value | None] = [y]
    if ctx.num_outputs > 1:
        stash = np.float32 if int(ctx.attr("stash_type", 1)) == 1 else ctx.dtype(x)
        xs = x if ctx.dtype(x) == stash else ctx.emit("nnvm.cast", x, to=np.dtype(stash).name)
        axes = list(range(axis, rank))
        mean = ctx.emit("nnvm.mean", xs, axes=axes, keepdims=True)
        centered = ctx.emit("nnvm.sub", xs, mean)
        var = ctx.emit(
            "nnvm.mean", ctx.emit("nnvm.mul", centered, centered), axes=axes, keepdims=True
        )
        inv_std = ctx.emit("nnvm.rsqrt", ctx.emit("nnvm.add", var, ctx.scalar(eps, var)))
        outs += [mean, inv_std]
    return outs


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def _lrn(ctx: NodeContext) -> list[Value | None]:
    size = ctx.attr("size")
    if size is None:
        raise Unsupported("the size attribute is required")
    return [
        ctx.emit(
            "nnvm.lrn",
            ctx.required(0),
            size=int(size),
            alpha=float(ctx.attr("alpha", 1e-4)),
            beta=float(ctx.attr("beta", 0.75)),
            bias=float(ctx.attr("bias", 1.0)),
        )
    ]


@converter("PRelu", attrs=("consumed_inputs",))
def _prelu(ctx: NodeContext) -> list[Value | None]:
    x, slope = ctx.required(0), ctx.required(1)
    xs, ss = ctx.shape(x), ctx.shape(slope)
    if ctx.opset < 7 and len(ss) == 1 and len(xs) > 2 and ss[0] == xs[1] and ss[0] != xs[-1]:
        # Before opset 7 a 1-D slope is per channel.
        slope = ctx.emit("nnvm.reshape", slope, shape=[ss[0]] + [1] * (len(xs) - 2))
    return [ctx.emit("nnvm.prelu", x, slope)]


def _softmax(ctx: NodeContext, op: str) -> list[Value | None]:
    """Opset >= 13: along one axis. Before: over the flattened axes [axis, rank)."""
    x = ctx.required(0)
    rank = ctx.rank(x)
    if ctx.opset >= 13:
        return [ctx.emit(op, x, axis=int(ctx.attr("axis", -1)))]
    axis = int(ctx.attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        return [ctx.emit(op, x, axis=-1)]
    shape = ctx.shape(x)
    flat = ctx.emit("nnvm.reshape", x, shape=[math.prod(shape[:axis]), math.prod(shape[axis:])])
    return [ctx.emit("nnvm.reshape", ctx.emit(op, flat, axis=1), shape=list(shape))]


@converter("Softmax", attrs=("axis",))
def _softmax_conv(ctx: NodeContext) -> list[Value | None]:
    return _softmax(ctx, "nnvm.softmax")


@converter("LogSoftmax", attrs=("axis",))
def _log_softmax(ctx: NodeContext) -> list[Value | None]:
    return _softmax(ctx, "nnvm.log_softmax")


# -- recurrent -----------------------------------------------------------------------------------

_RNN_ATTRS = (
    "activation_alpha",
    "activation_beta",
    "activations",
    "clip",
    "direction",
    "hidden_size",
    "layout",
)


def _recurrent(ctx: NodeContext, op: str, gates: int, activations: list[str]) -> list[Value | None]:
    """LSTM / GRU: the graph ops take every operand, so absent ones become zeros here."""
    x, w, r = ctx.required(0), ctx.required(1), ctx.required(2)
    direction = ctx.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    acts = ctx.attr("activations")
    if acts and [a.lower() for a in acts] != [a.lower() for a in activations * dirs]:
        raise Unsupported(f"activations {list(acts)} not supported (only {', '.join(activations)})")
    hidden = ctx.attr("hidden_size")
    if hidden is None or int(hidden) != ctx.shape(r)[-1]:
        # onnxruntime refuses a missing one too; R's last dim is the hidden size it must equal
        raise ImportShapeError(
            f"hidden_size {hidden} must be given and equal R's last dim ({ctx.shape(r)[-1]})"
        )
    hidden = int(hidden)
    layout = int(ctx.attr("layout", 0))
    xs = ctx.shape(x)
    seq, batch = (xs[1], xs[0]) if layout else (xs[0], xs[1])
    if ctx.input(4) is not None:
        lens = ctx.const(4, "sequence_lens")
        if lens is None or not np.all(np.asarray(lens) == seq):
            raise Unsupported("sequence_lens shorter than the sequence are not supported")
    dtype = ctx.dtype(x)

    def operand(k: int, shape: list[int], tag: str) -> Value:
        v = ctx.input(k)
        return v if v is not None else ctx.known(np.zeros(shape, dtype=dtype), tag=tag)

    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    operands = [x, w, r, operand(3, [dirs, 2 * gates * hidden], "bias"), operand(5, state, "h0")]
    props: dict[str, object] = {"hidden_size": hidden, "direction": direction, "layout": layout}
    if op == "nnvm.lstm":
        operands += [operand(6, state, "c0"), operand(7, [dirs, 3 * hidden], "peepholes")]
        props["input_forget"] = ctx.flag("input_forget", 0)
    else:
        props["linear_before_reset"] = ctx.flag("linear_before_reset", 0)
    clip = ctx.attr("clip")
    if clip is not None:
        props["clip"] = float(clip)
    return list(ctx.emit_multi(op, *operands, **props))


@converter("LSTM", attrs=(*_RNN_ATTRS, "input_forget"))
def _lstm(ctx: NodeContext) -> list[Value | None]:
    return _recurrent(ctx, "nnvm.lstm", 4, ["Sigmoid", "Tanh", "Tanh"])


@converter("GRU", attrs=(*_RNN_ATTRS, "linear_before_reset"))
def _gru(ctx: NodeContext) -> list[Value | None]:
    return _recurrent(ctx, "nnvm.gru", 3, ["Sigmoid", "Tanh"])


_RNN_ACTIVATIONS = {"tanh": "nnvm.tanh", "relu": "nnvm.relu", "sigmoid": "nnvm.sigmoid"}


@converter("RNN", attrs=_RNN_ATTRS)
def _rnn(ctx: NodeContext) -> list[Value | None]:
    """The simple recurrence h_t = f(x_t W^T + h_{t-1} R^T + Wb + Rb), unrolled over the static
    sequence length into matmuls and activations (its cost is the matmuls; the graph ops of
    LSTM and GRU exist for their gate fusion, which RNN does not have)."""
    x, w, r = ctx.required(0), ctx.required(1), ctx.required(2)
    direction = ctx.attr("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    acts = [str(a).lower() for a in (ctx.attr("activations") or ["Tanh"] * dirs)]
    acts = acts[:dirs]  # the schema's default lists two, whatever the direction
    if len(acts) != dirs or any(a not in _RNN_ACTIVATIONS for a in acts):
        raise Unsupported(f"activations {acts} not supported (tanh, relu, sigmoid)")
    if ctx.attr("clip") is not None:
        raise Unsupported("clip is not supported on RNN")
    hidden = int(ctx.shape(r)[-1])
    if ctx.attr("hidden_size") is not None and int(ctx.attr("hidden_size")) != hidden:
        raise ImportShapeError(f"hidden_size must equal R's last dim ({hidden})")
    layout = int(ctx.attr("layout", 0))
    if layout:
        x = ctx.emit("nnvm.transpose", x, perm=[1, 0, 2])
    seq, batch, _ = ctx.shape(x)
    if ctx.input(4) is not None:
        lens = ctx.const(4, "sequence_lens")
        if lens is None or not np.all(np.asarray(lens) == seq):
            raise Unsupported("sequence_lens shorter than the sequence are not supported")
    h0 = ctx.input(5)
    if h0 is not None and layout:
        h0 = ctx.emit("nnvm.transpose", h0, perm=[1, 0, 2])

    def pick(v: Value, d: int) -> Value:
        piece = ctx.emit("nnvm.slice", v, starts=[d], ends=[d + 1], axes=[0], steps=[1])
        return ctx.emit("nnvm.reshape", piece, shape=list(ctx.shape(v)[1:]))

    ys, finals = [], []
    for d in range(dirs):
        wd = ctx.emit("nnvm.transpose", pick(w, d), perm=[1, 0])
        rd = ctx.emit("nnvm.transpose", pick(r, d), perm=[1, 0])
        bias = None
        if ctx.input(3) is not None:
            bd = pick(ctx.required(3), d)
            wb = ctx.emit("nnvm.slice", bd, starts=[0], ends=[hidden], axes=[0], steps=[1])
            rb = ctx.emit("nnvm.slice", bd, starts=[hidden], ends=[2 * hidden], axes=[0], steps=[1])
            bias = ctx.emit("nnvm.add", wb, rb)
        # the input projection of every step at once: one [seq * batch, input] matmul
        flat = ctx.emit("nnvm.reshape", x, shape=[seq * batch, ctx.shape(x)[2]])
        gx = ctx.emit("nnvm.matmul", flat, wd)
        if bias is not None:
            gx = ctx.emit("nnvm.add", gx, bias)
        gx = ctx.emit("nnvm.reshape", gx, shape=[seq, batch, hidden])
        h = pick(h0, d) if h0 is not None else None
        steps = range(seq - 1, -1, -1) if direction == "reverse" or d == 1 else range(seq)
        outs: dict[int, Value] = {}
        for t in steps:
            pre = pick(gx, t)
            if h is not None:
                pre = ctx.emit("nnvm.add", pre, ctx.emit("nnvm.matmul", h, rd))
            h = ctx.emit(_RNN_ACTIVATIONS[acts[d]], pre)
            outs[t] = h
        assert h is not None
        finals.append(ctx.emit("nnvm.expand_dims", h, axes=[0]))
        rows = [ctx.emit("nnvm.expand_dims", outs[t], axes=[0, 1]) for t in range(seq)]
        ys.append(rows[0] if seq == 1 else ctx.emit("nnvm.concat", *rows, axis=0))
    y = ys[0] if dirs == 1 else ctx.emit("nnvm.concat", *ys, axis=1)  # [seq, dirs, batch, H]
    y_h = finals[0] if dirs == 1 else ctx.emit("nnvm.concat", *finals, axis=0)
    if layout:
        y = ctx.emit("nnvm.transpose", y, perm=[2, 0, 1, 3])
        y_h = ctx.emit("nnvm.transpose", y_h, perm=[1, 0, 2])
    return [y, y_h]


@converter(
    "LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides")
)
def _lp_pool(ctx: NodeContext) -> list[Value | None]:
    """(sum over the window of |x|^p)^(1/p): an average pool of |x|^p (padding not counted)
    times the number of data taps of each window (a table built at import)."""
    x = ctx.required(0)
    p = float(ctx.attr("p", 2))
    if p <= 0:
        raise Unsupported(f"p must be positive, got {p}")
    mag = ctx.emit("nnvm.abs", x)
    powered = (
        ctx.emit("nnvm.mul", mag, mag) if p == 2 else ctx.emit("nnvm.pow", mag, ctx.scalar(p, mag))
    )
    pooled = copy.copy(ctx)
    pooled.inputs = [powered]
    pooled.attrs = {**ctx.attrs, "count_include_pad": 0}
    (avg,) = _pool(pooled, "nnvm.avg_pool2d")
    assert avg is not None
    spatial = ctx.rank(x) - 2
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides = [int(s) for s in ctx.attr("strides") or [1] * spatial]
    dil = [int(d) for d in ctx.attr("dilations") or [1] * spatial]
    pads = window_pads(ctx, ctx.shape(x)[2:], kernel, strides, dil)
    outs = ctx.shape(avg)[2:]
    taps = np.ones(outs)
    for axis in range(spatial):
        _, inside = _window_counts(
            ctx.shape(x)[2 + axis], outs[axis], kernel[axis], strides[axis], dil[axis],
            pads[axis], pads[axis + spatial], False,
        )  # fmt: skip
        shape = [1] * spatial
        shape[axis] = outs[axis]
        taps = taps * inside.reshape(shape)
    total = ctx.emit("nnvm.mul", avg, ctx.known(taps.astype(ctx.dtype(x)), tag="window_taps"))
    if p == 2:
        return [ctx.emit("nnvm.sqrt", total)]
    return [ctx.emit("nnvm.pow", total, ctx.scalar(1 / p, total))]
