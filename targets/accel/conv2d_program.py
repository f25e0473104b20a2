"""The layer code generator: an int8 conv2d (or dense) with bias, shift-right requantization and
clip as accel instructions and micro-ops over a DRAM image holding the packed operands.

Per tile: LOAD inp (zero padding from the pad fields) and wgt on the load module; on compute a
GEMM reset, one GEMM per input-channel step, then ALU add-bias, shr (by an immediate or by
per-channel shift entries), max, min; STORE out. With `virtual_threads=2` inp, wgt and acc are
split into two slots used alternately, and the tokens let step k+1 load while step k computes
and tile t store while tile t+1 computes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.isa import (
    AluInsn,
    AluOp,
    Buffer,
    FinishInsn,
    GemmInsn,
    Insn,
    MemInsn,
    Uop,
    encode_uops,
)
from nnvm.targets.accel.packing import blocks, pack_bias, pack_data, pack_weights, unpack_output
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling, choose_tiling, footprint

_ALIGN = 4096


REGIONS = ("uop", "inp", "wgt", "requant", "out")
"""The DRAM image of one layer, in order: micro-ops, packed data, packed weights, (bias, shift)
acc entries per output block, the blocked output."""


@dataclass(frozen=True)
class Region:
    offset: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


@dataclass
class LayerPlan:
    """A layer's program before any data: instructions and micro-ops, and where each operand
    lives in the DRAM image they address. `pack` fills an image from the NCHW operands;
    `output` reads the result back out of one the program ran on."""

    cfg: AccelConfig
    layer: Conv2dLayer
    tiling: Tiling | None
    """None for a program from a schedule that is not described by one tiling (a tuner's)."""
    virtual_threads: int
    insns: list[Insn]
    uops: list[Uop]
    regions: dict[str, Region]
    dram_bytes: int

    @property
    def dram_layout(self) -> list[int]:
        return dram_layout(self.regions, self.dram_bytes)

    def view(self, dram: np.ndarray, name: str) -> np.ndarray:
        r = self.regions[name]
        return dram[r.offset : r.offset + r.nbytes].view(r.dtype).reshape(r.shape)

    def pack(
        self, x: np.ndarray, w: np.ndarray, bias: np.ndarray, shifts: np.ndarray
    ) -> np.ndarray:
        """The DRAM image for int8 NCHW `x`, OIHW `w`, and per-output-channel int32 `bias` and
        `shifts` (the shifts are read only by a plan with per-channel shifts)."""
        cfg = self.cfg
        dram = np.zeros(self.dram_bytes, np.uint8)
        self.view(dram, "uop")[...] = encode_uops(self.uops)
        self.view(dram, "inp")[...] = pack_data(cfg, x)
        self.view(dram, "wgt")[...] = pack_weights(cfg, w)
        self.view(dram, "requant")[...] = np.stack(
            [pack_bias(cfg, bias), pack_bias(cfg, shifts)], axis=1
        )
        return dram

    def output(self, dram: np.ndarray) -> np.ndarray:
        """The int8 (N, O, OH, OW) result in an image the program ran on."""
        return unpack_output(
            self.cfg, self.view(dram, "out"), self.layer.batch, self.layer.out_channels
        )


@dataclass
class LayerProgram:
    """Instructions + the DRAM image they run on; `output()` reads the result back."""

    plan: LayerPlan
    dram: np.ndarray

    @property
    def insns(self) -> list[Insn]:
        return self.plan.insns

    @property
    def tiling(self) -> Tiling:
        return self.plan.tiling

    def region(self, name: str) -> np.ndarray:
        return self.plan.view(self.dram, name)

    def output(self) -> np.ndarray:
        """The int8 (N, O, OH, OW) result, after the program ran on `dram`."""
        return self.plan.output(self.dram)


def layer_regions(
    cfg: AccelConfig, layer: Conv2dLayer, n_uops: int
) -> tuple[dict[str, Region], int]:
    """Each region's place in the image (page-aligned, in REGIONS order) and the image's size."""
    L = layer
    nb = blocks(L.batch, cfg.batch)
    ib, ob = blocks(L.in_channels, cfg.block_in), blocks(L.out_channels, cfg.block_out)
    shapes = {
        "uop": ((n_uops,), "<u4"),
        "inp": ((nb, ib, L.height, L.width, cfg.batch, cfg.block_in), "i1"),
        "wgt": ((ob, ib, L.kernel_h, L.kernel_w, cfg.block_out, cfg.block_in), "i1"),
        "requant": ((ob, 2, cfg.batch, cfg.block_out), "<i4"),
        "out": ((nb, ob, L.out_height, L.out_width, cfg.batch, cfg.block_out), "i1"),
    }
    regions, size = {}, 0
    for name in REGIONS:
        shape, dtype = shapes[name]
        regions[name] = Region(size, shape, dtype)
        size += -(-regions[name].nbytes // _ALIGN) * _ALIGN
    return regions, size


def dram_layout(regions: dict[str, Region], size: int) -> list[int]:
    """The regions' byte offsets in REGIONS order, then the image's size: what an accel.layer
    and a kernel blob record of the image."""
    return [*(regions[r].offset for r in REGIONS), size]


def recorded_regions(
    cfg: AccelConfig, layer: Conv2dLayer, n_uops: int, recorded: list[int]
) -> tuple[dict[str, Region], int]:
    """The layer's regions and image size, checked against a recorded `dram_layout`; UserError
    when they differ (a damaged or edited program)."""
    regions, size = layer_regions(cfg, layer, n_uops)
    want = dram_layout(regions, size)
    if recorded != want:
        raise UserError(f"DRAM layout {recorded} does not match the layer's {want}")
    return regions, size


def check_layer(layer: Conv2dLayer, virtual_threads: int = 1) -> None:
    """UserError for a layer the GEMM core does not take (or virtual threads it has not)."""
    if virtual_threads not in (1, 2):
        raise UserError(f"virtual_threads is 1 or 2, got {virtual_threads!r}")
    if layer.groups != 1:
        raise UserError(
            f"{layer} has groups={layer.groups}: grouped and depthwise conv2d stay on the CPU "
            "(the GEMM core reduces over whole input-channel blocks)"
        )
    if not 0 <= layer.padding <= 15:
        raise UserError(f"{layer}: padding {layer.padding} exceeds the LOAD pad fields (0..15)")
    if layer.stride < 1 or layer.out_height < 1 or layer.out_width < 1:
        raise UserError(f"{layer}: the output is empty")


def refusal(cfg: AccelConfig, layer: Conv2dLayer, virtual_threads: int = 1) -> str | None:
    """None when the accelerator takes `layer`; else why not (for placement decisions)."""
    try:
        check_layer(layer)
        choose_tiling(cfg, layer, virtual_threads)
    except UserError as err:
        return err.message
    return None


def plan_layer(
    cfg: AccelConfig,
    layer: Conv2dLayer,
    relu: bool = False,
    virtual_threads: int = 1,
    shift: int | None = None,
    tiling: Tiling | None = None,
) -> LayerPlan:
    """The program computing clip((conv2d(x, w) + bias) >> shift) for `layer`, from shapes
    alone: `shift` an immediate for every channel, or None for per-channel shifts read from
    the image's shift entries."""
    check_layer(layer, virtual_threads)
    if shift is not None and not 0 <= shift <= 31:
        raise UserError(f"requantization shifts are integers in 0..31, got {shift!r}")
    vt = virtual_threads
    t = tiling or choose_tiling(cfg, layer, vt)
    need = footprint(cfg, layer, t, vt)
    for b, n in need.items():
        if n > cfg.depth(b):
            raise UserError(
                f"{layer}: tile {t} needs {n} {b} entries, the {b} buffer holds {cfg.depth(b)}"
            )
    gen = _Generator(cfg, layer, t, vt)
    regions, size = layer_regions(cfg, layer, len(gen.uops))
    eb = {
        "uop": 4,
        "inp": cfg.entry_bytes("inp"),
        "wgt": cfg.entry_bytes("wgt"),
        "requant": cfg.entry_bytes("acc"),
        "out": cfg.entry_bytes("out"),
    }
    base = {name: r.offset // eb[name] for name, r in regions.items()}
    insns = gen.emit(base, shift, relu)
    return LayerPlan(cfg, layer, t, vt, insns, gen.uops, regions, size)


def conv2d_program(
    cfg: AccelConfig,
    layer: Conv2dLayer,
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    shift: int | np.ndarray = 0,
    relu: bool = False,
    virtual_threads: int = 1,
    tiling: Tiling | None = None,
    round_half_up: bool = False,
    planner: Callable[..., LayerPlan] | None = None,
) -> LayerProgram:
    """The program computing clip((conv2d(x, w) + bias) >> shift) on the accelerator, with its
    image; `shift` is one amount or one per output channel, and `round_half_up` adds
    2^(shift-1) first (folded into the bias): nnvm.quantize's shift requantizer. `planner`
    makes the program from shapes: te_plan.plan_layer_te (the default: the layer's te
    schedule, lowered) or plan_layer (the hand-written generator the te path is checked
    against)."""
    check_layer(layer)
    shifts = np.broadcast_to(np.asarray(shift), (layer.out_channels,))
    if shifts.dtype.kind not in "iu" or shifts.min() < 0 or shifts.max() > 31:
        raise UserError(f"requantization shifts are integers in 0..31, got {shift!r}")
    want = (layer.batch, layer.in_channels, layer.height, layer.width)
    if x.shape != want or w.shape != (
        layer.out_channels,
        layer.in_channels,
        layer.kernel_h,
        layer.kernel_w,
    ):
        raise UserError(f"{layer}: data {x.shape} / weights {w.shape} do not match the layer")
    per_channel = len(np.unique(shifts)) > 1
    if planner is None:
        from nnvm.targets.accel.te_plan import plan_layer_te as planner  # it builds on this file
    plan = planner(
        cfg, layer, relu, virtual_threads, None if per_channel else int(shifts[0]), tiling
    )
    bias = np.zeros(layer.out_channels, np.int32) if bias is None else bias
    if round_half_up:
        bias = add_rounding(bias, shifts)
    return LayerProgram(plan, plan.pack(x, w, bias, shifts))


def add_rounding(bias: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """bias + 2^(shift-1) where shift > 0, wrapping in int32 as the ALU's adds do."""
    half = np.where(shifts > 0, np.left_shift(1, np.maximum(shifts, 1) - 1), 0)
    return (bias.astype(np.int64) + half).astype(np.int32)


class _Generator:
    """Slot layout, micro-op lists and the instruction stream of one tiled layer."""

    def __init__(self, cfg: AccelConfig, layer: Conv2dLayer, t: Tiling, vt: int):
        self.cfg, self.layer, self.t, self.vt = cfg, layer, t, vt
        self.ob = blocks(layer.out_channels, cfg.block_out)
        self.ib = blocks(layer.in_channels, cfg.block_in)
        self.taps = layer.kernel_h * layer.kernel_w
        self.tih, self.tiw = t.in_rows(layer), t.in_cols(layer)
        self.inp_slot = t.tib * self.tih * self.tiw
        self.wgt_slot = t.tob * t.tib * self.taps
        self.acc_out = t.tob * t.toh * t.tow
        self.acc_slot = self.acc_out + 2 * t.tob  # the output tile, then (bias, shift) pairs
        self.uops: list[Uop] = []
        self.gemm_uops: dict[tuple[int, int], int] = {}
        self.alu_uop = [  # per acc slot: dst = the tile, src = its bias (then its shift) entries
            self._add(
                [Uop(s * self.acc_slot, s * self.acc_slot + self.acc_out + k, 0) for k in (0, 1)]
            )
            for s in range(vt)
        ]
        n_ib = self.ib // t.tib
        for k in range(len(self.tiles()) * n_ib):  # every (inp/wgt slot, acc slot) pair a step uses
            self.gemm_list(k % vt, (k // n_ib) % vt)

    def _add(self, uops: list[Uop]) -> int:
        start = len(self.uops)
        self.uops += uops
        return start

    def gemm_list(self, step_slot: int, acc_slot: int) -> int:
        """Where the uops of one GEMM over inp/wgt slot `step_slot` into acc slot live."""
        key = (step_slot, acc_slot)
        if key not in self.gemm_uops:
            t, kh, kw = self.t, self.layer.kernel_h, self.layer.kernel_w
            ua, ui, uw = (
                acc_slot * self.acc_slot,
                step_slot * self.inp_slot,
                step_slot * self.wgt_slot,
            )
            self.gemm_uops[key] = self._add(
                [
                    Uop(
                        ua + o * t.toh * t.tow,
                        ui + i * self.tih * self.tiw + y * self.tiw + x,
                        uw + (o * t.tib + i) * self.taps + y * kw + x,
                    )
                    for o in range(t.tob)
                    for i in range(t.tib)
                    for y in range(kh)
                    for x in range(kw)
                ]
            )
        return self.gemm_uops[key]

    def tiles(self) -> list[tuple[int, int, int, int]]:
        """(batch block, first output block, first output row, first output column) per tile."""
        L, t = self.layer, self.t
        nb = blocks(L.batch, self.cfg.batch)
        spatial = [
            (oh, ow) for oh in range(0, L.out_height, t.toh) for ow in range(0, L.out_width, t.tow)
        ]
        obs = range(0, self.ob, t.tob)
        if t.order == "weights":
            return [(n, o, oh, ow) for n in range(nb) for o in obs for oh, ow in spatial]
        return [(n, o, oh, ow) for n in range(nb) for oh, ow in spatial for o in obs]

    # -- one tile's instructions (tokens are set by emit) ---------------------------------------

    def loads(
        self, base, n, o, oh, ow, i, slot
    ) -> tuple[tuple, list[MemInsn], tuple, list[MemInsn]]:
        L, t = self.layer, self.t
        toh = min(t.toh, L.out_height - oh)
        y0, y1 = oh * L.stride - L.padding, (oh + toh - 1) * L.stride - L.padding + L.kernel_h
        x0, x1 = ow * L.stride - L.padding, (ow + t.tow - 1) * L.stride - L.padding + L.kernel_w
        vy0, vy1, vx0, vx1 = max(0, y0), min(L.height, y1), max(0, x0), min(L.width, x1)
        inp = [
            MemInsn(
                buffer=Buffer.INP,
                sram_base=slot * self.inp_slot + k * self.tih * self.tiw,
                dram_base=base["inp"] + ((n * self.ib + i + k) * L.height + vy0) * L.width + vx0,
                y_size=vy1 - vy0,
                x_size=vx1 - vx0,
                x_stride=L.width,
                y_pad_before=vy0 - y0,
                y_pad_after=y1 - vy1,
                x_pad_before=vx0 - x0,
                x_pad_after=x1 - vx1,
            )
            for k in range(t.tib)
        ]
        row = t.tib * self.taps
        first = base["wgt"] + (o * self.ib + i) * self.taps
        if row == self.ib * self.taps:  # whole rows: one contiguous run
            wgt = MemInsn(
                buffer=Buffer.WGT,
                sram_base=slot * self.wgt_slot,
                dram_base=first,
                y_size=1,
                x_size=t.tob * row,
                x_stride=t.tob * row,
            )
        else:
            wgt = MemInsn(
                buffer=Buffer.WGT,
                sram_base=slot * self.wgt_slot,
                dram_base=first,
                y_size=t.tob,
                x_size=row,
                x_stride=self.ib * self.taps,
            )
        return (n, i, oh, ow), inp, (o, i), [wgt]

    def stores(self, base, n, o, oh, ow, slot) -> list[MemInsn]:
        L, t = self.layer, self.t
        toh = min(t.toh, L.out_height - oh)
        out = []
        for k in range(t.tob):
            dram = base["out"] + ((n * self.ob + o + k) * L.out_height + oh) * L.out_width + ow
            sram = slot * self.acc_slot + k * t.toh * t.tow
            if t.tow == L.out_width:
                out.append(
                    MemInsn(
                        store=True,
                        buffer=Buffer.OUT,
                        sram_base=sram,
                        dram_base=dram,
                        y_size=1,
                        x_size=toh * t.tow,
                        x_stride=toh * t.tow,
                    )
                )
            else:
                out.append(
                    MemInsn(
                        store=True,
                        buffer=Buffer.OUT,
                        sram_base=sram,
                        dram_base=dram,
                        y_size=toh,
                        x_size=t.tow,
                        x_stride=L.out_width,
                    )
                )
        return out

    def vector(self, op: str, slot: int, toh: int, uop: int = 0, **kw) -> Insn:
        """A reset or ALU op over the tile's output entries of acc slot `slot`; `uop` 0 takes
        the bias entries as source, 1 the shift entries."""
        t = self.t
        first = self.alu_uop[slot] + uop
        loops = dict(uop_begin=first, uop_end=first + 1, lp0=t.tob, lp1=toh * t.tow)
        if op == "reset":
            return GemmInsn(reset=True, acc_f0=t.toh * t.tow, acc_f1=1, **loops, **kw)
        return AluInsn(op=AluOp[op], dst_f0=t.toh * t.tow, dst_f1=1, **loops, **kw)

    # -- the stream ---------------------------------------------------------------------------

    def emit(self, base: dict[str, int], shift: int | None, relu: bool) -> list[Insn]:
        """The stream; `shift` None shifts each channel by its loaded shift entry."""
        L, t, vt = self.layer, self.t, self.vt
        n_ib = self.ib // t.tib
        tiles = self.tiles()
        # pass 1: every step's loads, with loads of what a slot already holds dropped
        held: dict[str, list] = {"inp": [None] * vt, "wgt": [None] * vt, "bias": [None] * vt}
        steps = []
        for ti, (n, o, oh, ow) in enumerate(tiles):
            bias_load = None
            if held["bias"][ti % vt] != o:
                held["bias"][ti % vt] = o
                bias_load = MemInsn(
                    buffer=Buffer.ACC,
                    sram_base=(ti % vt) * self.acc_slot + self.acc_out,
                    dram_base=base["requant"] + 2 * o,
                    y_size=1,
                    x_size=2 * t.tob,
                    x_stride=2 * t.tob,
                )
            for j in range(n_ib):
                k = len(steps)
                ikey, inp, wkey, wgt = self.loads(base, n, o, oh, ow, j * t.tib, k % vt)
                todo = []
                if held["inp"][k % vt] != ikey:
                    held["inp"][k % vt] = ikey
                    todo += inp
                if held["wgt"][k % vt] != wkey:
                    held["wgt"][k % vt] = wkey
                    todo += wgt
                steps.append((ti, j, todo, bias_load if j == 0 else None))
        # pass 2: the stream, tokens pairing each producer with its consumer
        K, T = len(steps), len(tiles)
        insns: list[Insn] = []
        uop_load = MemInsn(
            buffer=Buffer.UOP,
            sram_base=0,
            dram_base=base["uop"],
            y_size=1,
            x_size=len(self.uops),
            x_stride=len(self.uops),
        )
        insns.append(uop_load)
        lo = 0 if relu else -128
        for k, (ti, j, todo, bias_load) in enumerate(steps):
            n, o, oh, ow = tiles[ti]
            toh = min(t.toh, L.out_height - oh)
            if todo:
                todo[0] = _with(todo[0], pop_next=k >= vt)
                todo[-1] = _with(todo[-1], push_next=True)
                insns += todo
            if j == 0:
                if bias_load is not None:
                    insns.append(bias_load)
                insns.append(self.vector("reset", ti % vt, toh, pop_next=ti >= vt))
            frees = k + vt < K and bool(steps[k + vt][2])
            insns.append(
                GemmInsn(
                    uop_begin=self.gemm_uops[k % vt, ti % vt],
                    uop_end=self.gemm_uops[k % vt, ti % vt] + t.tob * t.tib * self.taps,
                    lp0=toh,
                    lp1=t.tow,
                    acc_f0=t.tow,
                    acc_f1=1,
                    inp_f0=L.stride * self.tiw,
                    inp_f1=L.stride,
                    pop_prev=bool(todo),
                    push_prev=frees,
                )
            )
            if j == n_ib - 1:
                slot = ti % vt
                if shift is None:
                    shr = [self.vector("SHR", slot, toh, uop=1, src_f0=2)]
                else:
                    shr = [self.vector("SHR", slot, toh, use_imm=True, imm=shift)] if shift else []
                alu = [
                    self.vector("ADD", slot, toh, src_f0=2),
                    *shr,
                    self.vector("MAX", slot, toh, use_imm=True, imm=lo),
                    self.vector("MIN", slot, toh, use_imm=True, imm=127),
                ]
                alu[-1] = _with(alu[-1], push_next=True)
                insns += alu
                out = self.stores(base, n, o, oh, ow, slot)
                out[0] = _with(out[0], pop_prev=True)
                out[-1] = _with(out[-1], push_prev=ti + vt < T or ti == T - 1)
                insns += out
        insns.append(FinishInsn(pop_next=True))
        return insns


def _with(insn: Insn, **flags: bool) -> Insn:
    """`insn` with dependency flags or-ed in."""
    from dataclasses import replace

    return replace(insn, **{k: getattr(insn, k) or v for k, v in flags.items()})
