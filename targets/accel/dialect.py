"""The `accel` dialect: a lowered layer as IR, one op per accelerator instruction, so a program
can be printed, diffed and parsed back (program_ir.py converts to and from the ISA).

`accel.program { ... }` holds `accel.micro_ops` (the uop table), then `accel.dma_load` /
`accel.dma_store` (2-D DMA into a named on-chip buffer), `accel.gemm` (the block intrinsic),
`accel.alu`, `accel.finish`, and `accel.token_pop` / `accel.token_push` naming a dependency
queue ("load->compute", ...): a pop belongs to the instruction op after it, a push to the one
before. xDSL's `accfg` is not reused here: its `launch` returns a token awaited exactly once by
the host, and its `setup` threads CSR state through SSA; the accel tokens are counting FIFOs
between two on-chip modules, pushed and popped many times, and an instruction carries all its
operands. accfg fits one level up, the host launching a whole program and awaiting FINISH."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Block, Dialect, Region
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

BUFFERS = ("uop", "inp", "wgt", "acc", "out")
ALU_OPS = ("min", "max", "add", "shr", "mul")
QUEUES = ("load->compute", "compute->load", "compute->store", "store->compute")


def _pairs(op: IRDLOperation, *names: str, length: int = 2) -> None:
    for name in names:
        values = getattr(op, name).get_values()
        if len(values) != length:
            raise VerifyException(f"{op.name}: {name} has {len(values)} values, expected {length}")


class _AccelOp(IRDLOperation):
    """Ops whose properties print in the attribute dictionary."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"


@irdl_op_definition
class MicroOpsOp(_AccelOp):
    """`accel.micro_ops {acc = array<i64: ...>, inp = ..., wgt = ...}`: the uop table."""

    name = "accel.micro_ops"
    acc = prop_def(DenseArrayBase)
    inp = prop_def(DenseArrayBase)
    wgt = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        n = len(self.acc.get_values())
        if len(self.inp.get_values()) != n or len(self.wgt.get_values()) != n:
            raise VerifyException("accel.micro_ops: acc, inp and wgt differ in length")


@irdl_op_definition
class DmaLoadOp(_AccelOp):
    """`accel.dma_load`: y_size rows of x_size entries (dram row stride x_stride) into `buffer`
    at sram_base, with pad = [y before, y after, x before, x after] zero entries around."""

    name = "accel.dma_load"
    buffer = prop_def(StringAttr)
    sram_base = prop_def(IntegerAttr)
    dram_base = prop_def(IntegerAttr)
    size = prop_def(DenseArrayBase)
    """[y_size, x_size]"""
    x_stride = prop_def(IntegerAttr)
    pad = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        if self.buffer.data not in BUFFERS:
            raise VerifyException(f"accel.dma_load: unknown buffer {self.buffer.data!r}")
        _pairs(self, "size")
        _pairs(self, "pad", length=4)


@irdl_op_definition
class DmaStoreOp(_AccelOp):
    """`accel.dma_store`: the out buffer's entries from sram_base to y_size x x_size in DRAM."""

    name = "accel.dma_store"
    sram_base = prop_def(IntegerAttr)
    dram_base = prop_def(IntegerAttr)
    size = prop_def(DenseArrayBase)
    x_stride = prop_def(IntegerAttr)

    def verify_(self) -> None:
        _pairs(self, "size")


@irdl_op_definition
class GemmOp(_AccelOp):
    """`accel.gemm`: acc += inp @ wgt^T per uop in uops = [begin, end), inside loops =
    [lp0, lp1], indices stepping by the acc/inp/wgt factor pairs; `reset` zeroes acc instead."""

    name = "accel.gemm"
    reset = opt_prop_def(UnitAttr)
    uops = prop_def(DenseArrayBase)
    loops = prop_def(DenseArrayBase)
    acc = prop_def(DenseArrayBase)
    inp = prop_def(DenseArrayBase)
    wgt = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        _pairs(self, "uops", "loops", "acc", "inp", "wgt")


@irdl_op_definition
class AluOp(_AccelOp):
    """`accel.alu`: acc[dst] = op(acc[dst], imm or acc[src]) over the uop range and loops."""

    name = "accel.alu"
    op = prop_def(StringAttr)
    imm = opt_prop_def(IntegerAttr)
    uops = prop_def(DenseArrayBase)
    loops = prop_def(DenseArrayBase)
    dst = prop_def(DenseArrayBase)
    src = prop_def(DenseArrayBase)

    def verify_(self) -> None:
        if self.op.data not in ALU_OPS:
            raise VerifyException(
                f"accel.alu: unknown op {self.op.data!r}; one of {', '.join(ALU_OPS)}"
            )
        _pairs(self, "uops", "loops", "dst", "src")


@irdl_op_definition
class FinishOp(_AccelOp):
    """`accel.finish`: the end of the program."""

    name = "accel.finish"


class _TokenOp(_AccelOp):
    queue = prop_def(StringAttr)

    def verify_(self) -> None:
        if self.queue.data not in QUEUES:
            raise VerifyException(
                f"{self.name}: unknown queue {self.queue.data!r}; one of {', '.join(QUEUES)}"
            )


@irdl_op_definition
class TokenPopOp(_TokenOp):
    """`accel.token_pop {queue = "load->compute"}`: the next instruction waits for a token."""

    name = "accel.token_pop"


@irdl_op_definition
class TokenPushOp(_TokenOp):
    """`accel.token_push {queue = "compute->load"}`: the previous instruction gives a token
    when it ends."""

    name = "accel.token_push"


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """`accel.program { ... }`: one instruction stream, in order."""

    name = "accel.program"
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$body attr-dict"

    def __init__(self, ops: list[IRDLOperation]):
        block = Block()
        block.add_ops(ops)
        super().__init__(regions=[Region(block)])


def i64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


ACCEL = Dialect(
    "accel",
    [
        ProgramOp,
        MicroOpsOp,
        DmaLoadOp,
        DmaStoreOp,
        GemmOp,
        AluOp,
        FinishOp,
        TokenPopOp,
        TokenPushOp,
    ],
)
