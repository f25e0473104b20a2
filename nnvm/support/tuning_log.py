"""The tuning log: JSON lines, one per measured trial, appended and flushed as each finishes,
so a run killed mid-write loses at most its last line (which the reader skips with a warning).

A trial record holds what replays it without the tuner: the workload's structural key and
shapes, the target's description, the schedule as te schedule IR text (the record *is* the
schedule, so a log survives changes to the templates' knobs), the knob values that made it,
the measured times, an error code and timestamps. A `task_finished` line marks a task whose
search ended, so a resumed run tells an interrupted task from a finished one. A `confirmed`
line records the re-measurement that ends a task: the search's best and the default timed
again, alternately; the winner's config is what `best` returns for that workload (a candidate
that only won by noise, once, loses to the default there).

    {"v": 1, "kind": "trial", "workload": "9f...", "task": "fused_matmul_...", "target": "cpu=...",
     "shapes": [[1, 197, 768], ...], "config": {"matmul.rows": 4}, "schedule": "te.schedule {...}",
     "times_s": [0.0011, ...], "error": "ok", "detail": "", "flops": 232..., "started": ..., "ended": ...}
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nnvm.support.errors import UserError

LOG_VERSION = 1

ERROR_CODES = ("ok", "build", "run", "timeout", "crash", "wrong")
"""ok; build: lowering or codegen failed; run: the kernel raised; timeout: it ran past the
limit; crash: the measuring process died (a signal); wrong: its output differs from the
reference executor's. (A config whose schedule does not apply is never proposed, so it has no
code.)"""


@dataclass
class TrialRecord:
    workload: str
    task: str
    target: str
    shapes: list[list[int]]
    config: dict[str, Any]
    schedule: str
    times_s: list[float]
    error: str = "ok"
    detail: str = ""
    flops: int = 0
    started: float = 0.0
    ended: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error == "ok" and bool(self.times_s)

    @property
    def seconds(self) -> float:
        """The trial's time: the median of its measurements (inf when it failed)."""
        if not self.ok:
            return math.inf
        t = sorted(self.times_s)
        return t[len(t) // 2]

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.ok and self.seconds > 0 else 0.0

    def config_key(self) -> str:
        """The knob values as one string: what a resumed run skips when it is in the log."""
        return json.dumps(self.config, sort_keys=True)

    def to_json(self) -> str:
        return json.dumps({"v": LOG_VERSION, "kind": "trial", **asdict(self)}, sort_keys=True)


@dataclass
class TuningLog:
    """What a log holds: its trials in order, the (workload, target) pairs marked finished, and
    the warnings reading it raised (torn or foreign lines), with counts."""

    trials: list[TrialRecord] = field(default_factory=list)
    finished: set[tuple[str, str]] = field(default_factory=set)
    confirmed: dict[tuple[str, str], str] = field(default_factory=dict)
    """(workload, target) -> the config key that won the confirmation."""
    confirmed_speedup: dict[tuple[str, str], float] = field(default_factory=dict)
    """(workload, target) -> the default's re-measured time over the winner's (1.0: default)."""
    warnings: list[str] = field(default_factory=list)

    def best(self, target: str | None = None) -> dict[str, TrialRecord]:
        """The fastest successful trial of each workload (of `target` if given)."""
        out: dict[str, TrialRecord] = {}
        for r in self.trials:
            if not r.ok or (target is not None and r.target != target):
                continue
            winner = self.confirmed.get((r.workload, r.target))
            if winner is not None and r.config_key() != winner:
                continue
            old = out.get(r.workload)
            if old is None or r.seconds < old.seconds:
                out[r.workload] = r
        return out

    def targets(self) -> set[str]:
        return {r.target for r in self.trials}


def read_log(path: str | os.PathLike[str], *, missing_ok: bool = False) -> TuningLog:
    """Parse a log. A line that is not JSON (a torn last write), of another format version or
    of an unknown kind is skipped and counted in `warnings`; a file that is not a log at all
    (no line parses) is a UserError."""
    p = Path(path)
    if not p.exists():
        if missing_ok:
            return TuningLog()
        raise UserError(f"{p}: no such tuning log")
    log = TuningLog()
    torn = foreign = unknown = 0
    lines = 0
    first_bad = 0
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise UserError(f"{p}: cannot read the tuning log: {err.strerror}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        lines += 1
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError
        except ValueError:
            torn += 1
            first_bad = first_bad or number
            continue
        if item.get("v") != LOG_VERSION:
            foreign += 1
            first_bad = first_bad or number
            continue
        kind = item.get("kind")
        try:
            if kind == "trial":
                fields = {k: v for k, v in item.items() if k not in ("v", "kind")}
                record = TrialRecord(**fields)
                if record.error not in ERROR_CODES:
                    raise TypeError(record.error)
                log.trials.append(record)
            elif kind == "task_finished":
                log.finished.add((str(item["workload"]), str(item["target"])))
            elif kind == "confirmed":
                key = (str(item["workload"]), str(item["target"]))
                log.confirmed[key] = json.dumps(item["config"], sort_keys=True)
                log.confirmed_speedup[key] = float(item.get("speedup", 1.0))
            else:
                raise TypeError
        except (TypeError, KeyError):
            unknown += 1
            first_bad = first_bad or number
    if lines and torn + foreign + unknown == lines:
        raise UserError(f"{p}:{first_bad}: not a tuning log of format version {LOG_VERSION}")
    if torn:
        log.warnings.append(f"{p}: skipped {torn} torn or corrupt line(s) (first: {first_bad})")
    if foreign:
        log.warnings.append(
            f"{p}: skipped {foreign} line(s) of another log format version (this is {LOG_VERSION})"
        )
    if unknown:
        log.warnings.append(f"{p}: skipped {unknown} line(s) that are not trial records")
    return log


class LogWriter:
    """Appends records, one flushed and fsync-ed line each (a kill loses at most one line).
    A file whose last line was torn gets a newline first, so the next record starts clean."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn = (
                self.path.exists()
                and self.path.stat().st_size > 0
                and not _ends_in_newline(self.path)
            )
            self.file = self.path.open("a", encoding="utf-8")
        except OSError as err:
            raise UserError(f"{self.path}: cannot write the tuning log: {err.strerror}") from None
        if torn:
            self.file.write("\n")

    def _line(self, text: str) -> None:
        self.file.write(text + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def trial(self, record: TrialRecord) -> None:
        self._line(record.to_json())

    def finished(self, workload: str, target: str, trials: int) -> None:
        line = {"v": LOG_VERSION, "kind": "task_finished", "workload": workload}
        line.update(target=target, trials=trials, ended=time.time())
        self._line(json.dumps(line, sort_keys=True))

    def confirmed(
        self,
        workload: str,
        target: str,
        config: dict[str, Any],
        times: dict[str, list[float]],
        speedup: float,
    ) -> None:
        line = {"v": LOG_VERSION, "kind": "confirmed", "workload": workload, "target": target}
        line.update(config=config, times_s=times, speedup=speedup, ended=time.time())
        self._line(json.dumps(line, sort_keys=True))

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_in_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def write_log(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """A whole log written at once (distil, merge), through a temporary file renamed into
    place: a failure leaves the old file, never a partial one."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")
        os.replace(tmp, p)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{p}: cannot write the tuning log: {err.strerror}") from None


def finished_lines(log: TuningLog) -> Iterator[str]:
    """The log's task_finished and confirmed lines (for tools that rewrite a log)."""
    for workload, target in sorted(log.finished):
        yield json.dumps(
            {"v": LOG_VERSION, "kind": "task_finished", "workload": workload, "target": target},
            sort_keys=True,
        )
    for (workload, target), config in sorted(log.confirmed.items()):
        line = {"v": LOG_VERSION, "kind": "confirmed", "workload": workload, "target": target}
        speedup = log.confirmed_speedup.get((workload, target), 1.0)
        yield json.dumps({**line, "config": json.loads(config), "speedup": speedup}, sort_keys=True)
