"""The machine's measured FMA peak (GFLOP/s) for the '% of peak' column: a loop of 12
independent FMA chains on the widest float vectors the host has (<16 x float> with AVX-512,
else <8 x float>), compiled through our LLVM target, on 1..N threads."""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

from nnvm.targets.llvm.compile import compile_jit

CHAINS = 12


def vector_width() -> int:
    from nnvm.targets.cpu.target import host_features

    return 16 if host_features().get("avx512f") else 8


def _ir(width: int) -> str:
    splat = lambda v: "<" + ", ".join([f"float {v}"] * width) + ">"  # noqa: E731
    vec = f"<{width} x float>"
    zeros = f"<{width} x i32> zeroinitializer"
    lines = [
        f"declare {vec} @llvm.fma.v{width}f32({vec}, {vec}, {vec})",
        "define float @fma_peak(i64 %n, float %m, float %c) {",
        "entry:",
        f"  %m1 = insertelement {vec} poison, float %m, i32 0",
        f"  %mv = shufflevector {vec} %m1, {vec} poison, {zeros}",
        f"  %c1 = insertelement {vec} poison, float %c, i32 0",
        f"  %cv = shufflevector {vec} %c1, {vec} poison, {zeros}",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i1, %loop]",
    ]
    for c in range(CHAINS):
        lines.append(f"  %a{c} = phi {vec} [{splat('1.0')}, %entry], [%b{c}, %loop]")
    for c in range(CHAINS):
        lines.append(
            f"  %b{c} = call {vec} @llvm.fma.v{width}f32({vec} %a{c}, {vec} %mv, {vec} %cv)"
        )
    lines += [
        "  %i1 = add i64 %i, 1",
        "  %done = icmp eq i64 %i1, %n",
        "  br i1 %done, label %exit, label %loop",
        "exit:",
        f"  %s0 = fadd {vec} %b0, %b1",
    ]
    for c in range(2, CHAINS):
        lines.append(f"  %s{c - 1} = fadd {vec} %s{c - 2}, %b{c}")
    lines += [f"  %r = extractelement {vec} %s{CHAINS - 2}, i32 0", "  ret float %r", "}"]
    return "\n".join(lines) + "\n"


def measure_peak(threads: int = 1, iterations: int = 20_000_000, repeat: int = 3) -> float:
    """Best GFLOP/s over `repeat` runs of `iterations` loop trips on each of `threads` threads."""
    width = vector_width()
    module = compile_jit(_ir(width))
    kernel = module.function(
        "fma_peak", ctypes.c_float, [ctypes.c_int64, ctypes.c_float, ctypes.c_float]
    )
    calls = [(kernel, (iterations, 0.999, 1e-3))] * threads
    return threads * iterations * CHAINS * width * 2 / _fastest(calls, repeat) / 1e9


def _fastest(calls: list[tuple], repeat: int) -> float:
    """The least wall seconds, over `repeat` tries, of running each (fn, args) on its own
    thread at once."""
    best = float("inf")
    for _ in range(repeat):
        workers = [threading.Thread(target=fn, args=args) for fn, args in calls]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = min(best, time.perf_counter() - start)
    return best


def measure_bandwidth(threads: int = 1, megabytes: int = 256, repeat: int = 5) -> float:
    """Best copy bandwidth (GB/s, bytes read plus bytes written) of `threads` threads, each
    copying its own share of a `megabytes` buffer (numpy's copy releases the GIL): the memory
    roof of the efficiency report."""
    n = megabytes * (1 << 20) // 4 // threads
    pairs = [(np.ones(n, np.float32), np.empty(n, np.float32)) for _ in range(threads)]
    calls = [(np.copyto, (dst, src)) for src, dst in pairs]
    return threads * n * 4 * 2 / _fastest(calls, repeat) / 1e9


if __name__ == "__main__":
    for t in (1, 2):
        print(f"FMA peak on {t} thread(s): {measure_peak(t):.1f} GFLOP/s")
        print(f"copy bandwidth on {t} thread(s): {measure_bandwidth(t):.1f} GB/s")
