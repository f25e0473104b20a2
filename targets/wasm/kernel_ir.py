"""What a kernel's LLVM IR (as the CPU path prints it) needs changed for wasm32 before codegen:
calls that have no wasm instruction and would become a libm call per lane, and the scratch
allocator, whose i64 arguments do not match wasi-libc's."""

from __future__ import annotations

import re

SCRATCH_ALLOC = re.compile(r'@"?aligned_alloc"?\(')
"""The kernels' scratch allocator (i64 size and alignment); nnvm_wasm.c defines it for wasm32."""
EXACT_FMA = re.compile(r'(@"?)llvm\.fma\.')
"""wasm has no fused multiply-add instruction: an exactly rounded llvm.fma is a call of libm's
software fmaf per lane (62% of the ResNet-style model's time). The kernels' multiply-accumulates
become llvm.fmuladd (a multiply and an add here; one rounding more than a CPU with FMA)."""
MIN_MAX = re.compile(
    r'^(\s*)(%"[^"]+"|%[\w.$-]+) = call (<(\d+) x (?:float|double)>|float|double) '
    r'@"?llvm\.(minnum|maxnum)\.\w+"?\((.*)\)\s*$'
)
"""llvm.minnum/maxnum (the clamps of exp, tanh, erf): wasm's min/max propagate NaN where these
return the other operand, so LLVM calls fminf/fmaxf per lane (9% of the transformer's time).
They become compares and a select, which stay in vectors."""
DECLARATION = re.compile(r'^declare [^@]*@"?([^"(]+)"?\(')


def _min_max(found: re.Match[str]) -> list[str] | None:
    """minnum(a, b) = select(a < b or b is NaN, a, b); maxnum with a > b."""
    indent, result, ty, lanes, which, args = found.groups()
    sep = f", {ty} "
    if not args.startswith(f"{ty} ") or args.count(sep) != 1:
        return None
    a, b = args[len(ty) + 1 :].split(sep)
    mask = f"<{lanes} x i1>" if lanes else "i1"
    name = result[2:-1] if result.startswith('%"') else result[1:]
    t = [f'%"{name}.mm{k}"' for k in range(3)]
    order = "olt" if which == "minnum" else "ogt"
    return [
        f"{indent}{t[0]} = fcmp {order} {ty} {a}, {b}",
        f"{indent}{t[1]} = fcmp uno {ty} {b}, {b}",
        f"{indent}{t[2]} = or {mask} {t[0]}, {t[1]}",
        f"{indent}{result} = select {mask} {t[2]}, {ty} {a}, {ty} {b}",
    ]


def wasm_kernel_ir(text: str) -> str:
    """A kernel's LLVM IR with the changes above (a declaration made twice by the renaming is
    kept once; one left unused is harmless)."""
    text = EXACT_FMA.sub(r"\1llvm.fmuladd.", SCRATCH_ALLOC.sub('@"nnvm_wasm_scratch_alloc"(', text))
    declared: set[str] = set()
    lines: list[str] = []
    for line in text.splitlines():
        found = DECLARATION.match(line)
        if found:
            if found.group(1) in declared:
                continue
            declared.add(found.group(1))
        call = MIN_MAX.match(line)
        expanded = _min_max(call) if call else None
        lines.extend(expanded or [line])
    return "\n".join(lines) + "\n"
