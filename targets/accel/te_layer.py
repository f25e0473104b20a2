"""An offloaded layer as a te kernel, the accelerator's GEMM tensor intrinsic, and the default
schedule that places the kernel on the accelerator's buffers.

The kernel works on the blocked layouts of the layer's DRAM image (conv2d_program.REGIONS):

    arg0  inp      [N/b, I/bi, H, W, b, bi]      i8
    arg1  wgt      [O/bo, I/bi, KH, KW, bo, bi]  i8
    arg2  requant  [O/bo, 2, b, bo]              i32   (bias + rounding, shift) per channel
    inp.pad        arg0 zero-padded in H and W
    conv[n, ob, y, x, bn, bo] = sum_{ib, ky, kx, bi} i32(inp.pad[n, ib, y*s+ky, x*s+kx, bn, bi])
                                                    * i32(wgt[ob, ib, ky, kx, bo, bi])
    res            clip((conv + bias) >> shift, lo, 127)
    out            i8(res)

The schedule (`layer_schedule`) is ordinary te schedule IR, printable and editable: the output
split into tiles, `conv` in the acc scope computed per tile with its input-channel blocks split
so the inp and wgt copies (`te.cache_read ... scope "inp" | "wgt"`) are computed per step,
the bias and shift copied into acc, `res` inlined into `out` (its ops become ALU instructions
in place, `out`'s cast the STORE), the 1 x bo x bi block tensorized with `gemm`, and, for two
virtual threads, every on-chip stage double-buffered. lower_te.py turns it into instructions."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType, i8, i32
from xdsl.ir import Block

from nnvm.dialects.te import builder as te
from nnvm.dialects.te import topi
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef
from nnvm.dialects.te.intrinsics import NoMatch, TensorIntrinsic
from nnvm.dialects.te.schedule import (
    CacheReadOp,
    ComputeAtOp,
    ComputeInlineOp,
    DoubleBufferOp,
    Primitive,
    ReorderOp,
    ScheduleOp,
    SetScopeOp,
    SplitOp,
    TensorizeOp,
)
from nnvm.support.config_space import ConfigSpace
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.dialect import i64_array
from nnvm.targets.accel.packing import blocks
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling, choose_tiling

GEOMETRY = "accel.geometry"
"""The layer kernel's attribute holding its Conv2dLayer fields (what its schedule is made for)."""

GEMM = "gemm"

REQUANT_ROWS = 2
"""requant[ob, 0] is the bias (rounding folded in), requant[ob, 1] the shift."""


def gemm_intrinsic(cfg: AccelConfig) -> TensorIntrinsic:
    """The GEMM core's block: acc[b, o] += sum_i i32(inp[b, i]) * i32(wgt[o, i]), one inp
    entry (b x bi), one wgt entry (bo x bi) and one acc entry (b x bo) per micro-op."""

    def formula(b: Expr, o: Expr, i: Expr, x: TensorRef, w: TensorRef) -> Expr:
        return te.cast(x[b, i], i32) * te.cast(w[o, i], i32)

    def emit(*_: object) -> None:
        raise NoMatch("the accelerator's gemm is lowered by lower-te-to-accel, not to CPU loops")

    return TensorIntrinsic(
        GEMM,
        (
            TensorType(i8, [cfg.batch, cfg.block_in]),
            TensorType(i8, [cfg.block_out, cfg.block_in]),
        ),
        formula,
        (cfg.batch, cfg.block_out),
        (cfg.block_in,),
        emit,
    )


def layer_types(cfg: AccelConfig, layer: Conv2dLayer) -> tuple[list[TensorType], TensorType]:
    """(input types, output type) of the layer's kernel, in the DRAM image's layouts."""
    L = layer
    nb = blocks(L.batch, cfg.batch)
    ib, ob = blocks(L.in_channels, cfg.block_in), blocks(L.out_channels, cfg.block_out)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    ins = [
        TensorType(i8, [nb, ib, L.height, L.width, b, bi]),
        TensorType(i8, [ob, ib, L.kernel_h, L.kernel_w, bo, bi]),
        TensorType(i32, [ob, REQUANT_ROWS, b, bo]),
    ]
    return ins, TensorType(i8, [nb, ob, L.out_height, L.out_width, b, bo])


def layer_kernel(
    cfg: AccelConfig, layer: Conv2dLayer, relu: bool = False, shift: int | None = None
) -> func.FuncOp:
    """`func.func @layer` computing the layer in te: clip((conv + bias) >> shift) with the
    shift one immediate for every channel, or (None) read per channel from requant."""
    L = layer
    ins, out_t = layer_types(cfg, layer)
    block = Block(arg_types=ins)
    b = KernelBuilder(block)
    x, w, rq = (TensorRef(a) for a in block.args)
    s, p = L.stride, L.padding
    grid = out_t.get_shape()
    hi_h, hi_w = pad_after(layer)
    xp = topi.pad(b, x, [0, 0, p, p, 0, 0], [0, 0, hi_h, hi_w, 0, 0], name="inp.pad")

    def product(n, ob, y, xx, bn, bo, ib, ky, kx, bi):  # noqa: ANN001, ANN202
        return te.cast(xp[n, ib, y * s + ky, xx * s + kx, bn, bi], i32) * te.cast(
            w[ob, ib, ky, kx, bo, bi], i32
        )

    conv = b.reduce(
        grid,
        "sum",
        [ins[0].get_shape()[1], L.kernel_h, L.kernel_w, cfg.block_in],
        product,
        axes=["n", "ob", "y", "x", "bn", "bo"],
        reduce_axes=["ib", "ky", "kx", "bi"],
        name="conv",
        template="accel.conv2d",
    )

    def requantize(n, ob, y, xx, bn, bo):  # noqa: ANN001, ANN202
        v = conv[n, ob, y, xx, bn, bo] + rq[ob, 0, bn, bo]
        if shift is None:
            v = te.binary("shr", v, rq[ob, 1, bn, bo])
        elif shift:
            v = te.binary("shr", v, shift)
        return te.minimum(te.maximum(v, 0 if relu else -128), 127)

    axes = ["n", "ob", "y", "x", "bn", "bo"]
    res = b.compute(grid, requantize, axes=axes, name="res")
    out = b.compute(grid, lambda *i: te.cast(res[list(i)], i8), axes=axes, name="out")
    block.add_op(func.ReturnOp(out.value))
    fn = func.FuncOp("layer", (ins, [out_t]), region=_region(block))
    fn.attributes[GEOMETRY] = i64_array(
        [L.batch, L.in_channels, L.height, L.width, L.out_channels, L.kernel_h, L.kernel_w]
        + [L.stride, L.padding]
    )
    return fn


def layer_of_kernel(fn: func.FuncOp) -> Conv2dLayer | None:
    """The layer a kernel of `layer_kernel` computes (None: not one)."""
    attr = fn.attributes.get(GEOMETRY)
    if attr is None:
        return None
    return Conv2dLayer(*(int(v) for v in attr.get_values()))  # type: ignore[attr-defined]


def _sizes(n: int) -> list[int]:
    """Tile sizes to try along an axis of n: its divisors and the powers of two below it."""
    out = {d for d in range(1, n + 1) if n % d == 0}
    out |= {1 << k for k in range(n.bit_length()) if (1 << k) <= n}
    return sorted(out)


def tiling_knobs(
    cfg: AccelConfig, layer: Conv2dLayer, space: ConfigSpace, virtual_threads: int = 2
) -> tuple[Tiling, int]:
    """The tiling and virtual threads a tuner picks (the knobs), by default tiling.py's
    estimate for the target's virtual threads."""
    vt = int(space.knob("virtual_threads", (1, 2), virtual_threads))  # type: ignore[arg-type]
    d = choose_tiling(cfg, layer, vt)
    ob, ib = blocks(layer.out_channels, cfg.block_out), blocks(layer.in_channels, cfg.block_in)
    t = Tiling(
        int(space.knob("tile_out_blocks", _sizes(ob), d.tob)),  # type: ignore[arg-type]
        int(space.knob("tile_in_blocks", _sizes(ib), d.tib)),  # type: ignore[arg-type]
        int(space.knob("tile_rows", _sizes(layer.out_height), d.toh)),  # type: ignore[arg-type]
        int(space.knob("tile_cols", _sizes(layer.out_width), d.tow)),  # type: ignore[arg-type]
        str(space.knob("order", ("weights", "inputs"), d.order)),
    )
    return t, vt


def pad_after(layer: Conv2dLayer) -> tuple[int, int]:
    """Rows and columns the padded image needs past the image (it covers every one the conv
    reads)."""
    L = layer
    return (
        max(0, (L.out_height - 1) * L.stride + L.kernel_h - L.height - L.padding),
        max(0, (L.out_width - 1) * L.stride + L.kernel_w - L.width - L.padding),
    )


def is_padded(layer: Conv2dLayer) -> bool:
    return layer.padding > 0 or any(pad_after(layer))


def _region(block: Block):  # noqa: ANN202
    from xdsl.ir import Region

    return Region(block)


def layer_schedule(
    tiling: Tiling, virtual_threads: int = 1, padded: bool = True
) -> list[Primitive]:
    """The default accelerator schedule for a tiling (tiling.py's choice): te primitives.
    `padded`: the kernel has the stage inp.pad (a layer with padding)."""
    t = tiling
    out_tile = ["ob.o", "y.o", "x.o"] if t.order == "weights" else ["y.o", "x.o", "ob.o"]
    prims: list[Primitive] = [
        SplitOp.make("out", "ob", factor=t.tob),
        SplitOp.make("out", "y", factor=t.toh),
        SplitOp.make("out", "x", factor=t.tow),
        ReorderOp.make("out", ["n", *out_tile, "ob.i", "y.i", "x.i", "bn", "bo"]),
        SetScopeOp.make("conv", "acc"),
        ComputeAtOp.make("conv", "out", out_tile[-1]),
        CacheReadOp.make("arg2", ["res"], "requant.acc", scope="acc"),
        ComputeAtOp.make("requant.acc", "out", out_tile[-1]),
        ComputeInlineOp.make("res"),
        CacheReadOp.make("inp.pad" if padded else "arg0", ["conv"], "inp.local", scope="inp"),
        *([ComputeInlineOp.make("inp.pad")] if padded else []),
        CacheReadOp.make("arg1", ["conv"], "wgt.local", scope="wgt"),
        SplitOp.make("conv", "ib", factor=t.tib),
        ReorderOp.make("conv", ["ib.o", "n", "ob", "y", "x", "ib.i", "ky", "kx", "bn", "bo", "bi"]),
        ComputeAtOp.make("inp.local", "conv", "ib.o"),
        ComputeAtOp.make("wgt.local", "conv", "ib.o"),
        TensorizeOp.make("conv", "bn", GEMM),
    ]
    if virtual_threads == 2:
        prims += [DoubleBufferOp.make(s) for s in ("inp.local", "wgt.local", "conv", "requant.acc")]
    return prims


def scheduled_kernel(
    cfg: AccelConfig,
    layer: Conv2dLayer,
    tiling: Tiling,
    virtual_threads: int = 1,
    relu: bool = False,
    shift: int | None = None,
) -> func.FuncOp:
    """The layer's kernel with its default schedule attached (before the return)."""
    fn = layer_kernel(cfg, layer, relu, shift)
    ret = fn.body.block.last_op
    assert ret is not None
    fn.body.block.insert_op_before(
        ScheduleOp(layer_schedule(tiling, virtual_threads, is_padded(layer))), ret
    )
    return fn
