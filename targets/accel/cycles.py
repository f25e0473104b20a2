"""The cycle cost of one instruction on its module: a DMA pays a fixed latency per row plus its
bytes over the bandwidth and one cycle per zero-padding entry it writes; GEMM runs one
BATCH x BLOCK_IN x BLOCK_OUT block, a reset or an ALU op one acc vector, per cycle per uop
iteration. Every instruction takes at least one cycle."""

from __future__ import annotations

from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.isa import AluInsn, GemmInsn, Insn, MemInsn


def insn_dma_bytes(cfg: AccelConfig, insn: MemInsn) -> int:
    """Bytes a LOAD or STORE moves across the DRAM port (padding is made on chip)."""
    return insn.y_size * insn.x_size * cfg.entry_bytes(insn.buffer.name.lower())


def iterations(insn: GemmInsn | AluInsn) -> int:
    return insn.lp0 * insn.lp1 * (insn.uop_end - insn.uop_begin)


def gemm_cycles(insn: GemmInsn) -> int:
    """Cycles the GEMM core multiplies during `insn` (none for a reset)."""
    return 0 if insn.reset else iterations(insn)


def insn_cycles(cfg: AccelConfig, insn: Insn) -> int:
    if isinstance(insn, MemInsn):
        row_bytes = insn.x_size * cfg.entry_bytes(insn.buffer.name.lower())
        transfer = insn.y_size * (cfg.dma_row_latency + -(-row_bytes // cfg.dma_bytes_per_cycle))
        pads = insn.sram_entries - insn.y_size * insn.x_size
        return max(1, transfer + pads)
    if isinstance(insn, GemmInsn | AluInsn):
        return max(1, iterations(insn))
    return 1
