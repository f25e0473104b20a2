"""Instructions + micro-ops <-> an `accel.program` (dialect.py): each instruction becomes one op,
its dependency flags `accel.token_pop` ops before it and `accel.token_push` ops after it, named
by the queue (which module the instruction runs on decides the queue)."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IntegerAttr, ModuleOp, StringAttr, UnitAttr, i64
from xdsl.ir import Operation

from nnvm.support.diagnostics import parse_module, verify_located
from nnvm.support.errors import UserError
from nnvm.targets.accel.dialect import (
    ACCEL,
    AluOp,
    DmaLoadOp,
    DmaStoreOp,
    FinishOp,
    GemmOp,
    MicroOpsOp,
    ProgramOp,
    TokenPopOp,
    TokenPushOp,
    i64_array,
)
from nnvm.targets.accel.isa import AluInsn, Buffer, FinishInsn, GemmInsn, Insn, MemInsn, Uop
from nnvm.targets.accel.isa import AluOp as AluCode
from nnvm.targets.accel.simulator import NEXT_MODULE, PREV_MODULE, module_of


def _int(v: int) -> IntegerAttr:
    return IntegerAttr(v, i64)


def _queue(module: str, flag: str) -> str:
    other = (PREV_MODULE if flag.endswith("prev") else NEXT_MODULE)[module]
    return f"{other}->{module}" if flag.startswith("pop") else f"{module}->{other}"


def _insn_op(insn: Insn) -> Operation:
    if isinstance(insn, MemInsn):
        common = {
            "sram_base": _int(insn.sram_base),
            "dram_base": _int(insn.dram_base),
            "size": i64_array([insn.y_size, insn.x_size]),
            "x_stride": _int(insn.x_stride),
        }
        if insn.store:
            return DmaStoreOp.create(properties=common)
        pad = [insn.y_pad_before, insn.y_pad_after, insn.x_pad_before, insn.x_pad_after]
        props = {"buffer": StringAttr(insn.buffer.name.lower()), **common, "pad": i64_array(pad)}
        return DmaLoadOp.create(properties=props)
    if isinstance(insn, GemmInsn | AluInsn):
        props = {
            "uops": i64_array([insn.uop_begin, insn.uop_end]),
            "loops": i64_array([insn.lp0, insn.lp1]),
        }
        if isinstance(insn, GemmInsn):
            for name in ("acc", "inp", "wgt"):
                props[name] = i64_array([getattr(insn, f"{name}_f0"), getattr(insn, f"{name}_f1")])
            if insn.reset:
                props["reset"] = UnitAttr()
            return GemmOp.create(properties=props)
        props["op"] = StringAttr(insn.op.name.lower())
        props["dst"] = i64_array([insn.dst_f0, insn.dst_f1])
        props["src"] = i64_array([insn.src_f0, insn.src_f1])
        if insn.use_imm:
            props["imm"] = _int(insn.imm)
        return AluOp.create(properties=props)
    return FinishOp.create()


def program_to_ir(insns: list[Insn], uops: list[Uop]) -> ModuleOp:
    """The `accel.program` of a stream, in a module."""
    ops: list[Operation] = [
        MicroOpsOp.create(
            properties={
                "acc": i64_array([u.acc for u in uops]),
                "inp": i64_array([u.inp for u in uops]),
                "wgt": i64_array([u.wgt for u in uops]),
            }
        )
    ]
    for insn in insns:
        module = module_of(insn)
        for flag in ("pop_prev", "pop_next"):
            if getattr(insn, flag):
                ops.append(
                    TokenPopOp.create(properties={"queue": StringAttr(_queue(module, flag))})
                )
        ops.append(_insn_op(insn))
        for flag in ("push_prev", "push_next"):
            if getattr(insn, flag):
                ops.append(
                    TokenPushOp.create(properties={"queue": StringAttr(_queue(module, flag))})
                )
    return ModuleOp([ProgramOp(ops)])


def _pair(attr) -> tuple[int, int]:
    a, b = attr.get_values()
    return int(a), int(b)


def _op_insn(op: Operation, flags: dict[str, bool]) -> Insn:
    p = op.properties
    if isinstance(op, DmaLoadOp | DmaStoreOp):
        y, x = _pair(p["size"])
        common = dict(
            sram_base=p["sram_base"].value.data,
            dram_base=p["dram_base"].value.data,
            y_size=y,
            x_size=x,
            x_stride=p["x_stride"].value.data,
            **flags,
        )
        if isinstance(op, DmaStoreOp):
            return MemInsn(store=True, buffer=Buffer.OUT, **common)
        yb, ya, xb, xa = (int(v) for v in p["pad"].get_values())
        return MemInsn(
            buffer=Buffer[p["buffer"].data.upper()],
            y_pad_before=yb,
            y_pad_after=ya,
            x_pad_before=xb,
            x_pad_after=xa,
            **common,
        )
    if isinstance(op, GemmOp | AluOp):
        (begin, end), (lp0, lp1) = _pair(p["uops"]), _pair(p["loops"])
        loops = dict(uop_begin=begin, uop_end=end, lp0=lp0, lp1=lp1, **flags)
        if isinstance(op, GemmOp):
            factors = {
                f"{n}_f{k}": v for n in ("acc", "inp", "wgt") for k, v in enumerate(_pair(p[n]))
            }
            return GemmInsn(reset="reset" in p, **loops, **factors)
        imm = p.get("imm")
        (d0, d1), (s0, s1) = _pair(p["dst"]), _pair(p["src"])
        return AluInsn(
            op=AluCode[p["op"].data.upper()],
            use_imm=imm is not None,
            imm=imm.value.data if imm is not None else 0,
            dst_f0=d0,
            dst_f1=d1,
            src_f0=s0,
            src_f1=s1,
            **loops,
        )
    return FinishInsn(**flags)


def ir_to_program(module: ModuleOp) -> tuple[list[Insn], list[Uop]]:
    """The stream of the module's one `accel.program`; UserError for a token op that does not
    fit the instruction it belongs to."""
    programs = [op for op in module.walk() if isinstance(op, ProgramOp)]
    if len(programs) != 1:
        raise UserError(f"expected one accel.program, found {len(programs)}")
    ops = list(programs[0].body.block.ops)
    insns: list[Insn] = []
    uops: list[Uop] = []
    pending: list[str] = []
    k = 0
    while k < len(ops):
        op = ops[k]
        k += 1
        if isinstance(op, MicroOpsOp):
            triples = zip(
                op.acc.get_values(), op.inp.get_values(), op.wgt.get_values(), strict=True
            )
            uops += [Uop(int(a), int(i), int(w)) for a, i, w in triples]
            continue
        if isinstance(op, TokenPopOp):
            pending.append(op.queue.data)
            continue
        if isinstance(op, TokenPushOp):
            raise UserError(f"accel.token_push {op.queue.data!r} follows no instruction")
        pushes = []
        while k < len(ops) and isinstance(ops[k], TokenPushOp):
            pushes.append(ops[k].queue.data)
            k += 1
        probe = _op_insn(op, {})
        module = module_of(probe)
        flags = {}
        for flag in ("pop_prev", "pop_next", "push_prev", "push_next"):
            if (PREV_MODULE if flag.endswith("prev") else NEXT_MODULE)[module] is None:
                continue
            flags[flag] = _queue(module, flag) in (pending if flag.startswith("pop") else pushes)
        used = {_queue(module, f) for f, on in flags.items() if on}
        stray = [q for q in pending + pushes if q not in used]
        if stray:
            raise UserError(
                f"instruction {len(insns)} ({op.name}) runs on the {module} module; it cannot use queue {stray[0]!r}"
            )
        insns.append(_op_insn(op, flags))
        pending = []
    if pending:
        raise UserError(f"accel.token_pop {pending[0]!r} precedes no instruction")
    return insns, uops


def accel_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(ACCEL)
    return ctx


def parse_program(text: str, name: str = "<string>") -> tuple[list[Insn], list[Uop]]:
    """Parse and verify an accel.program's text, back to its stream."""
    module = parse_module(accel_context(), text, name)
    for diag in verify_located(module, name):
        raise UserError(diag.message, diag.location or name)
    return ir_to_program(module)
