"""Tuning-log tools: distil (the best record per workload and target: what a deployment
ships), merge (several logs into one, each trial once), show (a table of what a log holds)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from nnvm.support.tuning_log import TrialRecord, TuningLog, finished_lines, read_log


def distilled(log: TuningLog) -> list[str]:
    """The lines of a log that keeps the best trial of each (workload, target) (the confirmed
    winner where the log has a confirmation, else the fastest) and the finished and confirmed
    marks."""
    best = [r for target in sorted(log.targets()) for r in log.best(target).values()]
    return [r.to_json() for r in best] + list(finished_lines(log))


def merged(logs: Sequence[TuningLog]) -> list[str]:
    """One log of several: every trial once (the same config of the same workload and target
    measured twice keeps the faster measurement), the union of the finished marks."""
    trials: dict[tuple[str, str, str], TrialRecord] = {}
    finished = TuningLog()
    for log in logs:
        finished.finished |= log.finished
        finished.confirmed.update(log.confirmed)
        finished.confirmed_speedup.update(log.confirmed_speedup)
        for r in log.trials:
            key = (r.workload, r.target, r.config_key())
            if key not in trials or r.seconds < trials[key].seconds:
                trials[key] = r
    return [r.to_json() for r in trials.values()] + list(finished_lines(finished))


def read_logs(paths: Iterable[str]) -> list[TuningLog]:
    return [read_log(p) for p in paths]


def show(log: TuningLog) -> str:
    """One row per (workload, target): trials, failures by code, default and best times."""
    rows: dict[tuple[str, str], list[TrialRecord]] = {}
    for r in log.trials:
        rows.setdefault((r.workload, r.target), []).append(r)
    lines = [
        f"{'workload':16}  {'task':34} {'trials':>6} {'failed':>6} {'first ms':>9} "
        f"{'best ms':>9} {'GFLOP/s':>8} {'gain':>6} finished"
    ]
    for (workload, target), records in rows.items():
        ok = [r for r in records if r.ok]
        failed: dict[str, int] = {}
        for r in records:
            if not r.ok:
                failed[r.error] = failed.get(r.error, 0) + 1
        first = ok[0].seconds if ok else math.inf
        best = min(ok, key=lambda r: r.seconds) if ok else None
        best_s = best.seconds if best else math.inf
        gain = first / best_s if best else math.nan
        mark = "yes" if (workload, target) in log.finished else "no"
        winner = log.confirmed.get((workload, target))
        if winner is not None:
            mark += ", kept the default" if ok and winner == ok[0].config_key() else ", confirmed"
        lines.append(
            f"{workload:16}  {records[0].task[:34]:34} {len(records):>6} {sum(failed.values()):>6} "
            f"{first * 1e3:>9.3f} {best_s * 1e3:>9.3f} "
            f"{best.gflops if best else 0.0:>8.1f} {gain:>5.2f}x {mark}"
        )
        if failed:
            lines.append(
                "    failures: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items()))
            )
    targets = sorted({r.target for r in log.trials})
    lines.append(f"{len(log.trials)} trials, {len(rows)} workloads; targets: {', '.join(targets)}")
    lines += [f"warning: {w}" for w in log.warnings]
    return "\n".join(lines)
