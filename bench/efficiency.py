"""The kernel-efficiency report (issue 14): per model, the kernels sorted by time, each with its
GFLOP/s, GB/s and its share of the machine's roof.

A kernel's roof time is the least time the machine could take for it: its floating-point work
at the measured FMA peak, or the bytes it must move (its arguments and results, once each) at
the measured copy bandwidth, or the bytes it must read (its arguments) at the measured read
bandwidth, whichever is longest (the roofline; dialects/te/work.py counts the work). The read
roof matters on one thread: one core reads slower than a copy moves bytes, so a kernel that
only streams its weights (a matmul of few rows) is bound by reading them. A recurrence (an
LSTM) reads its recurrent weights again at every step after the first (work.py `rereads`);
those reads come from cache, at the bandwidth measured for re-reading a tensor of that size
(bench/peak.py `measure_reread_bandwidth`: its `cache` roof), which is faster than memory but
not free: a 1 MiB matrix re-read 31 times takes 0.25 ms on one thread of this machine, where
its multiply-adds take 0.13 ms at the FMA peak. `% roof` is roof time over measured time: 100%
is as fast as the machine goes. Kernels are timed one by one by the debug runtime, in ROUNDS
rounds (each the median of as many runs as fill ROUND_SECONDS; a kernel's time is the median of
its rounds); the roofs come from bench/peak.py on the same thread count, measured before every
round of the suite, the highest kept (another tenant of the host only ever lowers them).

    python -m bench --efficiency resnet18 [--threads 1]
    python -m bench --suite real --efficiency        # every suite model, one report each
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import onnx

#: The report's bar: a kernel is listed when it takes more than this share of its model's time
#: and runs below LOW_ROOF_PCT of its roof.
LOW_ROOF_PCT = 50.0
LISTED_SHARE_PCT = 5.0
#: Kernels shorter than this are not listed: the debug runtime's own cost of a call (a ctypes
#: call and the timer, some microseconds) is then a large part of what it measures.
MIN_TIMED_MS = 0.05


@dataclass
class KernelRow:
    kernel: str
    calls: int
    ms: float
    share_pct: float
    gflops: float
    gbps: float
    bound: str  # "compute", "memory" (the copy roof), "read" or "cache" (re-reads): the highest
    roof_pct: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Report:
    model: str
    threads: int
    peak_gflops: float
    bandwidth_gbps: float
    read_gbps: float
    total_ms: float
    rows: list[KernelRow]
    rounds: int = 1
    runs: int = 0
    stalls: int = 0
    """How many times the thread pool waited on a worker another process had descheduled
    while this model was profiled (nnvm_threads.c: it then ran on fewer threads a while)."""

    def low(self) -> list[KernelRow]:
        """The kernels the issue's bar names: above LISTED_SHARE_PCT of the time, below
        LOW_ROOF_PCT of the roof."""
        return [
            r
            for r in self.rows
            if r.share_pct > LISTED_SHARE_PCT
            and r.roof_pct < LOW_ROOF_PCT
            and r.ms / r.calls >= MIN_TIMED_MS
        ]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["low"] = [r.kernel for r in self.low()]
        return d


def kernel_works(kernel_ir: dict[str, str]) -> dict:
    """Kernel name -> Work, from the graph's kernel IR lowered to te."""
    from xdsl.dialects import func

    from nnvm.dialects.te.work import kernel_work
    from nnvm.lowering.to_te.lower_to_te import LowerToTE
    from nnvm.registry import make_context
    from nnvm.support.diagnostics import parse_module

    ctx = make_context()
    works = {}
    for name, text in kernel_ir.items():
        module = parse_module(ctx, text, name)
        LowerToTE().apply(ctx, module)
        fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
        works[name] = kernel_work(fn)
    return works


ROUNDS = 5
"""Profile rounds per model and thread count. `python -m bench --suite real --efficiency`
interleaves them across the suite's models (round 1 of every model, then round 2, ...), so a
stretch in which another tenant of the host slows this one (a second of 2-thread kernels at
their 1-thread times was seen) falls in one round of a model, not all of them; a kernel's time
is the median of its rounds' medians."""

ROUND_SECONDS = 0.2
"""How long one round profiles a model: as many runs as fill it, from 3 to 50. Five runs of a
small model (20 ms of MobileNetV2) in one stretch made a kernel's median hostage to one slow
stretch: in the whole suite's report its stride-2 depthwise conv measured 0.32 ms, 0.09-0.12
in reports of it alone."""


def profile_runs(seconds_per_run: float) -> int:
    """Runs of a model taking `seconds_per_run` that fill ROUND_SECONDS, from 3 to 50."""
    return max(3, min(50, math.ceil(ROUND_SECONDS / max(seconds_per_run, 1e-6))))


class ProfiledModel:
    """A model built once (debug runtime), profiled in rounds on any thread count."""

    def __init__(self, name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray]):
        from bench.harness import compile_ours

        self.name = name
        self.runtime, _ = compile_ours(model, 1, debug=True)
        self.runtime.set_input(**inputs)
        self.works = kernel_works(self.runtime.graph.extra["kernel_ir"])
        self.rounds: dict[int, list[list[float]]] = {}
        self.runs: dict[int, int] = {}
        self.stalls: dict[int, int] = {}

    def profile_round(self, threads: int, number: int | None = None) -> None:
        """One round: the median ms of each node over `number` runs (default: as many as fill
        ROUND_SECONDS), and the thread pool's stalls meanwhile."""
        import nnvm

        nnvm.set_num_threads(threads)
        if number is None:
            start = time.perf_counter()
            self.runtime.run()
            number = profile_runs(time.perf_counter() - start)
        profile = self.runtime.profile(number)
        self.rounds.setdefault(threads, []).append([row.ms for row in profile.rows])
        self.runs[threads] = self.runs.get(threads, 0) + number
        self.stalls[threads] = self.stalls.get(threads, 0) + (profile.stalls or 0)

    def report(
        self,
        threads: int,
        peak_gflops: float,
        bandwidth_gbps: float,
        read_gbps: float,
        reread_gbps: Callable[[int, int], float] | None = None,
    ) -> Report:
        """The report over the rounds profiled on `threads` threads: each node's time is the
        median of its rounds' medians."""
        from bench.peak import measure_reread_bandwidth

        reread = reread_gbps or measure_reread_bandwidth
        graph = self.runtime.graph
        rounds = self.rounds[threads]
        per_node = [float(np.median(col)) for col in zip(*rounds, strict=True)]
        by_kernel: dict[str, list[float]] = {}
        for node, ms in zip(graph.nodes, per_node, strict=True):
            by_kernel.setdefault(node.kernel, []).append(ms)
        total = sum(per_node) or 1e-9
        rows = []
        for kernel, times in by_kernel.items():
            ms = sum(times)
            work = self.works[kernel]
            seconds = max(ms * 1e-3, 1e-9)
            roofs = {
                "compute": len(times) * work.flops / (peak_gflops * 1e9),
                "memory": len(times) * work.bytes / (bandwidth_gbps * 1e9),
                "read": len(times) * work.read_bytes / (read_gbps * 1e9),
                "cache": len(times)
                * sum(n / (reread(threads, size) * 1e9) for n, size in work.rereads),
            }
            bound = max(roofs, key=roofs.__getitem__)
            rows.append(
                KernelRow(
                    kernel=kernel,
                    calls=len(times),
                    ms=ms,
                    share_pct=100.0 * ms / total,
                    gflops=len(times) * work.flops / seconds / 1e9,
                    gbps=len(times) * work.bytes / seconds / 1e9,
                    bound=bound,
                    roof_pct=100.0 * roofs[bound] / seconds,
                )
            )
        rows.sort(key=lambda r: -r.ms)
        return Report(
            self.name,
            threads,
            peak_gflops,
            bandwidth_gbps,
            read_gbps,
            total,
            rows,
            rounds=len(rounds),
            runs=self.runs[threads],
            stalls=self.stalls[threads],
        )


def efficiency_report(
    name: str,
    model: onnx.ModelProto,
    inputs: dict[str, np.ndarray],
    threads: int,
    peak_gflops: float,
    bandwidth_gbps: float,
    read_gbps: float,
    number: int | None = None,
    reread_gbps: Callable[[int, int], float] | None = None,
    rounds: int = ROUNDS,
) -> Report:
    """One model's report: `rounds` rounds in a row of `number` runs each (default:
    `profile_runs`). `reread_gbps(threads, nbytes)`: the bandwidth of re-reading a tensor of
    nbytes (default: measured, bench/peak.py)."""
    profiled = ProfiledModel(name, model, inputs)
    for _ in range(rounds):
        profiled.profile_round(threads, number)
    return profiled.report(threads, peak_gflops, bandwidth_gbps, read_gbps, reread_gbps)


def report_table(report: Report, top: int = 15) -> str:
    width = max([24, *(len(r.kernel) for r in report.rows[:top])])
    head = (
        f"{report.model} on {report.threads} thread(s): {report.total_ms:.2f} ms in kernels; "
        f"roofs {report.peak_gflops:.0f} GFLOP/s, {report.bandwidth_gbps:.1f} GB/s copy, "
        f"{report.read_gbps:.1f} GB/s read; {report.runs} runs in {report.rounds} round(s)"
        + (f", {report.stalls} pool stall(s)" if report.stalls else "")
    )
    header = (
        f"{'kernel':<{width}} {'calls':>5} {'ms':>8} {'%time':>6} {'GFLOP/s':>8} {'GB/s':>7} "
        f"{'bound':>7} {'%roof':>6}"
    )
    lines = [head, header, "-" * len(header)]
    for r in report.rows[:top]:
        lines.append(
            f"{r.kernel:<{width}} {r.calls:>5} {r.ms:8.3f} {r.share_pct:6.1f} {r.gflops:8.1f} "
            f"{r.gbps:7.1f} {r.bound:>7} {r.roof_pct:6.1f}"
        )
    if len(report.rows) > top:
        rest = report.rows[top:]
        lines.append(
            f"({len(rest)} more kernels: {sum(r.ms for r in rest):.3f} ms, "
            f"{sum(r.share_pct for r in rest):.1f}% of the time)"
        )
    low = report.low()
    lines.append(
        f"below {LOW_ROOF_PCT:.0f}% of roof and above {LISTED_SHARE_PCT:.0f}% of the time: "
        + (", ".join(f"{r.kernel} ({r.roof_pct:.0f}%)" for r in low) if low else "none")
    )
    return "\n".join(lines)
