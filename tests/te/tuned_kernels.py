"""A kernel's tuning task and its candidates checked by the tuner's runner (which compiles,
runs and compares each against the reference executor): for tests of default schedules and
their knobs."""

from __future__ import annotations

from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.registry import make_context
from nnvm.support.diagnostics import parse_module
from nnvm.support.target import parse_target
from nnvm.tune.runner import LocalRunner, MeasureOptions
from nnvm.tune.space import TaskSpace
from nnvm.tune.task import Task, kernel_task


def conv_bias_relu(x: str, wt: str, b: str, y: str, attrs: str) -> str:
    """A fused kernel module: nnvm.conv2d (attributes `attrs`) + bias + ReLU, over the tensor
    types x (input), wt (weights), b (bias), y (output)."""
    return f"""builtin.module {{
  func.func @conv(%0: {x}, %1: {wt}, %2: {b}) -> {y} attributes {{nnvm.pattern = "out-elemwise-fusable"}} {{
    %3 = nnvm.conv2d %0, %1 {{{attrs}}} : ({x}, {wt}) -> {y}
    %4 = nnvm.add %3, %2 : ({y}, {b}) -> {y}
    %5 = nnvm.relu %4 : ({y}) -> {y}
    func.return %5 : {y}
  }}
}}"""


def task_of(text: str, name: str, target: str = "llvm") -> Task:
    """The tuning task of kernel `name` in `text` (graph-level IR) on `target`."""
    t = parse_target(target)
    ctx = make_context()
    module = parse_module(ctx, text, name)
    LowerToTE(target=t).apply(ctx, module)
    task = kernel_task(t, name, module, text)
    assert task is not None
    return task


def assert_compute_the_kernel(task: Task, space: TaskSpace, candidates: list) -> None:
    """Every candidate compiles, runs and matches the reference."""
    runner = LocalRunner(MeasureOptions(repeat=1, check=True))
    try:
        records = runner.measure(task, space, candidates)
    finally:
        runner.close()
    assert len(records) == len(candidates)
    for record in records:
        assert record.error == "ok", record.detail
