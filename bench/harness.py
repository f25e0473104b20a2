"""Side-by-side benchmark of nnvm and onnxruntime: the same model, input and thread count, in
one process, with interleaved rounds, after checking the outputs agree.

Before each side is timed, the process waits until the other side's thread pool has stopped
spinning (`settle`), so neither is timed against the other's busy-waiting workers.

Rounds during which other processes used the CPU (read from /proc/stat minus this process's own
CPU time) are marked and left out of the medians, so a noisy neighbour does not pass for a
regression."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import onnx
import onnxruntime as ort

#: A round is "loaded" when other processes took more than this share of one CPU.
FOREIGN_LOAD_LIMIT = 0.15


@dataclass
class Round:
    ours_ms: float
    ort_ms: float
    foreign_cpu: float
    loaded: bool


@dataclass
class Result:
    model: str
    threads: int
    ours_median_ms: float
    ours_min_ms: float
    ort_median_ms: float
    ort_min_ms: float
    ratio: float
    gflops: float
    peak_pct: float
    compile_s: float
    max_abs_error: float
    rounds: list[Round] = field(default_factory=list)
    discarded_rounds: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _busy_jiffies() -> int:
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values[:8]) - idle


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


SETTLE_WINDOW_S = 0.005
SETTLE_LIMIT_S = 1.0


def settle() -> float:
    """Wait until this process's threads are idle (below 10% of a CPU over a 5 ms window, at
    most a second); returns the seconds waited. Both runtimes' thread pools spin for a while
    after a call: onnxruntime's workers hold a whole CPU for 10-50 ms, and on a 2-CPU machine
    timing one side while the other's workers spin halves its second core (bert2 on 2 threads
    measured 4.7 ms instead of 2.9 ms right after onnxruntime's round)."""
    start = time.perf_counter()
    while time.perf_counter() - start < SETTLE_LIMIT_S:
        cpu0, wall0 = time.process_time(), time.perf_counter()
        time.sleep(SETTLE_WINDOW_S)
        if time.process_time() - cpu0 < 0.1 * (time.perf_counter() - wall0):
            break
    return time.perf_counter() - start


def _time_ms(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) * 1e3 / number


def ort_session(model: onnx.ModelProto, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def compile_ours(model: onnx.ModelProto, threads: int, debug: bool = False):
    """Import, build at O3 and create the graph runtime (the kernel-by-kernel one when
    `debug`); returns (runner, compile seconds)."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime

    nnvm.set_num_threads(threads)
    start = time.perf_counter()
    module, params = from_onnx(model)
    graph, lib, params = build(module, target="llvm", params=params, opt_level=3)
    compile_s = time.perf_counter() - start
    runtime = graph_runtime.create(graph, lib, nnvm.cpu(0), debug=debug)
    runtime.set_input(**params)
    return runtime, compile_s


def compare(
    name: str,
    model: onnx.ModelProto,
    inputs: dict[str, np.ndarray],
    threads: int,
    flops: int,
    peak_gflops: float,
    rounds: int = 7,
    min_round_s: float = 0.2,
) -> Result:
    """Check outputs agree, then time ours and ORT in interleaved rounds."""
    import nnvm

    runtime, compile_s = compile_ours(model, threads)
    session = ort_session(model, threads)
    runtime.run(**inputs)
    ours = [runtime.get_output(k) for k in range(runtime.get_num_outputs())]
    theirs = session.run(None, inputs)
    max_err = 0.0
    for got, want in zip(ours, theirs, strict=True):
        # atol scales with the output: 100 layers of float32 sums in another order (Inception
        # v3's logits) differ by a few 1e-4 of the largest value; 150 (ResNet-152's) by 4e-4:
        # ours, onnxruntime and the numpy reference executor each 7e-4 apart at scale 1.8
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        atol = max(1e-4, 5e-4 * scale)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=atol):
            raise AssertionError(
                f"{name}: our output differs from onnxruntime (max abs error "
                f"{float(np.max(np.abs(got - want)))})"
            )
        max_err = max(max_err, float(np.max(np.abs(got - want))) if got.size else 0.0)

    def run_ours() -> None:
        runtime.run()

    def run_ort() -> None:
        session.run(None, inputs)

    # calls per round so that each side runs for about min_round_s
    once = max(_time_ms(run_ours, 1), _time_ms(run_ort, 1), 1e-3)
    number = max(1, int(min_round_s * 1e3 / once))
    nnvm.set_num_threads(threads)
    hz = os.sysconf("SC_CLK_TCK")
    log: list[Round] = []
    for r in range(rounds):
        busy0, own0, wall0 = _busy_jiffies(), _own_cpu_seconds(), time.perf_counter()
        first, second = (run_ours, run_ort) if r % 2 == 0 else (run_ort, run_ours)
        settle()
        t_first = _time_ms(first, number)
        settle()
        t_second = _time_ms(second, number)
        wall = time.perf_counter() - wall0
        foreign = max(0.0, (_busy_jiffies() - busy0) / hz - (_own_cpu_seconds() - own0)) / wall
        ours_ms, ort_ms = (t_first, t_second) if first is run_ours else (t_second, t_first)
        log.append(Round(ours_ms, ort_ms, foreign, foreign > FOREIGN_LOAD_LIMIT))
    quiet = [r for r in log if not r.loaded] or log
    ours_ms = [r.ours_ms for r in quiet]
    ort_ms = [r.ort_ms for r in quiet]
    ratio = statistics.median(r.ours_ms / r.ort_ms for r in quiet)
    median = statistics.median(ours_ms)
    gflops = flops / (median * 1e-3) / 1e9 if median > 0 else 0.0
    return Result(
        model=name,
        threads=threads,
        ours_median_ms=median,
        ours_min_ms=min(ours_ms),
        ort_median_ms=statistics.median(ort_ms),
        ort_min_ms=min(ort_ms),
        ratio=ratio,
        gflops=gflops,
        peak_pct=100.0 * gflops / peak_gflops if peak_gflops else 0.0,
        compile_s=compile_s,
        max_abs_error=max_err,
        rounds=log,
        discarded_rounds=len(log) - len(quiet) if len(quiet) != len(log) else 0,
    )


def table(results: list[Result]) -> str:
    width = max([12, *(len(r.model) for r in results)])
    header = (
        f"{'model':<{width}} {'thr':>3} {'ours ms (min)':>17} {'ORT ms (min)':>17} {'ours/ORT':>8} "
        f"{'GFLOP/s':>8} {'%peak':>6} {'compile s':>9} {'quiet':>6}"
    )
    rows = [header, "-" * len(header)]
    for r in results:
        quiet = len(r.rounds) - r.discarded_rounds
        rows.append(
            f"{r.model:<{width}} {r.threads:>3} {r.ours_median_ms:9.2f} ({r.ours_min_ms:6.2f}) "
            f"{r.ort_median_ms:9.2f} ({r.ort_min_ms:6.2f}) {r.ratio:8.2f} {r.gflops:8.1f} "
            f"{r.peak_pct:6.1f} {r.compile_s:9.1f} {quiet:>3}/{len(r.rounds):<2}"
        )
    for t in sorted({r.threads for r in results}):
        ratios = [r.ratio for r in results if r.threads == t]
        geo = float(np.exp(np.mean(np.log(ratios))))
        rows.append(f"geometric mean ours/ORT at {t} thread(s): {geo:.2f}")
    return "\n".join(rows)
