"""The machine's measured FMA peak (GFLOP/s) for the '% of peak' column: a loop of 12
independent <8 x float> FMA chains, compiled through our LLVM target, on 1..N threads."""

from __future__ import annotations

import ctypes
import threading
import time

from nnvm.targets.llvm.compile import compile_jit

CHAINS = 12


def _ir() -> str:
    splat = lambda v: "<" + ", ".join([f"float {v}"] * 8) + ">"  # noqa: E731
    lines = [
        "declare <8 x float> @llvm.fma.v8f32(<8 x float>, <8 x float>, <8 x float>)",
        "define float @fma_peak(i64 %n, float %m, float %c) {",
        "entry:",
        "  %m1 = insertelement <8 x float> poison, float %m, i32 0",
        "  %mv = shufflevector <8 x float> %m1, <8 x float> poison, <8 x i32> zeroinitializer",
        "  %c1 = insertelement <8 x float> poison, float %c, i32 0",
        "  %cv = shufflevector <8 x float> %c1, <8 x float> poison, <8 x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
    ]
    for c in range(CHAINS):
        lines.append(f"  %a{c} = phi <8 x float> [{splat('1.0')}, %entry], [%b{c}, %loop]")
    for c in range(CHAINS):
        lines.append(
            f"  %b{c} = call <8 x float> @llvm.fma.v8f32(<8 x float> %a{c}, "
            "<8 x float> %mv, <8 x float> %cv)"
        )
    lines += [
        "  %i1 = add i64 %i, 1",
        "  %done = icmp eq i64 %i1, %n",
        "  br i1 %done, label %exit, label %loop",
        "exit:",
        "  %s0 = fadd <8 x float> %b0, %b1",
    ]
    for c in range(2, CHAINS):
        lines.append(f"  %s{c - 1} = fadd <8 x float> %s{c - 2}, %b{c}")
    lines += [f"  %r = extractelement <8 x float> %s{CHAINS - 2}, i32 0", "  ret float %r", "}"]
    return "\n".join(lines) + "\n"


def measure_peak(threads: int = 1, iterations: int = 20_000_000, repeat: int = 3) -> float:
    """Best GFLOP/s over `repeat` runs of `iterations` loop trips on each of `threads` threads."""
    module = compile_jit(_ir())
    kernel = module.function(
        "fma_peak", ctypes.c_float, [ctypes.c_int64, ctypes.c_float, ctypes.c_float]
    )
    best = 0.0
    for _ in range(repeat):
        workers = [threading.Thread(target=kernel, args=(iterations, 0.999, 1e-3)) for _ in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
        best = max(best, threads * iterations * CHAINS * 8 * 2 / seconds / 1e9)
    return best


if __name__ == "__main__":
    for t in (1, 2):
        print(f"FMA peak on {t} thread(s): {measure_peak(t):.1f} GFLOP/s")
