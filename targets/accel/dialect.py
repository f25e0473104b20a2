"""The `accel` dialect, at two levels. Graph level (graph_ops.py): `accel.conv2d` / `accel.dense`,
one offloaded int8 layer each (accel-partition makes them). Program level: `accel.layer` holds
one layer's program (accel-lower-layers makes it), one op per accelerator instruction, so a
program can be printed, diffed and parsed back (program_ir.py converts to and from the ISA).

`accel.program { ... }` holds `accel.micro_ops` (the uop table), then `accel.dma_load` /
`accel.dma_store` (2-D DMA into a named on-chip buffer), `accel.gemm` (the block intrinsic),
`accel.alu`, `accel.finish`, and `accel.token_pop` / `accel.token_push` naming a dependency
queue ("load->compute", ...): a pop belongs to the instruction op after it, a push to the one
before. xDSL's `accfg` is not reused here: its `launch` returns a token awaited exactly once by
the host, and its `setup` threads CSR state through SSA; the accel tokens are counting FIFOs
between two on-chip modules, pushed and popped many times, and an instruction carries all its
operands. accfg fits one level up, the host launching a whole program and awaiting FINISH."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Dialect, Region
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from nnvm.targets.accel.graph_ops import Conv2dOp, DenseOp

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


@irdl_op_definition
class LayerOp(IRDLOperation):
    """`%y = accel.layer %x, %w, [%bias,] %rounding, %shift ({ accel.program {...} }) {...}`: one
    offloaded layer, lowered (accel-lower-layers): its program, and what the runtime needs to
    lay the operands out in the program's DRAM image and read the result back. `geometry` is
    [batch, in channels, height, width, out channels, kernel h, kernel w, stride, padding] (a
    dense is a 1x1 conv on a 1x1 image), `tiling` [out blocks, in blocks, rows, cols] per tile
    with `order`, `dram` the byte offsets of the uop, inp, wgt, requant and out regions and the
    image's size."""

    name = "accel.layer"
    args = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    geometry = prop_def(DenseArrayBase)
    tiling = prop_def(DenseArrayBase)
    order = prop_def(StringAttr)
    virtual_threads = prop_def(IntegerAttr)
    dram = prop_def(DenseArrayBase)
    traits = traits_def(NoTerminator())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$args $body attr-dict `:` functional-type($args, $result)"

    def verify_(self) -> None:
        for name, n in (("geometry", 9), ("tiling", 4), ("dram", 6)):
            if len(getattr(self, name).get_values()) != n:
                raise VerifyException(f"{self.name}: {name} has {n} values")
        if len(self.args) not in (4, 5):
            raise VerifyException(
                f"{self.name}: takes data, weight, [bias,] rounding and shift, got "
                f"{len(self.args)} operands"
            )
        ops = list(self.body.block.ops)
        if len(ops) != 1 or not isinstance(ops[0], ProgramOp):
            raise VerifyException(f"{self.name}: its body is one accel.program")


def i64_array(values) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


ACCEL = Dialect(
    "accel",
    [
        Conv2dOp,
        DenseOp,
        LayerOp,
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
