"""time_evaluator: time a module's `run()` where it runs (on the server for a remote one), as
TVM's time_evaluator does: each repeat runs `number` times, and `number` grows until a repeat
takes at least `min_repeat_ms`; results are seconds per run."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from nnvm.support.errors import UserError


@dataclass(frozen=True)
class TimingResult:
    """Seconds per run, one entry per repeat (mean over that repeat's `number` runs)."""

    results: tuple[float, ...]
    number: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    def to_json(self) -> dict:
        return {"results": list(self.results), "number": self.number}


def check_arguments(number: int, repeat: int, min_repeat_ms: float) -> None:
    if not isinstance(number, int) or number < 1:
        raise UserError(f"time_evaluator: number must be an integer >= 1, got {number!r}")
    if not isinstance(repeat, int) or repeat < 1:
        raise UserError(f"time_evaluator: repeat must be an integer >= 1, got {repeat!r}")
    if not isinstance(min_repeat_ms, int | float) or min_repeat_ms < 0:
        raise UserError(f"time_evaluator: min_repeat_ms must be >= 0, got {min_repeat_ms!r}")


def time_run(run, number: int = 10, repeat: int = 3, min_repeat_ms: float = 0) -> TimingResult:
    """Time `run()` (one warm-up call first, which also sizes `number` for min_repeat_ms)."""
    check_arguments(number, repeat, min_repeat_ms)
    start = time.perf_counter()
    run()
    once = time.perf_counter() - start
    if min_repeat_ms > 0 and once * number * 1e3 < min_repeat_ms:
        number = max(number, int(min_repeat_ms / 1e3 / max(once, 1e-9)) + 1)
    results = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            run()
        results.append((time.perf_counter() - start) / number)
    return TimingResult(tuple(results), number)
