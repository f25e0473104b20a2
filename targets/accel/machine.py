"""The accelerator's architectural state and the bit-exact meaning of each instruction: on-chip
buffers as numpy arrays (int8 inp/wgt/out, int32 acc, uint32 uop), DRAM as a byte array.

Every GEMM or ALU write of acc entry k also writes out entry k, narrowed to int8 by keeping the
low byte (the STORE path reads out). Accumulation wraps modulo 2**32 as an int32 adder does."""

from __future__ import annotations

import numpy as np

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.isa import AluInsn, AluOp, Buffer, GemmInsn, Insn, MemInsn

_DTYPES = {"uop": "<u4", "inp": "i1", "wgt": "i1", "acc": "<i4", "out": "i1"}


class Machine:
    """Buffers + DRAM; `execute(insn, index)` applies one instruction."""

    def __init__(self, cfg: AccelConfig, dram: np.ndarray):
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise UserError("accel DRAM is a 1-D uint8 array")
        self.cfg = cfg
        self.dram = dram
        shapes = {
            "uop": (),
            "inp": (cfg.batch, cfg.block_in),
            "wgt": (cfg.block_out, cfg.block_in),
            "acc": (cfg.batch, cfg.block_out),
            "out": (cfg.batch, cfg.block_out),
        }
        self.sram = {b: np.zeros((cfg.depth(b), *s), _DTYPES[b]) for b, s in shapes.items()}
        self._float: dict[str, np.ndarray] = {}
        self.dram_entries = {}
        for b, s in shapes.items():
            eb = cfg.entry_bytes(b)
            n = len(dram) // eb
            self.dram_entries[b] = dram[: n * eb].view(_DTYPES[b]).reshape(n, *s)

    # -- DMA --------------------------------------------------------------------------------

    def _dram_rows(self, insn: MemInsn, buf: str, index: int) -> np.ndarray:
        rows = insn.dram_base + np.arange(insn.y_size)[:, None] * insn.x_stride
        idx = rows + np.arange(insn.x_size)[None, :]
        n = len(self.dram_entries[buf])
        if idx.size and idx.max() >= n:
            raise UserError(
                f"instruction {index}: {buf} DMA reaches dram entry {int(idx.max())}, past the "
                f"{n} {buf} entries DRAM holds ({len(self.dram)} bytes)"
            )
        return idx

    def _sram_range(self, buf: str, base: int, count: int, index: int, what: str) -> slice:
        depth = self.cfg.depth(buf)
        if base + count > depth:
            raise UserError(
                f"instruction {index}: {what} writes {buf} entries [{base}, {base + count}), "
                f"past the {buf} buffer's {depth} entries"
            )
        return slice(base, base + count)

    def load(self, insn: MemInsn, index: int) -> None:
        buf = insn.buffer.name.lower()
        if insn.buffer == Buffer.OUT:
            raise UserError(f"instruction {index}: LOAD into the out buffer (it is store-only)")
        idx = self._dram_rows(insn, buf, index)
        sram = self.sram[buf]
        rows = insn.y_pad_before + insn.y_size + insn.y_pad_after
        tile = np.zeros((rows, insn.row_entries, *sram.shape[1:]), sram.dtype)
        y0, x0 = insn.y_pad_before, insn.x_pad_before
        tile[y0 : y0 + insn.y_size, x0 : x0 + insn.x_size] = self.dram_entries[buf][idx]
        where = self._sram_range(buf, insn.sram_base, insn.sram_entries, index, "LOAD")
        sram[where] = tile.reshape(-1, *sram.shape[1:])
        self._float.pop(buf, None)

    def store(self, insn: MemInsn, index: int) -> None:
        if insn.buffer != Buffer.OUT:
            raise UserError(
                f"instruction {index}: STORE reads the out buffer only, not {insn.buffer.name.lower()}"
            )
        if insn.y_pad_before or insn.y_pad_after or insn.x_pad_before or insn.x_pad_after:
            raise UserError(f"instruction {index}: STORE has no padding")
        idx = self._dram_rows(insn, "out", index)
        where = self._sram_range("out", insn.sram_base, idx.size, index, "STORE")
        data = self.sram["out"][where]
        self.dram_entries["out"][idx] = data.reshape(*idx.shape, *data.shape[1:])

    # -- compute ----------------------------------------------------------------------------

    def _indices(self, insn: GemmInsn | AluInsn, index: int) -> tuple[np.ndarray, ...]:
        """(acc, inp, wgt) index arrays of shape (lp0, lp1, uops), in execution order."""
        if insn.uop_end > self.cfg.depth("uop"):
            raise UserError(
                f"instruction {index}: uop range ends at {insn.uop_end}, past the uop buffer's "
                f"{self.cfg.depth('uop')} entries"
            )
        u = self.sram["uop"][insn.uop_begin : insn.uop_end].astype(np.int64)
        fields = (u & 0x7FF, (u >> 11) & 0x7FF, u >> 22)
        i0 = np.arange(insn.lp0)[:, None, None]
        i1 = np.arange(insn.lp1)[None, :, None]
        if isinstance(insn, GemmInsn):
            factors = (
                (insn.acc_f0, insn.acc_f1),
                (insn.inp_f0, insn.inp_f1),
                (insn.wgt_f0, insn.wgt_f1),
            )
        else:
            factors = ((insn.dst_f0, insn.dst_f1), (insn.src_f0, insn.src_f1), (0, 0))
        return tuple(
            f[None, None, :] + i0 * f0 + i1 * f1
            for f, (f0, f1) in zip(fields, factors, strict=True)
        )

    def _bound(self, idx: np.ndarray, buf: str, index: int, what: str) -> None:
        if idx.size and idx.max() >= self.cfg.depth(buf):
            raise UserError(
                f"instruction {index}: {what} touches {buf} entry {int(idx.max())}, past the "
                f"{buf} buffer's {self.cfg.depth(buf)} entries"
            )

    def _as_float(self, buf: str) -> np.ndarray:
        """The buffer as float64 (BLAS-exact for int8 products), cached until a LOAD writes it."""
        if buf not in self._float:
            self._float[buf] = self.sram[buf].astype(np.float64)
        return self._float[buf]

    def _write_out(self, touched: np.ndarray) -> None:
        self.sram["out"][touched] = self.sram["acc"][touched].astype(np.int8)

    def gemm(self, insn: GemmInsn, index: int) -> None:
        a, i, w = self._indices(insn, index)
        self._bound(a, "acc", index, "GEMM")
        acc = self.sram["acc"]
        touched = np.unique(a)
        if not touched.size:  # an empty uop range or loop: nothing to do
            return
        if insn.reset:
            acc[touched] = 0
            self._write_out(touched)
            return
        self._bound(i, "inp", index, "GEMM")
        self._bound(w, "wgt", index, "GEMM")
        inp, wgt = self._as_float("inp"), self._as_float("wgt")
        batch, block_out = acc.shape[1:]
        lanes = batch * block_out
        if insn.wgt_f0 == 0 and insn.wgt_f1 == 0:
            # one weight block per uop: a BLAS product over all loop iterations at once
            prods = np.stack(
                [inp[i[:, :, k].ravel()] @ wgt[w[0, 0, k]].T for k in range(a.shape[2])],
                axis=1,
            ).reshape(a.shape[0], a.shape[1], a.shape[2], -1)
        else:
            prods = np.matmul(inp[i.ravel()], wgt[w.ravel()].transpose(0, 2, 1))
        flat = (a.reshape(-1, 1) * lanes + np.arange(lanes)).ravel()
        # float64 sums of int8 products are exact well past any buffer's worth of blocks
        delta = np.bincount(flat, weights=prods.ravel(), minlength=acc.size)
        view = acc.reshape(-1)
        cells = (touched[:, None] * lanes + np.arange(lanes)).ravel()
        total = view[cells].astype(np.int64) + delta[cells].astype(np.int64)
        view[cells] = total.astype(np.int32)
        self._write_out(touched)

    def alu(self, insn: AluInsn, index: int) -> None:
        d, s, _ = (x.ravel() for x in self._indices(insn, index))
        self._bound(d, "acc", index, "ALU")
        acc = self.sram["acc"]
        if not insn.use_imm:
            self._bound(s, "acc", index, "ALU source")
        first_write = np.full(len(acc), len(d), np.int64)
        first_write[d[::-1]] = np.arange(len(d))[::-1]
        unique = len(np.unique(d)) == len(d)
        if unique and (insn.use_imm or bool(np.all(first_write[s] >= np.arange(len(d))))):
            rhs = np.int32(insn.imm) if insn.use_imm else acc[s]
            acc[d] = _alu(insn.op, acc[d], rhs)
        else:  # an entry written twice, or read after an earlier write: the sequential meaning
            for k in range(len(d)):
                rhs = np.int32(insn.imm) if insn.use_imm else acc[s[k]].copy()
                acc[d[k]] = _alu(insn.op, acc[d[k]], rhs)
        self._write_out(np.unique(d))

    def execute(self, insn: Insn, index: int) -> None:
        if isinstance(insn, MemInsn):
            (self.store if insn.store else self.load)(insn, index)
        elif isinstance(insn, GemmInsn):
            self.gemm(insn, index)
        elif isinstance(insn, AluInsn):
            self.alu(insn, index)


def _alu(op: AluOp, lhs: np.ndarray, rhs: np.ndarray | np.int32) -> np.ndarray:
    """op(lhs, rhs) on int32 with wrap-around; SHR by a negative amount shifts left."""
    with np.errstate(over="ignore"):
        if op == AluOp.MIN:
            return np.minimum(lhs, rhs)
        if op == AluOp.MAX:
            return np.maximum(lhs, rhs)
        if op == AluOp.ADD:
            return (lhs.astype(np.int64) + rhs).astype(np.int32)
        if op == AluOp.MUL:
            return (lhs.astype(np.int64) * rhs).astype(np.int32)
        amount = np.broadcast_to(np.asarray(rhs, np.int64), lhs.shape)
        right = lhs.astype(np.int64) >> np.clip(amount, 0, 63)
        left = lhs.astype(np.int64) << np.clip(-amount, 0, 63)
        return np.where(amount >= 0, right, left).astype(np.int32)
