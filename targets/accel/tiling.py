"""Tile choice for a conv2d (dense is a 1x1 conv on a 1x1 image) on the accelerator: the largest
tiles whose inp, wgt, acc and uop footprints fit the buffers (each split into `virtual_threads`
slots), picked by an estimate of the cycles their DMA and compute take."""

from __future__ import annotations

from dataclasses import dataclass

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.packing import blocks

MAX_IMM_FIELD = 2047
"""The widest index factor the ISA encodes (11 bits); loop extents take 13 bits."""


@dataclass(frozen=True)
class Conv2dLayer:
    """An NCHW conv2d (groups 1) with square stride and symmetric zero padding."""

    batch: int
    in_channels: int
    height: int
    width: int
    out_channels: int
    kernel_h: int
    kernel_w: int
    stride: int = 1
    padding: int = 0
    groups: int = 1

    @classmethod
    def dense(cls, batch: int, in_features: int, out_features: int) -> Conv2dLayer:
        return cls(batch, in_features, 1, 1, out_features, 1, 1)

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.padding - self.kernel_h) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.padding - self.kernel_w) // self.stride + 1

    def __str__(self) -> str:
        return (
            f"conv2d {self.in_channels}->{self.out_channels} {self.kernel_h}x{self.kernel_w} "
            f"s{self.stride} p{self.padding} on {self.batch}x{self.height}x{self.width}"
        )


@dataclass(frozen=True)
class Tiling:
    """Blocks per tile (tob output, tib input channel blocks), output rows and columns per tile
    (toh, tow), and the outer loop: 'weights' (output blocks outermost: weights stay resident
    across spatial tiles) or 'inputs' (spatial tiles outermost)."""

    tob: int
    tib: int
    toh: int
    tow: int
    order: str

    def in_rows(self, layer: Conv2dLayer) -> int:
        return (self.toh - 1) * layer.stride + layer.kernel_h

    def in_cols(self, layer: Conv2dLayer) -> int:
        return (self.tow - 1) * layer.stride + layer.kernel_w


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def footprint(cfg: AccelConfig, layer: Conv2dLayer, t: Tiling, vt: int) -> dict[str, int]:
    """Entries each buffer needs for tiling `t` with `vt` slots (acc: the output tile and a bias
    and a shift entry per output block; uop: the GEMM lists and two ALU uops per slot)."""
    taps = layer.kernel_h * layer.kernel_w
    n_ib = blocks(layer.in_channels, cfg.block_in) // t.tib
    combos = len(
        {(tile % vt, (tile * n_ib + j) % vt) for tile in range(2 * vt) for j in range(n_ib)}
    )
    return {
        "inp": vt * t.tib * t.in_rows(layer) * t.in_cols(layer),
        "wgt": vt * t.tob * t.tib * taps,
        "acc": vt * t.tob * (t.toh * t.tow + 2),
        "uop": combos * t.tob * t.tib * taps + 2 * vt,
    }


def _encodable(layer: Conv2dLayer, t: Tiling) -> bool:
    return (
        layer.stride * t.in_cols(layer) <= MAX_IMM_FIELD
        and t.toh * t.tow <= 8191
        and t.tob * t.toh * t.tow <= MAX_IMM_FIELD
    )


def estimate_cycles(cfg: AccelConfig, layer: Conv2dLayer, t: Tiling, vt: int) -> float:
    """Rough cycles of the tiled layer: serial sum of DMA and compute for one slot, the
    slowest module for two (the simulator measures the real figure)."""
    ob, ib = blocks(layer.out_channels, cfg.block_out), blocks(layer.in_channels, cfg.block_in)
    nb = blocks(layer.batch, cfg.batch)
    n_ob, n_ib = ob // t.tob, ib // t.tib
    n_sp = -(-layer.out_height // t.toh) * (layer.out_width // t.tow)
    tiles = nb * n_ob * n_sp
    steps = tiles * n_ib
    taps = layer.kernel_h * layer.kernel_w
    lat, bw = cfg.dma_row_latency, cfg.dma_bytes_per_cycle
    if t.order == "weights":
        inp_loads = nb * min(n_ob, vt) if n_sp == 1 and n_ib == 1 else steps
        wgt_loads = nb * n_ob * min(n_sp, vt) if n_ib == 1 else steps
    else:
        inp_loads = nb * n_sp * min(n_ob, vt) if n_ib == 1 else steps
        wgt_loads = min(steps, vt) if n_ob == 1 and n_ib == 1 else steps
    rows = t.in_rows(layer)
    inp = t.tib * rows * (lat + t.in_cols(layer) * cfg.entry_bytes("inp") / bw)
    wgt = (1 if n_ib == 1 else t.tob) * lat + t.tob * t.tib * taps * cfg.entry_bytes("wgt") / bw
    store = t.tob * (lat * (1 if t.tow == layer.out_width else t.toh))
    store += t.tob * t.toh * t.tow * cfg.entry_bytes("out") / bw
    gemm = steps * t.tob * t.tib * taps * t.toh * t.tow
    vector = tiles * 5 * t.tob * t.toh * t.tow
    insns = inp_loads * t.tib + wgt_loads + steps + tiles * (6 + t.tob)
    load_total = inp_loads * (inp + t.tib) + wgt_loads * (wgt + 1)
    compute_total, store_total = gemm + vector + steps + 6 * tiles, tiles * (store + t.tob)
    fetch = insns * -(-16 // bw)
    if vt == 1:
        return max(load_total + compute_total + store_total, fetch)
    return max(load_total, compute_total, store_total, fetch) + inp + wgt + store


def instruction_estimate(cfg: AccelConfig, layer: Conv2dLayer, t: Tiling) -> int:
    """Roughly how many instructions the tiling emits (a tie-break: fewer is faster to run)."""
    ob, ib = blocks(layer.out_channels, cfg.block_out), blocks(layer.in_channels, cfg.block_in)
    tiles = (ob // t.tob) * -(-layer.out_height // t.toh) * (layer.out_width // t.tow)
    return tiles * (ib // t.tib) * (t.tib + 2) + tiles * (6 + t.tob)


def choose_tiling(cfg: AccelConfig, layer: Conv2dLayer, vt: int) -> Tiling:
    """The tiling with the lowest estimate among those that fit; UserError naming the buffer
    that overflows when none does."""
    ob, ib = blocks(layer.out_channels, cfg.block_out), blocks(layer.in_channels, cfg.block_in)
    oh = layer.out_height
    heights = sorted({-(-oh // n) for n in range(1, oh + 1)})
    found: list[tuple[float, Tiling]] = []
    smallest = Tiling(1, 1, 1, 1, "weights")
    for tob in _divisors(ob):
        for tib in _divisors(ib):
            for tow in _divisors(layer.out_width):
                for toh in heights:
                    for order in ("weights", "inputs"):
                        t = Tiling(tob, tib, toh, tow, order)
                        need = footprint(cfg, layer, t, vt)
                        if any(need[b] > cfg.depth(b) for b in need) or not _encodable(layer, t):
                            continue
                        found.append((estimate_cycles(cfg, layer, t, vt), t))
    if not found:
        need = footprint(cfg, layer, smallest, vt)
        over = [b for b in need if need[b] > cfg.depth(b)] or ["inp"]
        b = over[0]
        raise UserError(
            f"{layer} does not fit the accelerator: its smallest tile (1 block, 1 output pixel) "
            f"needs {need[b]} {b} entries with {vt} virtual thread(s), the {b} buffer holds "
            f"{cfg.depth(b)} ({getattr(cfg, f'{b}_buff_bytes')} bytes)"
        )
    fastest = min(cost for cost, _ in found)
    near = [t for cost, t in found if cost <= 1.02 * fastest]
    return min(near, key=lambda t: (instruction_estimate(cfg, layer, t), -t.toh * t.tow))
