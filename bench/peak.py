"""The machine's measured roofs for the efficiency report, on 1..N threads:

* the FMA peak (GFLOP/s): a loop of 12 independent FMA chains on the widest float vectors the
  host has (<16 x float> with AVX-512, else <8 x float>), compiled through our LLVM target;
* the copy bandwidth (GB/s, bytes read plus bytes written): numpy copying a buffer;
* the read bandwidth (GB/s): a loop summing 8 streams of vectors, compiled through our LLVM
  target. One core reads slower than a copy moves bytes (this machine, one thread: 15-16 GB/s
  against 22-25), so a kernel that mostly reads (a matmul streaming its weights) cannot reach
  the copy roof;
* the re-read bandwidth of a tensor of a given size (GB/s): the same loop over one buffer
  again and again, which then sits in whichever cache holds it (a recurrence's weights)."""

from __future__ import annotations

import ctypes
import threading
import time
from functools import cache

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
        *_loop_start(vec, CHAINS, splat("1.0")),
    ]
    for c in range(CHAINS):
        lines.append(
            f"  %b{c} = call {vec} @llvm.fma.v{width}f32({vec} %a{c}, {vec} %mv, {vec} %cv)"
        )
    return "\n".join(lines + _loop_end(vec, CHAINS)) + "\n"


def _loop_start(vec: str, chains: int, initial: str) -> list[str]:
    """From the entry block into a loop over `%i` whose `chains` vectors %a0.. start at
    `initial` and take the %b0.. of the iteration before."""
    phis = [f"  %a{c} = phi {vec} [{initial}, %entry], [%b{c}, %loop]" for c in range(chains)]
    return ["  br label %loop", "loop:", "  %i = phi i64 [0, %entry], [%i1, %loop]", *phis]


def _loop_end(vec: str, chains: int) -> list[str]:
    """The loop's latch (`%i` up to `%n`) and, after it, `_exit_sum`."""
    return [
        "  %i1 = add i64 %i, 1",
        "  %done = icmp eq i64 %i1, %n",
        "  br i1 %done, label %exit, label %loop",
        *_exit_sum(vec, chains),
    ]


def _exit_sum(vec: str, chains: int) -> list[str]:
    """The `exit` block: the sum of the `chains` vectors %b0.. (so no chain is dead code),
    lane 0 returned."""
    lines = ["exit:", f"  %s0 = fadd {vec} %b0, %b1"]
    for c in range(2, chains):
        lines.append(f"  %s{c - 1} = fadd {vec} %s{c - 2}, %b{c}")
    return [*lines, f"  %r = extractelement {vec} %s{chains - 2}, i32 0", "  ret float %r", "}"]


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


READ_STREAMS = 8


def _read_ir(width: int) -> str:
    """sum over i < n of the vectors at p + (s stride + i) for READ_STREAMS streams s: each
    stream a sequential read, so the hardware prefetchers see several at once."""
    vec = f"<{width} x float>"
    lines = [
        "define float @read_sum(ptr %p, i64 %n, i64 %stride) {",
        "entry:",
        *_loop_start(vec, READ_STREAMS, "zeroinitializer"),
    ]
    lines += _stream_reads(vec, "load")
    return "\n".join(lines + _loop_end(vec, READ_STREAMS)) + "\n"


def _stream_reads(vec: str, load: str) -> list[str]:
    """The loop body of the read kernels: %b{s} = %a{s} + the vector at p + (s stride + i)."""
    lines = []
    for s in range(READ_STREAMS):
        lines += [
            f"  %o{s} = mul i64 %stride, {s}",
            f"  %j{s} = add i64 %o{s}, %i",
            f"  %q{s} = getelementptr {vec}, ptr %p, i64 %j{s}",
            f"  %v{s} = {load} {vec}, ptr %q{s}, align 64",
            f"  %b{s} = fadd {vec} %a{s}, %v{s}",
        ]
    return lines


def measure_read_bandwidth(threads: int = 1, megabytes: int = 256, repeat: int = 5) -> float:
    """Best read bandwidth (GB/s) of `threads` threads, each summing its own share of a
    `megabytes` buffer in READ_STREAMS sequential streams (the kernel releases the GIL: a
    ctypes call): the roof of a kernel's reads."""
    width = vector_width()
    module = compile_jit(_read_ir(width))
    kernel = module.function(
        "read_sum", ctypes.c_float, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    )
    per_stream = megabytes * (1 << 20) // (width * 4) // threads // READ_STREAMS
    buffers = [np.ones(per_stream * READ_STREAMS * width, np.float32) for _ in range(threads)]
    calls = [(kernel, (b.ctypes.data, per_stream, per_stream)) for b in buffers]
    seconds = _fastest(calls, repeat)
    return threads * per_stream * READ_STREAMS * width * 4 / seconds / 1e9


def _reread_ir(width: int) -> str:
    """`read_again(p, n, stride, reps)`: `read_sum`'s streams over the same buffer `reps`
    times (the reads of a recurrence's weights, step after step, from cache)."""
    vec = f"<{width} x float>"
    lines = [
        "define float @read_again(ptr %p, i64 %n, i64 %stride, i64 %reps) {",
        "entry:",
        "  br label %pass",
        "pass:",
        "  %k = phi i64 [0, %entry], [%k1, %passed]",
        *[
            f"  %c{s} = phi {vec} [zeroinitializer, %entry], [%b{s}, %passed]"
            for s in range(READ_STREAMS)
        ],
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %pass], [%i1, %loop]",
        *[f"  %a{s} = phi {vec} [%c{s}, %pass], [%b{s}, %loop]" for s in range(READ_STREAMS)],
    ]
    lines += _stream_reads(vec, "load volatile")
    lines += [
        "  %i1 = add i64 %i, 1",
        "  %more = icmp ult i64 %i1, %n",
        "  br i1 %more, label %loop, label %passed",
        "passed:",
        "  %k1 = add i64 %k, 1",
        "  %again = icmp ult i64 %k1, %reps",
        "  br i1 %again, label %pass, label %exit",
        *_exit_sum(vec, READ_STREAMS),
    ]
    return "\n".join(lines) + "\n"


def measure_reread_bandwidth(threads: int, nbytes: int, repeat: int = 5) -> float:
    """Read bandwidth (GB/s) of `threads` threads each reading its share of an `nbytes`
    tensor over and over (the share in READ_STREAMS sequential streams, some MiB of reads a
    call): the roof of a recurrence re-reading its weights from whichever cache holds them.
    Measured once per size (rounded up to a power of two) and thread count."""
    share = max(nbytes // threads, 4096)
    return _reread_bandwidth(threads, 1 << (share - 1).bit_length(), repeat)


@cache
def _reread_kernel(width: int):
    return compile_jit(_reread_ir(width)).function(
        "read_again",
        ctypes.c_float,
        [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64],
    )


@cache
def _reread_bandwidth(threads: int, share: int, repeat: int) -> float:
    width = vector_width()
    kernel = _reread_kernel(width)
    per_stream = max(share // (width * 4) // READ_STREAMS, 1)
    reps = max((64 << 20) // share, 1)
    buffers = [np.ones(per_stream * READ_STREAMS * width, np.float32) for _ in range(threads)]
    calls = [(kernel, (b.ctypes.data, per_stream, per_stream, reps)) for b in buffers]
    seconds = _fastest(calls, repeat)
    return threads * reps * per_stream * READ_STREAMS * width * 4 / seconds / 1e9


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
        print(f"read bandwidth on {t} thread(s): {measure_read_bandwidth(t):.1f} GB/s")
        for kib in (256, 1024, 4096):
            gbps = measure_reread_bandwidth(t, kib << 10)
            print(f"re-reading {kib} KiB on {t} thread(s): {gbps:.1f} GB/s")
