"""The disassembler: one readable line per instruction and per micro-op, for debugging streams
and for the FileCheck tests of the encoding."""

from __future__ import annotations

from nnvm.targets.accel.isa import AluInsn, FinishInsn, GemmInsn, Insn, MemInsn, Uop


def format_insn(insn: Insn) -> str:
    """`LOAD inp sram=0 dram=64 y=3 x=58 stride=56 pad=y(1,0)x(1,1) deps=pop_next,push_next`."""
    if isinstance(insn, MemInsn):
        kind = "STORE" if insn.store else "LOAD"
        text = (
            f"{kind} {insn.buffer.name.lower()} sram={insn.sram_base} dram={insn.dram_base} "
            f"y={insn.y_size} x={insn.x_size} stride={insn.x_stride}"
        )
        pads = (insn.y_pad_before, insn.y_pad_after, insn.x_pad_before, insn.x_pad_after)
        if any(pads):
            text += " pad=y({},{})x({},{})".format(*pads)
    elif isinstance(insn, GemmInsn):
        text = (
            f"GEMM{'.reset' if insn.reset else ''} uop=[{insn.uop_begin},{insn.uop_end}) "
            f"lp=({insn.lp0},{insn.lp1}) acc=({insn.acc_f0},{insn.acc_f1}) "
            f"inp=({insn.inp_f0},{insn.inp_f1}) wgt=({insn.wgt_f0},{insn.wgt_f1})"
        )
    elif isinstance(insn, AluInsn):
        operand = f"imm={insn.imm}" if insn.use_imm else f"src=({insn.src_f0},{insn.src_f1})"
        text = (
            f"ALU {insn.op.name.lower()} uop=[{insn.uop_begin},{insn.uop_end}) "
            f"lp=({insn.lp0},{insn.lp1}) dst=({insn.dst_f0},{insn.dst_f1}) {operand}"
        )
    elif isinstance(insn, FinishInsn):
        text = "FINISH"
    else:
        raise TypeError(f"not an accel instruction: {insn!r}")
    if insn.deps:
        text += " deps=" + ",".join(insn.deps)
    return text


def format_uop(uop: Uop) -> str:
    return f"acc={uop.acc} inp={uop.inp} wgt={uop.wgt}"


def format_program(insns: list[Insn], uops: list[Uop] = ()) -> str:
    """The listing: `  12: GEMM ...` per instruction, then `uop   3: acc=...` per micro-op."""
    lines = [f"{k:5d}: {format_insn(insn)}" for k, insn in enumerate(insns)]
    lines += [f"uop {k:5d}: {format_uop(u)}" for k, u in enumerate(uops)]
    return "".join(line + "\n" for line in lines)
