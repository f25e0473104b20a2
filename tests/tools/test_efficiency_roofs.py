"""bench/peak.py's read roofs and bench/efficiency.py's roofline: a kernel is set against the
longest of its compute, copy, read and cache re-read times (no timing is asserted: the roofs
are given)."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.efficiency import ROUND_SECONDS, efficiency_report, profile_runs, report_table  # noqa: E402
from bench.peak import (  # noqa: E402
    READ_STREAMS,
    _read_ir,
    _reread_ir,
    measure_read_bandwidth,
    measure_reread_bandwidth,
    vector_width,
)
from nnvm.targets.llvm.compile import compile_jit  # noqa: E402


def test_the_read_kernel_sums_every_stream() -> None:
    width = vector_width()
    kernel = compile_jit(_read_ir(width)).function(
        "read_sum", ctypes.c_float, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    )
    per_stream = 5
    data = np.zeros((READ_STREAMS, per_stream, width), np.float32)
    data[:, :, 0] = np.arange(READ_STREAMS * per_stream).reshape(READ_STREAMS, per_stream)
    got = kernel(data.ctypes.data, per_stream, per_stream)
    assert got == float(data[:, :, 0].sum())
    again = compile_jit(_reread_ir(width)).function(
        "read_again",
        ctypes.c_float,
        [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64],
    )
    assert again(data.ctypes.data, per_stream, per_stream, 3) == 3 * float(data[:, :, 0].sum())
    assert measure_read_bandwidth(1, megabytes=4, repeat=1) > 0


def _few_rows_matmul():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((512, 256)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 512])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 256])
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    graph = helper.make_graph([node], "g", [x], [y], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model, {"x": rng.standard_normal((2, 512)).astype(np.float32)}


def test_each_roof_binds_where_it_is_the_longest() -> None:
    model, inputs = _few_rows_matmul()
    # a slow read roof binds the matmul (its weights are read, 2 rows are written)
    report = efficiency_report("mm", model, inputs, 1, 1e6, 1e6, 0.5, number=2)
    row = next(r for r in report.rows if "matmul" in r.kernel)
    read_bytes = 4 * (2 * 512 + 512 * 256)
    assert row.bound == "read"
    seconds = row.ms * 1e-3
    assert abs(row.roof_pct - 100 * row.calls * read_bytes / 0.5e9 / seconds) < 1e-6 * row.roof_pct
    # a slow copy roof binds it when reads are fast; a slow FMA peak when both are
    for roofs, bound in (((1e6, 0.5, 1e6), "memory"), ((1e-3, 1e6, 1e6), "compute")):
        report = efficiency_report("mm", model, inputs, 1, *roofs, number=2)
        assert next(r for r in report.rows if "matmul" in r.kernel).bound == bound


def _lstm():
    rng = np.random.default_rng(0)
    hidden, features, steps = 32, 16, 6
    w = rng.standard_normal((1, 4 * hidden, features)).astype(np.float32) * 0.2
    r = rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32) * 0.2
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, features])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hidden)
    graph = helper.make_graph([node], "g", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    inputs = {"x": rng.standard_normal((steps, 1, features)).astype(np.float32)}
    return model, inputs, steps, 4 * hidden * hidden * 4


def test_a_recurrence_is_bound_by_re_reading_its_weights_from_cache() -> None:
    model, inputs, steps, recurrent_bytes = _lstm()
    asked = []

    def slow_cache(threads: int, nbytes: int) -> float:
        asked.append((threads, nbytes))
        return 0.01

    report = efficiency_report(
        "lstm", model, inputs, 1, 1e6, 1e6, 1e6, number=2, reread_gbps=slow_cache
    )
    row = next(r for r in report.rows if "lstm" in r.kernel)
    assert row.bound == "cache"
    assert asked == [(1, recurrent_bytes)]
    reread = (steps - 1) * recurrent_bytes  # every step after the first reads R again
    seconds = row.ms * 1e-3
    assert abs(row.roof_pct - 100 * reread / 0.01e9 / seconds) < 1e-6 * row.roof_pct
    assert measure_reread_bandwidth(1, 64 * 1024, repeat=1) > 0


def test_profile_runs_fill_the_profile_time() -> None:
    """A round profiles a small model over enough runs to fill ROUND_SECONDS (at most 50), a
    large one at least 3 times."""
    assert profile_runs(ROUND_SECONDS / 20) == 20
    assert profile_runs(0.0001) == 50
    assert profile_runs(2.0) == 3


def test_a_kernel_takes_the_median_of_its_rounds() -> None:
    """Each round is a median over runs; the report takes the median of the rounds, so one
    round slowed by another tenant of the host does not move it."""
    from bench.efficiency import ProfiledModel

    model, inputs = _few_rows_matmul()
    profiled = ProfiledModel("mm", model, inputs)
    profiled.profile_round(1, number=2)
    nodes = len(profiled.rounds[1][0])
    profiled.rounds[1] = [[1.0] * nodes, [9.0] * nodes, [2.0] * nodes]
    report = profiled.report(1, 1e6, 1e6, 1e6)
    assert report.rounds == 3 and report.runs == 2
    assert abs(report.total_ms - 2.0 * nodes) < 1e-9
    assert all(abs(r.ms - 2.0 * r.calls) < 1e-9 for r in report.rows)
    assert f"{report.runs} runs in 3 round(s)" in report_table(report)


def test_the_report_counts_the_pools_stalls() -> None:
    """The debug runtime's profile counts the pool's waits on a descheduled worker (exported
    by every model library), and the report says how many there were."""
    from bench.efficiency import Report

    model, inputs = _few_rows_matmul()
    report = efficiency_report("mm", model, inputs, 2, 1e6, 1e6, 1e6, number=2, rounds=2)
    assert report.stalls >= 0 and report.rounds == 2 and report.runs == 4
    noisy = Report("mm", 2, 1.0, 1.0, 1.0, 1.0, [], rounds=2, runs=4, stalls=3)
    assert "3 pool stall(s)" in report_table(noisy)
