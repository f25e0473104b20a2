"""The accel instruction set: 128-bit instructions and 32-bit micro-ops, their bit layouts, and
encoding to / decoding from little-endian bytes (an instruction is a pair of uint64 words).

Bit numbers count from bit 0 of word 0; word 1 holds bits 64..127. Every instruction:

    [0:3)  opcode   LOAD=0 STORE=1 GEMM=2 ALU=3 FINISH=4
    [3] pop_prev  [4] pop_next  [5] push_prev  [6] push_next   dependency tokens

LOAD / STORE (2-D strided DMA; entries, not bytes, of the named buffer):
    [7:10) buffer (UOP=0 INP=1 WGT=2 ACC=3 OUT=4)  [10:26) sram_base  [26:58) dram_base
    [64:80) y_size  [80:96) x_size  [96:112) x_stride
    [112:116) y_pad_before  [116:120) y_pad_after  [120:124) x_pad_before  [124:128) x_pad_after
GEMM (acc[a] += inp[i] @ wgt[w]^T over uops [uop_begin, uop_end) inside loops lp0 x lp1,
      a = uop.acc + i0*acc_f0 + i1*acc_f1, likewise inp and wgt; reset writes acc[a] = 0):
    [7] reset  [8:21) uop_begin  [21:35) uop_end  [35:48) lp0  [48:61) lp1
    [64:75) acc_f0  [75:86) acc_f1  [86:97) inp_f0  [97:108) inp_f1  [108:118) wgt_f0  [118:128) wgt_f1
ALU (acc[d] = op(acc[d], imm if use_imm else acc[s]); d from uop.acc and dst_f*, s from uop.inp
     and src_f*; op MIN=0 MAX=1 ADD=2 SHR=3 (arithmetic; a negative amount shifts left) MUL=4):
    [7:10) op  [10] use_imm  [11:24) uop_begin  [24:38) uop_end  [38:51) lp0  [51:64) lp1
    [64:75) dst_f0  [75:86) dst_f1  [86:97) src_f0  [97:108) src_f1  [108:124) imm (signed)
FINISH: the header only.
Micro-op (uint32): [0:11) acc index  [11:22) inp index  [22:32) wgt index.
Bits not named are reserved and must be zero."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

import numpy as np

from nnvm.support.errors import UserError


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    ALU = 3
    FINISH = 4


class Buffer(IntEnum):
    UOP = 0
    INP = 1
    WGT = 2
    ACC = 3
    OUT = 4


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4


Field = tuple[int, int, bool]
"""(first bit, width, signed)."""

_HEADER: dict[str, Field] = {
    "pop_prev": (3, 1, False),
    "pop_next": (4, 1, False),
    "push_prev": (5, 1, False),
    "push_next": (6, 1, False),
}
_LOOPS = ("uop_begin", "uop_end", "lp0", "lp1")


def _check(owner: str, name: str, value: int, field: Field) -> None:
    _, width, signed = field
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if not isinstance(value, int) or not lo <= value <= hi:
        raise UserError(
            f"{owner} field {name} = {value!r} is out of range [{lo}, {hi}] ({width} bits)"
        )


@dataclass(frozen=True, kw_only=True)
class Insn:
    """One instruction; subclasses add their fields and their bit layout."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False
    OPCODE: ClassVar[Opcode]
    LAYOUT: ClassVar[dict[str, Field]]

    def __post_init__(self) -> None:
        for name, field in self.LAYOUT.items():
            value = getattr(self, name)
            _check(
                type(self).__name__, name, int(value) if isinstance(value, bool) else value, field
            )
        if any(name in self.LAYOUT for name in _LOOPS) and self.uop_end < self.uop_begin:
            raise UserError(
                f"{type(self).__name__}: uop_end {self.uop_end} is before uop_begin {self.uop_begin}"
            )

    def encode(self) -> int:
        """The 128-bit word as a Python int."""
        word = int(self.OPCODE)
        for name, (lo, width, _) in self.LAYOUT.items():
            word |= (int(getattr(self, name)) & ((1 << width) - 1)) << lo
        return word

    @property
    def deps(self) -> tuple[str, ...]:
        return tuple(name for name in _HEADER if getattr(self, name))


@dataclass(frozen=True, kw_only=True)
class MemInsn(Insn):
    """LOAD (dram -> sram, zero padding around the copied rows) or STORE (sram -> dram)."""

    store: bool = False
    buffer: Buffer
    sram_base: int
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    y_pad_before: int = 0
    y_pad_after: int = 0
    x_pad_before: int = 0
    x_pad_after: int = 0
    LAYOUT: ClassVar[dict[str, Field]] = {
        **_HEADER,
        "buffer": (7, 3, False),
        "sram_base": (10, 16, False),
        "dram_base": (26, 32, False),
        "y_size": (64, 16, False),
        "x_size": (80, 16, False),
        "x_stride": (96, 16, False),
        "y_pad_before": (112, 4, False),
        "y_pad_after": (116, 4, False),
        "x_pad_before": (120, 4, False),
        "x_pad_after": (124, 4, False),
    }

    @property
    def OPCODE(self) -> Opcode:  # type: ignore[override]
        return Opcode.STORE if self.store else Opcode.LOAD

    @property
    def row_entries(self) -> int:
        """Entries of one sram row (padding included)."""
        return self.x_pad_before + self.x_size + self.x_pad_after

    @property
    def sram_entries(self) -> int:
        return (self.y_pad_before + self.y_size + self.y_pad_after) * self.row_entries


@dataclass(frozen=True, kw_only=True)
class GemmInsn(Insn):
    """The GEMM block intrinsic over a micro-op range inside a two-level loop."""

    reset: bool = False
    uop_begin: int
    uop_end: int
    lp0: int
    lp1: int
    acc_f0: int = 0
    acc_f1: int = 0
    inp_f0: int = 0
    inp_f1: int = 0
    wgt_f0: int = 0
    wgt_f1: int = 0
    OPCODE: ClassVar[Opcode] = Opcode.GEMM
    LAYOUT: ClassVar[dict[str, Field]] = {
        **_HEADER,
        "reset": (7, 1, False),
        "uop_begin": (8, 13, False),
        "uop_end": (21, 14, False),
        "lp0": (35, 13, False),
        "lp1": (48, 13, False),
        "acc_f0": (64, 11, False),
        "acc_f1": (75, 11, False),
        "inp_f0": (86, 11, False),
        "inp_f1": (97, 11, False),
        "wgt_f0": (108, 10, False),
        "wgt_f1": (118, 10, False),
    }


@dataclass(frozen=True, kw_only=True)
class AluInsn(Insn):
    """A vector ALU op on acc entries, with an immediate or a second acc entry."""

    op: AluOp
    use_imm: bool = False
    imm: int = 0
    uop_begin: int
    uop_end: int
    lp0: int
    lp1: int
    dst_f0: int = 0
    dst_f1: int = 0
    src_f0: int = 0
    src_f1: int = 0
    OPCODE: ClassVar[Opcode] = Opcode.ALU
    LAYOUT: ClassVar[dict[str, Field]] = {
        **_HEADER,
        "op": (7, 3, False),
        "use_imm": (10, 1, False),
        "uop_begin": (11, 13, False),
        "uop_end": (24, 14, False),
        "lp0": (38, 13, False),
        "lp1": (51, 13, False),
        "dst_f0": (64, 11, False),
        "dst_f1": (75, 11, False),
        "src_f0": (86, 11, False),
        "src_f1": (97, 11, False),
        "imm": (108, 16, True),
    }


@dataclass(frozen=True, kw_only=True)
class FinishInsn(Insn):
    """The end of the program."""

    OPCODE: ClassVar[Opcode] = Opcode.FINISH
    LAYOUT: ClassVar[dict[str, Field]] = dict(_HEADER)


_UOP_LAYOUT: dict[str, Field] = {
    "acc": (0, 11, False),
    "inp": (11, 11, False),
    "wgt": (22, 10, False),
}


@dataclass(frozen=True)
class Uop:
    """A micro-op: the acc, inp and wgt entries of one GEMM block (ALU: dst, src in acc)."""

    acc: int
    inp: int
    wgt: int

    def __post_init__(self) -> None:
        for name, field in _UOP_LAYOUT.items():
            _check("uop", name, getattr(self, name), field)

    def encode(self) -> int:
        return self.acc | (self.inp << 11) | (self.wgt << 22)


_CLASSES: dict[Opcode, type[Insn]] = {
    Opcode.LOAD: MemInsn,
    Opcode.STORE: MemInsn,
    Opcode.GEMM: GemmInsn,
    Opcode.ALU: AluInsn,
    Opcode.FINISH: FinishInsn,
}
_ENUMS = {"buffer": Buffer, "op": AluOp}


def encode_insns(insns: list[Insn]) -> np.ndarray:
    """Instructions -> an (n, 2) uint64 array (word 0, word 1); `.tobytes()` is the stream."""
    out = np.zeros((len(insns), 2), dtype="<u8")
    mask = (1 << 64) - 1
    for k, insn in enumerate(insns):
        word = insn.encode()
        out[k, 0], out[k, 1] = word & mask, word >> 64
    return out


def decode_insn(word: int, index: int = 0) -> Insn:
    """One 128-bit word -> its instruction; UserError for a bad opcode or reserved bits set."""
    code = word & 7
    if code not in _CLASSES.keys():
        raise UserError(f"instruction {index}: unknown opcode {code}")
    cls = _CLASSES[Opcode(code)]
    values: dict[str, object] = {}
    used = 7
    for name, (lo, width, signed) in cls.LAYOUT.items():
        raw = (word >> lo) & ((1 << width) - 1)
        used |= ((1 << width) - 1) << lo
        if signed and raw >> (width - 1):
            raw -= 1 << width
        values[name] = raw
    if word & ~used:
        raise UserError(f"instruction {index}: reserved bits set ({word & ~used:#x})")
    for name, enum in _ENUMS.items():
        if name in values:
            try:
                values[name] = enum(values[name])
            except ValueError:
                raise UserError(f"instruction {index}: bad {name} {values[name]}") from None
    for name, field in cls.LAYOUT.items():
        if field[1] == 1 and name not in _ENUMS:
            values[name] = bool(values[name])
    if cls is MemInsn:
        values["store"] = code == Opcode.STORE
    try:
        return cls(**values)
    except UserError as err:
        raise UserError(f"instruction {index}: {err.message}") from None


def decode_insns(data: bytes | np.ndarray) -> list[Insn]:
    """The instruction stream (bytes, or an (n, 2) uint64 array) -> instructions."""
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data, dtype="<u8").tobytes()
    if len(data) % 16:
        raise UserError(
            f"an instruction stream is whole 16-byte instructions; got {len(data)} bytes"
        )
    words = np.frombuffer(data, dtype="<u8").reshape(-1, 2)
    return [decode_insn(int(lo) | (int(hi) << 64), k) for k, (lo, hi) in enumerate(words)]


def encode_uops(uops: list[Uop]) -> np.ndarray:
    return np.array([u.encode() for u in uops], dtype="<u4")


def decode_uops(data: bytes | np.ndarray) -> list[Uop]:
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data, dtype="<u4").tobytes()
    if len(data) % 4:
        raise UserError(f"a micro-op stream is whole 4-byte micro-ops; got {len(data)} bytes")
    words = np.frombuffer(data, dtype="<u4")
    return [Uop(int(w) & 0x7FF, (int(w) >> 11) & 0x7FF, int(w) >> 22) for w in words]
