"""The tuning log: round trip, torn and foreign lines, the tools (best, merge, show)."""

from __future__ import annotations

import json

import pytest

from nnvm.support.errors import UserError
from nnvm.support.tuning_log import LogWriter, TrialRecord, read_log, write_log
from nnvm.tune.log_tools import distilled, merged, show


def record(workload="w1", config=None, times=(0.002,), error="ok", target="cpu=x"):
    return TrialRecord(
        workload=workload,
        task="fused_x",
        target=target,
        shapes=[[2, 3]],
        config=config or {"rows": 4},
        schedule="te.schedule {\n}",
        times_s=list(times),
        error=error,
        flops=1000,
    )


def test_round_trip_and_best(tmp_path):
    path = tmp_path / "t.jsonl"
    with LogWriter(path) as w:
        w.trial(record(times=[0.003, 0.002, 0.004]))
        w.trial(record(config={"rows": 2}, times=[0.001]))
        w.trial(record(config={"rows": 1}, times=[], error="crash"))
        w.finished("w1", "cpu=x", 3)
    log = read_log(path)
    assert [r.config for r in log.trials] == [{"rows": 4}, {"rows": 2}, {"rows": 1}]
    assert log.trials[0].seconds == 0.003  # the median
    assert log.finished == {("w1", "cpu=x")}
    assert log.best("cpu=x")["w1"].config == {"rows": 2}
    assert log.best("cpu=other") == {}
    assert not log.warnings


def test_a_torn_last_line_is_skipped_with_a_warning_and_the_next_write_starts_clean(tmp_path):
    path = tmp_path / "t.jsonl"
    with LogWriter(path) as w:
        w.trial(record())
    full = path.read_text()
    path.write_text(full + full[: len(full) // 2])  # a kill in the middle of a write
    log = read_log(path)
    assert len(log.trials) == 1
    assert "torn" in log.warnings[0]
    with LogWriter(path) as w:
        w.trial(record(config={"rows": 8}))
    log = read_log(path)
    assert [r.config for r in log.trials] == [{"rows": 4}, {"rows": 8}]


def test_foreign_versions_and_non_logs(tmp_path):
    path = tmp_path / "t.jsonl"
    line = json.loads(record().to_json())
    path.write_text(json.dumps({**line, "v": 99}) + "\n" + record().to_json() + "\n")
    log = read_log(path)
    assert len(log.trials) == 1 and "another log format version" in log.warnings[0]
    path.write_text("hello\nworld\n")
    with pytest.raises(UserError, match="not a tuning log"):
        read_log(path)
    with pytest.raises(UserError, match="no such tuning log"):
        read_log(tmp_path / "missing.jsonl")
    assert read_log(tmp_path / "missing.jsonl", missing_ok=True).trials == []


def test_distil_merge_show(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with LogWriter(a) as w:
        w.trial(record(times=[0.004]))
        w.trial(record(config={"rows": 2}, times=[0.003]))
        w.finished("w1", "cpu=x", 2)
    with LogWriter(b) as w:
        w.trial(record(times=[0.001]))  # the same config, measured faster
        w.trial(record(workload="w2", times=[0.01]))
    write_log(tmp_path / "best.jsonl", distilled(read_log(a)))
    best = read_log(tmp_path / "best.jsonl")
    assert [r.config for r in best.trials] == [{"rows": 2}] and best.finished
    write_log(tmp_path / "all.jsonl", merged([read_log(a), read_log(b)]))
    both = read_log(tmp_path / "all.jsonl")
    assert len(both.trials) == 3
    assert both.best()["w1"].seconds == 0.001
    text = show(both)
    assert "w1" in text and "w2" in text and "3 trials, 2 workloads" in text
