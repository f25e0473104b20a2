"""The instruction encoding: every field survives encode -> bytes -> decode (a property test
over field values), out-of-range fields and malformed streams are UserErrors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nnvm.support.errors import UserError
from nnvm.targets.accel.isa import (
    AluInsn,
    AluOp,
    Buffer,
    FinishInsn,
    GemmInsn,
    MemInsn,
    Uop,
    decode_insns,
    decode_uops,
    encode_insns,
    encode_uops,
)


def _fields(cls):
    values = {}
    for name, (_, width, signed) in cls.LAYOUT.items():
        if name in ("buffer", "op"):
            continue
        lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
        values[name] = st.booleans() if width == 1 else st.integers(lo, hi)
    return values


def _insn(cls, extra=None):
    def build(values):
        if "uop_begin" in values and values["uop_end"] < values["uop_begin"]:
            values["uop_begin"], values["uop_end"] = values["uop_end"], values["uop_begin"]
        return cls(**values)

    return st.fixed_dictionaries({**_fields(cls), **(extra or {})}).map(build)


INSNS = st.one_of(
    _insn(MemInsn, {"buffer": st.sampled_from(Buffer), "store": st.booleans()}),
    _insn(GemmInsn),
    _insn(AluInsn, {"op": st.sampled_from(AluOp)}),
    _insn(FinishInsn),
)


@given(st.lists(INSNS, max_size=8))
def test_instruction_round_trip(insns):
    words = encode_insns(insns)
    assert words.dtype == np.dtype("<u8") and words.shape == (len(insns), 2)
    assert decode_insns(words.tobytes()) == insns
    assert decode_insns(words) == insns


@given(st.lists(st.builds(Uop, st.integers(0, 2047), st.integers(0, 2047), st.integers(0, 1023))))
def test_uop_round_trip(uops):
    assert decode_uops(encode_uops(uops).tobytes()) == uops


def test_layout_fields_do_not_overlap():
    for cls in (MemInsn, GemmInsn, AluInsn, FinishInsn):
        used = 7  # the opcode
        for lo, width, _ in cls.LAYOUT.values():
            bits = ((1 << width) - 1) << lo
            assert not used & bits, cls
            assert lo + width <= 128
            used |= bits


def test_signed_immediate_sign_extends():
    insn = AluInsn(op=AluOp.SHR, use_imm=True, imm=-3, uop_begin=0, uop_end=1, lp0=1, lp1=1)
    assert decode_insns(encode_insns([insn]))[0].imm == -3


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: GemmInsn(uop_begin=0, uop_end=1, lp0=8192, lp1=1),
            r"GemmInsn field lp0 = 8192 is out of range \[0, 8191\] \(13 bits\)",
        ),
        (lambda: GemmInsn(uop_begin=0, uop_end=1, lp0=1, lp1=1, wgt_f0=1024), "wgt_f0 = 1024"),
        (
            lambda: AluInsn(op=AluOp.ADD, imm=1 << 15, uop_begin=0, uop_end=1, lp0=1, lp1=1),
            r"imm = 32768 is out of range \[-32768, 32767\]",
        ),
        (
            lambda: MemInsn(
                buffer=Buffer.INP, sram_base=0, dram_base=-1, y_size=1, x_size=1, x_stride=1
            ),
            "dram_base = -1",
        ),
        (
            lambda: MemInsn(
                buffer=Buffer.INP,
                sram_base=0,
                dram_base=0,
                y_size=1,
                x_size=1,
                x_stride=1,
                x_pad_before=16,
            ),
            "x_pad_before = 16",
        ),
        (lambda: GemmInsn(uop_begin=5, uop_end=4, lp0=1, lp1=1), "uop_end 4 is before uop_begin 5"),
        (lambda: Uop(2048, 0, 0), r"uop field acc = 2048 is out of range \[0, 2047\]"),
    ],
)
def test_field_range_errors(build, message):
    with pytest.raises(UserError, match=message):
        build()


def test_malformed_streams():
    with pytest.raises(UserError, match="whole 16-byte instructions; got 17 bytes"):
        decode_insns(bytes(17))
    with pytest.raises(UserError, match="instruction 1: unknown opcode 7"):
        decode_insns(bytes(16) + bytes([7]) + bytes(15))
    finish = np.array([[4 | (1 << 40), 0]], "<u8")
    with pytest.raises(UserError, match="instruction 0: reserved bits set"):
        decode_insns(finish)
    load_bad_buffer = np.array([[0 | (6 << 7), 0]], "<u8")
    with pytest.raises(UserError, match="instruction 0: bad buffer 6"):
        decode_insns(load_bad_buffer)
    with pytest.raises(UserError, match="whole 4-byte micro-ops"):
        decode_uops(bytes(3))
