"""The tuner's correctness check allows for a kernel's own conditioning: each output's absolute
tolerance is the usual one, or CONDITIONING_MARGIN times how far the reference's output moves
when the inputs move by a few ulps, whichever is larger. A matmul keeps the usual tolerance;
an LSTM of 32 steps on the tuner's random weights (uniform in [-1, 1): saturated, chaotic
gates) amplifies rounding, and its default schedule is no longer a "wrong" trial."""

from __future__ import annotations

import numpy as np
from onnx import helper

from nnvm.frontend import from_onnx
from nnvm.testing.onnx_models import single_op
from nnvm.tune.measure import RunJob, nudged_inputs
from nnvm.tune.runner import LocalRunner, MeasureOptions
from nnvm.tune.space import TaskSpace
from nnvm.tune.task import extract_tasks


def test_nudged_inputs_move_floats_by_a_few_ulps_and_nothing_else():
    x = np.linspace(-1, 1, 101, dtype=np.float32)
    ints = np.arange(5, dtype=np.int64)
    nx, ni = nudged_inputs([x, ints], seed=1)
    assert np.array_equal(ni, ints)
    ulps = np.abs(nx.view(np.int32).astype(np.int64) - x.view(np.int32))
    assert ulps.max() <= 8 and (ulps[x != 0] > 0).mean() > 0.9


def test_a_matmul_keeps_the_usual_tolerance(matmul_task):
    runner = LocalRunner(MeasureOptions(repeat=1, check=True))
    try:
        _, expected, atols = runner._reference(matmul_task)
    finally:
        runner.close()
    assert expected is not None and atols == [RunJob.atol] * len(expected)


def test_a_chaotic_lstm_is_checked_within_its_conditioning():
    node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=256)
    model = single_op(node, [32, 1, 128], {"W": (1, 1024, 128), "R": (1, 1024, 256)})
    lstm = [t for t in extract_tasks(*from_onnx(model)) if "lstm" in t.name]
    assert lstm, "no LSTM task"
    task = lstm[0]
    space = TaskSpace(task)
    runner = LocalRunner(MeasureOptions(repeat=1, check=True))
    try:
        _, _, atols = runner._reference(task)
        (record,) = runner.measure(task, space, [space.default()])
    finally:
        runner.close()
    assert atols is not None and max(atols) > RunJob.atol  # the recurrence amplifies
    assert record.error == "ok", record.detail
