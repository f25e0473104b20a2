"""accel-insert-tokens: the dependency tokens of an instruction stream, from what each
instruction reads and writes (VTA's coprocessor synchronisation, generic).

The load, compute and store modules each run their instructions in stream order, so only
dependences across modules need tokens, and the stream order is the order they must respect:

    compute reads inp/wgt a load wrote        load->compute   (the load pushes, compute pops)
    a load overwrites inp/wgt compute reads    compute->load
    a store reads out compute wrote            compute->store
    compute writes out a store still reads     store->compute
    FINISH waits for the last store            store->compute

For each consumer, the producer it must wait for is the last instruction before it (in the
other module) touching an overlapping range: that one pushes a token and the consumer pops it.
A module runs in order, so the wait covers every earlier producer too: one token per consumer
suffices, and none where an earlier wait already covered it. Producers after it are not waited
for (a load into the other buffer runs on while this one is computed on). Each pop gets its
own push, on a later producer than the previous pop's, so the counting queues pair them in
order. Ranges are [first, last] entry
intervals per buffer (GEMM and ALU ranges from their micro-ops and loops), which may see a
dependence that is not there, never miss one."""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.targets.accel.dialect import ProgramOp
from nnvm.targets.accel.isa import AluInsn, Buffer, FinishInsn, GemmInsn, Insn, MemInsn, Uop
from nnvm.targets.accel.program_ir import ir_to_program, program_to_ir
from nnvm.targets.accel.simulator import module_of

Ranges = dict[str, tuple[int, int]]
"""buffer -> [first, last] entries."""


def _loop_range(
    uops: list[Uop], insn: GemmInsn | AluInsn, field: str, f0: int, f1: int
) -> tuple[int, int] | None:
    """[first, last] of one index over the instruction's micro-ops and loops."""
    values = [getattr(u, field) for u in uops[insn.uop_begin : insn.uop_end]]
    if not values or insn.lp0 == 0 or insn.lp1 == 0:
        return None
    span = (insn.lp0 - 1) * f0 + (insn.lp1 - 1) * f1
    return min(values), max(values) + span


def accesses(insn: Insn, uops: list[Uop]) -> tuple[Ranges, Ranges]:
    """(reads, writes) of one instruction."""
    reads: Ranges = {}
    writes: Ranges = {}

    def put(into: Ranges, buf: str, r: tuple[int, int] | None) -> None:
        if r is not None:
            lo, hi = into.get(buf, r)
            into[buf] = (min(lo, r[0]), max(hi, r[1]))

    if isinstance(insn, MemInsn):
        buf = insn.buffer.name.lower()
        if insn.store:
            put(reads, "out", (insn.sram_base, insn.sram_base + insn.y_size * insn.x_size - 1))
        else:
            put(writes, buf, (insn.sram_base, insn.sram_base + insn.sram_entries - 1))
    elif isinstance(insn, GemmInsn):
        acc = _loop_range(uops, insn, "acc", insn.acc_f0, insn.acc_f1)
        put(writes, "acc", acc)
        put(writes, "out", acc)
        if not insn.reset:
            put(reads, "acc", acc)
            put(reads, "inp", _loop_range(uops, insn, "inp", insn.inp_f0, insn.inp_f1))
            put(reads, "wgt", _loop_range(uops, insn, "wgt", insn.wgt_f0, insn.wgt_f1))
    elif isinstance(insn, AluInsn):
        dst = _loop_range(uops, insn, "acc", insn.dst_f0, insn.dst_f1)
        put(reads, "acc", dst)
        put(writes, "acc", dst)
        put(writes, "out", dst)
        if not insn.use_imm:
            put(reads, "acc", _loop_range(uops, insn, "inp", insn.src_f0, insn.src_f1))
    return reads, writes


def _overlap(a: Ranges, b: Ranges, buffers: tuple[str, ...]) -> bool:
    for buf in buffers:
        if buf in a and buf in b and a[buf][0] <= b[buf][1] and b[buf][0] <= a[buf][1]:
            return True
    return False


def insert_tokens(insns: list[Insn], uops: list[Uop]) -> list[Insn]:
    """The stream with every dependency flag recomputed (existing ones are dropped)."""
    flags = [
        dict.fromkeys(("pop_prev", "pop_next", "push_prev", "push_next"), False) for _ in insns
    ]
    module = [module_of(i) for i in insns]
    acc = [accesses(i, uops) for i in insns]

    def sync(
        consumer_module: str,
        producer_module: str,
        needs,  # noqa: ANN001 - (consumer index, producer index) -> bool
        pop: str,
        push: str,
    ) -> None:
        waited = -1  # the consumer module has waited for producers up to this index
        last_producer = -1
        for k, m in enumerate(module):
            if m == producer_module:
                last_producer = k
                continue
            if m != consumer_module or last_producer <= waited:
                continue
            for p in range(last_producer, waited, -1):
                if module[p] == producer_module and needs(k, p):
                    flags[k][pop] = True
                    assert not flags[p][push]
                    flags[p][push] = True
                    waited = p
                    break

    def raw(bufs: tuple[str, ...]):  # noqa: ANN202 - consumer reads what the producer wrote
        return lambda k, p: _overlap(acc[k][0], acc[p][1], bufs)

    def war(bufs: tuple[str, ...]):  # noqa: ANN202 - consumer writes what the producer reads
        return lambda k, p: _overlap(acc[k][1], acc[p][0], bufs)

    def finish_or(rule):  # noqa: ANN001, ANN202
        return lambda k, p: isinstance(insns[k], FinishInsn) or rule(k, p)

    sync("compute", "load", raw(("inp", "wgt")), "pop_prev", "push_next")
    sync("load", "compute", war(("inp", "wgt")), "pop_next", "push_prev")
    sync("store", "compute", raw(("out",)), "pop_prev", "push_next")
    sync("compute", "store", finish_or(war(("out",))), "pop_next", "push_prev")
    return [replace(i, **f) for i, f in zip(insns, flags, strict=True)]


def uop_load(uops: list[Uop], dram_base: int) -> MemInsn:
    """The LOAD of the whole micro-op table, first in a stream."""
    return MemInsn(
        buffer=Buffer.UOP,
        sram_base=0,
        dram_base=dram_base,
        y_size=1,
        x_size=len(uops),
        x_stride=len(uops),
    )


@dataclass(frozen=True)
class AccelInsertTokens(ModulePass):
    """Every accel.program's dependency tokens, recomputed from what its instructions touch."""

    name = "accel-insert-tokens"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in [p for p in op.walk() if isinstance(p, ProgramOp)]:
            try:
                insns, uops = ir_to_program(program)  # type: ignore[arg-type]
            except UserError as err:
                raise DiagnosticError(program, f"accel-insert-tokens: {err.message}") from None
            (new,) = program_to_ir(insert_tokens(insns, uops), uops).ops
            body = new.regions[0]
            new.detach()
            old = program.body
            program.body.detach_block(old.block).erase()
            program.body.add_block(body.detach_block(body.block))
