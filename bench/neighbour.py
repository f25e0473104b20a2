"""Latency beside a busy neighbour: one CPU-bound process next to both runtimes.

On a 2-CPU machine a neighbour that spins takes one core; a runtime whose parallel loops wait
for every worker (a join barrier) then stalls for a scheduler time slice whenever its worker
is descheduled. This measures, per model: each runtime's quiet 1-thread latency, and its
2-thread latency with the neighbour running (median and 90th percentile of single calls),
interleaved call by call so both see the same neighbour. The issue's bar: busy 2-thread within
2x of quiet 1-thread. Nothing here asserts a time."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import onnx

from bench.harness import compile_ours, ort_session, settle


@dataclass
class NeighbourResult:
    model: str
    ours_quiet_1t_ms: float
    ours_busy_2t_ms: float
    ours_busy_2t_p90_ms: float
    ort_quiet_1t_ms: float
    ort_busy_2t_ms: float
    ort_busy_2t_p90_ms: float

    def as_dict(self) -> dict:
        return asdict(self)


def spinning_neighbour() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


BLOCK_S = 0.25
"""Each runtime is called for this long before the other's turn. Call-by-call alternation let
one runtime's idle pool threads (onnxruntime's spin for a while after each run) take cores
from the other's run: a second neighbour that only one of them brought."""


def _calls(fns, seconds: float) -> list[list[float]]:
    """Per-call seconds of each fn, the fns taking turns in blocks of BLOCK_S (the first call
    of a block, which may find the pool asleep or the other's threads still spinning, is not
    kept) until `seconds` have passed."""
    out: list[list[float]] = [[] for _ in fns]
    stop = time.perf_counter() + seconds
    while time.perf_counter() < stop or min(len(t) for t in out) < 5:
        for k, fn in enumerate(fns):
            fn()
            block_end = time.perf_counter() + BLOCK_S
            while True:
                start = time.perf_counter()
                fn()
                end = time.perf_counter()
                out[k].append(end - start)
                if end >= block_end:
                    break
    return out


def _ms(values: list[float], q: float | None = None) -> float:
    if q is None:
        return statistics.median(values) * 1e3
    return float(np.percentile(values, q)) * 1e3


def neighbour_compare(
    name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], seconds: float = 3.0
) -> NeighbourResult:
    import nnvm

    runtime, _ = compile_ours(model, 2)
    sessions = {t: ort_session(model, t) for t in (1, 2)}
    runtime.run(**inputs)

    def ours(threads: int):
        def call() -> None:
            nnvm.set_num_threads(threads)
            runtime.run()

        return call

    def theirs(threads: int):
        return lambda: sessions[threads].run(None, inputs)

    settle()
    quiet = _calls([ours(1), theirs(1)], seconds)
    neighbour = spinning_neighbour()
    try:
        time.sleep(0.3)  # let it take its core
        busy = _calls([ours(2), theirs(2)], seconds)
    finally:
        neighbour.kill()
        neighbour.wait()
    nnvm.set_num_threads(2)
    return NeighbourResult(
        model=name,
        ours_quiet_1t_ms=_ms(quiet[0]),
        ours_busy_2t_ms=_ms(busy[0]),
        ours_busy_2t_p90_ms=_ms(busy[0], 90),
        ort_quiet_1t_ms=_ms(quiet[1]),
        ort_busy_2t_ms=_ms(busy[1]),
        ort_busy_2t_p90_ms=_ms(busy[1], 90),
    )


def neighbour_table(results: list[NeighbourResult]) -> str:
    header = (
        f"{'model':<12} {'ours 1t quiet':>13} {'ours 2t busy (p90)':>19} {'busy/quiet':>10} "
        f"{'ORT 1t quiet':>12} {'ORT 2t busy (p90)':>18} {'busy/quiet':>10}"
    )
    rows = [header, "-" * len(header)]
    for r in results:
        rows.append(
            f"{r.model:<12} {r.ours_quiet_1t_ms:>13.3f} "
            f"{f'{r.ours_busy_2t_ms:.3f} ({r.ours_busy_2t_p90_ms:.3f})':>19} "
            f"{r.ours_busy_2t_ms / r.ours_quiet_1t_ms:>10.2f} {r.ort_quiet_1t_ms:>12.3f} "
            f"{f'{r.ort_busy_2t_ms:.3f} ({r.ort_busy_2t_p90_ms:.3f})':>18} "
            f"{r.ort_busy_2t_ms / r.ort_quiet_1t_ms:>10.2f}"
        )
    return "\n".join(rows)
