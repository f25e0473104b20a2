"""The simulator on hand-made streams: each ALU op's int32 meaning, the token protocol (loads
overlap compute only when the tokens allow, a broken protocol is a located deadlock), the cycle
costs and the report, and out-of-range accesses."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import DEFAULT_CONFIG, config_from_dict
from nnvm.targets.accel.cycles import insn_cycles
from nnvm.targets.accel.isa import (
    AluInsn,
    AluOp,
    Buffer,
    FinishInsn,
    GemmInsn,
    MemInsn,
    Uop,
    encode_uops,
)
from nnvm.targets.accel.machine import Machine
from nnvm.targets.accel.simulator import simulate

CFG = DEFAULT_CONFIG


def load(buf, sram, dram, n, **kw):
    return MemInsn(buffer=buf, sram_base=sram, dram_base=dram, y_size=1, x_size=n, x_stride=n, **kw)


def _machine_with_acc(values):
    """A machine whose acc entries 0.. hold `values` (one int32 per lane, 16 lanes)."""
    dram = np.zeros(1 << 16, np.uint8)
    m = Machine(CFG, dram)
    acc = np.asarray(values, np.int32).reshape(-1, 1, 16)
    m.dram_entries["acc"][: len(acc)] = acc
    m.execute(load(Buffer.ACC, 0, 0, len(acc)), 0)
    m.dram_entries["uop"][0] = encode_uops([Uop(0, 1, 0)])[0]
    m.execute(load(Buffer.UOP, 0, 0, 1), 1)
    return m


@pytest.mark.parametrize(
    "op, imm, expect",
    [
        (AluOp.MIN, 3, lambda a, b: np.minimum(a, 3)),
        (AluOp.MAX, -7, lambda a, b: np.maximum(a, -7)),
        (AluOp.ADD, None, lambda a, b: (a.astype(np.int64) + b).astype(np.int32)),
        (AluOp.MUL, None, lambda a, b: (a.astype(np.int64) * b).astype(np.int32)),
        (AluOp.SHR, 5, lambda a, b: a >> 5),
        (AluOp.SHR, -4, lambda a, b: (a.astype(np.int64) << 4).astype(np.int32)),
    ],
)
def test_alu_ops(op, imm, expect):
    rng = np.random.default_rng(int(op))
    a = rng.integers(-(2**31), 2**31, 16, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, 16, dtype=np.int64).astype(np.int32)
    m = _machine_with_acc([a, b])
    insn = AluInsn(
        op=op, use_imm=imm is not None, imm=imm or 0, uop_begin=0, uop_end=1, lp0=1, lp1=1
    )
    m.execute(insn, 2)
    got = m.sram["acc"][0, 0]
    np.testing.assert_array_equal(got, expect(a, b))
    np.testing.assert_array_equal(m.sram["out"][0, 0], got.astype(np.int8))  # the low byte


def test_alu_reads_its_own_earlier_writes_in_order():
    # acc[k+1] += acc[k] for k = 0, 1, 2: a running sum, which needs the sequential meaning
    m = _machine_with_acc([[1] * 16, [2] * 16, [3] * 16, [4] * 16])
    m.dram_entries["uop"][0] = encode_uops([Uop(1, 0, 0)])[0]
    m.execute(load(Buffer.UOP, 0, 0, 1), 0)
    m.execute(AluInsn(op=AluOp.ADD, uop_begin=0, uop_end=1, lp0=3, lp1=1, dst_f0=1, src_f0=1), 1)
    assert m.sram["acc"][:4, 0, 0].tolist() == [1, 3, 6, 10]


def test_gemm_reset_and_accumulate():
    rng = np.random.default_rng(0)
    m = Machine(CFG, np.zeros(1 << 16, np.uint8))
    inp = rng.integers(-128, 128, (3, 1, 16), dtype=np.int8)
    wgt = rng.integers(-128, 128, (2, 16, 16), dtype=np.int8)
    m.sram["inp"][:3], m.sram["wgt"][:2] = inp, wgt
    m.sram["uop"][:2] = encode_uops([Uop(0, 0, 0), Uop(0, 1, 1)])
    m.sram["acc"][:2] = 99
    m.execute(GemmInsn(reset=True, uop_begin=0, uop_end=1, lp0=2, lp1=1, acc_f0=1), 0)
    assert not m.sram["acc"][:2].any()
    # two iterations: acc[i0] += inp[i0] @ wgt0^T + inp[i0 + 1] @ wgt1^T
    m.execute(GemmInsn(uop_begin=0, uop_end=2, lp0=2, lp1=1, acc_f0=1, inp_f0=1), 1)
    x, w = inp.astype(np.int64), wgt.astype(np.int64)
    for i0 in range(2):
        want = x[i0] @ w[0].T + x[i0 + 1] @ w[1].T
        np.testing.assert_array_equal(m.sram["acc"][i0], want)


def test_load_pads_with_zeros():
    m = Machine(CFG, np.arange(1 << 12, dtype=np.uint32).astype(np.uint8))
    m.execute(
        MemInsn(
            buffer=Buffer.INP,
            sram_base=0,
            dram_base=1,
            y_size=2,
            x_size=2,
            x_stride=4,
            y_pad_before=1,
            x_pad_before=1,
            x_pad_after=1,
        ),
        0,
    )
    rows = m.sram["inp"][:12, 0, 0].reshape(3, 4)
    assert rows.tolist() == [[0, 0, 0, 0], [0, 16, 32, 0], [0, 80, 96, 0]]


def _pipeline(overlap: bool):
    """Two load/compute rounds over two inp slots; with `overlap` the second load does not wait
    for the first compute."""
    dram = np.zeros(1 << 16, np.uint8)
    dram[:4] = np.frombuffer(encode_uops([Uop(0, 0, 0)]).tobytes(), np.uint8)
    gemm = dict(uop_begin=0, uop_end=1, lp0=1, lp1=200)
    insns = [
        load(Buffer.UOP, 0, 0, 1),
        load(Buffer.INP, 0, 64, 512, push_next=True),
        GemmInsn(pop_prev=True, push_prev=not overlap, **gemm),
        load(Buffer.INP, 512, 64, 512, pop_next=not overlap, push_next=True),
        GemmInsn(pop_prev=True, **gemm),
        FinishInsn(),
    ]
    return simulate(CFG, insns, dram)


def test_tokens_let_loads_overlap_compute():
    serial, overlapped = _pipeline(False), _pipeline(True)
    load_cost = insn_cycles(CFG, load(Buffer.INP, 0, 64, 512))
    assert serial.busy == overlapped.busy and serial.busy["load"] == 2 * load_cost
    assert overlapped.total_cycles < serial.total_cycles
    # the serial run: the second load starts only after the first GEMM (200 cycles) ends
    assert serial.total_cycles - overlapped.total_cycles == 200
    assert overlapped.gemm_cycles == 400
    assert (
        overlapped.bytes_moved["inp"] == 2 * 512 * 16 and overlapped.bytes_moved["insn"] == 6 * 16
    )
    assert overlapped.counts == {"LOAD uop": 1, "LOAD inp": 2, "GEMM": 2, "FINISH": 1}


def test_deadlock_names_the_waiting_instructions():
    insns = [
        load(Buffer.INP, 0, 0, 1, pop_next=True, push_next=True),  # waits for compute first
        GemmInsn(uop_begin=0, uop_end=0, lp0=1, lp1=1, pop_prev=True, push_prev=True),
        FinishInsn(),
    ]
    with pytest.raises(UserError) as err:
        simulate(CFG, insns, np.zeros(4096, np.uint8))
    msg = err.value.message
    assert msg.startswith("token deadlock")
    assert "load waits at instruction 0 (LOAD inp" in msg and "compute->load" in msg
    assert "compute waits at instruction 1 (GEMM" in msg and "load->compute" in msg


def test_deadlock_on_a_token_that_is_never_pushed():
    insns = [
        MemInsn(
            store=True,
            buffer=Buffer.OUT,
            sram_base=0,
            dram_base=0,
            y_size=1,
            x_size=1,
            x_stride=1,
            pop_prev=True,
        ),
        FinishInsn(),
    ]
    with pytest.raises(
        UserError, match=r"store waits at instruction 0 \(STORE out.*compute->store"
    ):
        simulate(CFG, insns, np.zeros(4096, np.uint8))


def test_small_command_queues_stall_fetch_but_finish():
    cfg = config_from_dict({"CMD_QUEUE_DEPTH": 1})
    insns = [load(Buffer.INP, k, 0, 1) for k in range(5)] + [FinishInsn()]
    report = simulate(cfg, insns, np.zeros(4096, np.uint8))
    assert report.busy["load"] == 5 * insn_cycles(cfg, insns[0])


@pytest.mark.parametrize(
    "insns, message",
    [
        ([load(Buffer.INP, 0, 0, 1)], "has no FINISH"),
        ([FinishInsn(), FinishInsn()], "instruction 0 is a FINISH before the end"),
        (
            [load(Buffer.INP, 0, 0, 1, pop_prev=True), FinishInsn()],
            "pop_prev on the load module, which has no previous module",
        ),
        (
            [load(Buffer.INP, 0, 300, 1), FinishInsn()],
            "inp DMA reaches dram entry 300, past the 256 inp entries",
        ),
        (
            [load(Buffer.INP, 2047, 0, 2), FinishInsn()],
            r"LOAD writes inp entries \[2047, 2049\), past the inp buffer's 2048 entries",
        ),
        ([load(Buffer.OUT, 0, 0, 1), FinishInsn()], "LOAD into the out buffer"),
        (
            [
                MemInsn(
                    store=True,
                    buffer=Buffer.ACC,
                    sram_base=0,
                    dram_base=0,
                    y_size=1,
                    x_size=1,
                    x_stride=1,
                ),
                FinishInsn(),
            ],
            "STORE reads the out buffer only",
        ),
        (
            [GemmInsn(uop_begin=0, uop_end=1, lp0=3000, lp1=1, acc_f0=1), FinishInsn()],
            "GEMM touches acc entry 2999",
        ),
        (
            [AluInsn(op=AluOp.ADD, uop_begin=8000, uop_end=8193, lp0=1, lp1=1), FinishInsn()],
            "uop range ends at 8193",
        ),
    ],
)
def test_bad_streams(insns, message):
    with pytest.raises(UserError, match=message):
        simulate(CFG, insns, np.zeros(4096, np.uint8))


def test_shared_dma_port_serialises_loads_and_stores():
    store = MemInsn(
        store=True, buffer=Buffer.OUT, sram_base=0, dram_base=0, y_size=1, x_size=512, x_stride=512
    )
    insns = [load(Buffer.INP, 0, 0, 512), store, FinishInsn()]
    own = simulate(CFG, insns, np.zeros(1 << 16, np.uint8))
    shared = simulate(config_from_dict({"SHARED_DMA": 1}), insns, np.zeros(1 << 16, np.uint8))
    load_cost, store_cost = insn_cycles(CFG, insns[0]), insn_cycles(CFG, store)
    assert own.total_cycles < load_cost + store_cost <= shared.total_cycles
    assert own.busy == shared.busy


def test_deadlock_behind_a_full_command_queue():
    # compute waits for a load that fetch never reaches: the compute queue (depth 1) is full
    cfg = config_from_dict({"CMD_QUEUE_DEPTH": 1})
    gemm = dict(uop_begin=0, uop_end=0, lp0=1, lp1=1)
    insns = [
        GemmInsn(pop_prev=True, **gemm),
        GemmInsn(**gemm),
        load(Buffer.INP, 0, 0, 1, push_next=True),
        FinishInsn(),
    ]
    with pytest.raises(UserError) as err:
        simulate(cfg, insns, np.zeros(4096, np.uint8))
    msg = err.value.message
    assert "compute waits at instruction 0 (GEMM" in msg
    assert "fetch is stalled at instruction 1: the compute command queue is full (1 entries)" in msg
    insns_ok = simulate(config_from_dict({"CMD_QUEUE_DEPTH": 2}), insns, np.zeros(4096, np.uint8))
    assert insns_ok.counts["GEMM"] == 2


def test_report_format_and_time():
    report = _pipeline(True)
    text = report.format()
    assert text.startswith(f"cycles {report.total_cycles}  gemm utilization ")
    assert "busy fetch " in text and "bytes insn 96" in text and "insns FINISH 1" in text
    assert report.seconds(CFG) == report.total_cycles / 100e6
