"""A blocked average pool runs in one pass (targets/cpu/schedules/pool.py): the window sum of
one position's channel block is computed in a register at the output's column loop and divided
there, instead of a whole sum tensor the division reads back. Each kernel is compiled, run and
compared with the reference executor through the tuner's runner; pools in plain NCHW keep the
generic two-stage schedule. A blocked max pool, its own output, keeps its running maximum in a
register the same way: a cache_write stage computed at the column loop, so no store to the
output is left inside the window's loops."""

from __future__ import annotations

import pytest

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.te.workload import workload_key, workload_shapes
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.registry import build_pipeline, make_context
from nnvm.support.diagnostics import parse_module
from nnvm.support.ir_text import ir_text
from nnvm.support.target import parse_target
from nnvm.targets.cpu.schedules import default_schedule
from nnvm.tune.runner import LocalRunner, MeasureOptions
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.task import Task, te_function


def _pool(op: str, shape: list[int], attrs: str, out: list[int], layout: str) -> str:
    """A one-pool kernel: an average pool with a ReLU epilogue, or a max pool alone (its own
    output)."""
    x = f"tensor<{'x'.join(map(str, shape))}xf32>"
    y = f"tensor<{'x'.join(map(str, out))}xf32>"
    epilogue = f"%2 = nnvm.relu %1 : ({y}) -> {y}" if op == "avg_pool2d" else ""
    result = "%2" if epilogue else "%1"
    return f"""builtin.module {{
  func.func @pool(%0: {x}) -> {y} attributes {{nnvm.pattern = "out-elemwise-fusable"}} {{
    %1 = nnvm.{op} %0 {{{attrs}, layout = "{layout}"}} : ({x}) -> {y}
    {epilogue}
    func.return {result} : {y}
  }}
}}"""


THREE = "pool_size = [3, 3], padding = [1, 1, 1, 1]"
CASES = {  # id: (input shape, attributes, output shape, layout, one pass)
    # Inception's 3x3 / stride 1 / pad 1 average pool, counting the padding
    "3x3-pad-include": ([1, 3, 9, 9, 16], f"{THREE}, count_include_pad = true", [1, 3, 9, 9, 16]),
    "3x3-s2-pad-exclude": ([1, 2, 7, 7, 16], f"{THREE}, strides = [2, 2]", [1, 2, 4, 4, 16]),
    # DenseNet's transition: 2x2, stride 2, here with a batch of 2
    "2x2-s2-batch2": ([2, 2, 8, 8, 16], "pool_size = [2, 2], strides = [2, 2]", [2, 2, 4, 4, 16]),
    "nchw-generic": ([1, 4, 9, 9], THREE, [1, 4, 9, 9]),  # plain NCHW: the generic schedule
}


@pytest.mark.parametrize("case", list(CASES))
def test_average_pool_schedule_and_result(case: str) -> None:
    shape, attrs, out = CASES[case]
    one_pass = len(shape) == 5  # blocked NCHW16c
    text = _pool("avg_pool2d", shape, attrs, out, "NCHW16c" if one_pass else "NCHW")
    schedule = _schedule_and_run(text)
    computed_at = 'te.compute_at "avg_pool2d.sum" at' in schedule
    assert computed_at == one_pass, schedule


MAX_CASES = {  # id: (input shape, attributes, output shape)
    # SqueezeNet's 3x3 / stride 2 ceil-mode pool, ResNet's padded one, a plain NCHW one
    "3x3-s2-ceil": (
        [2, 2, 9, 9, 16],
        "pool_size = [3, 3], strides = [2, 2], ceil_mode = true",
        [2, 2, 4, 4, 16],
    ),
    "3x3-s2-pad": ([1, 3, 8, 8, 16], f"{THREE}, strides = [2, 2]", [1, 3, 4, 4, 16]),
    "nchw-generic": ([1, 4, 9, 9], THREE, [1, 4, 9, 9]),
}


@pytest.mark.parametrize("case", list(MAX_CASES))
def test_max_pool_keeps_its_maximum_in_a_register(case: str) -> None:
    shape, attrs, out = MAX_CASES[case]
    blocked = len(shape) == 5
    text = _pool("max_pool2d", shape, attrs, out, "NCHW16c" if blocked else "NCHW")
    schedule = _schedule_and_run(text)
    local = 'te.compute_at "max_pool2d.local" at "max_pool2d"' in schedule
    assert local == blocked, schedule
    if blocked:
        loops = _loops(text)
        window = loops[loops.index("scf.for %kh") :]
        window = window[: window.index("scf.yield")]
        assert "vector.store" not in window, loops


def _loops(text: str) -> str:
    """The kernel after lowering to loops and the register promotion of its accumulators."""
    ctx = make_context()
    module = parse_module(ctx, text, "pool")
    passes = "lower-to-te,apply-default-schedule,lower-te-to-loops,hoist-loop-invariant-accesses"
    for p in build_pipeline([passes]):
        p.apply(ctx, module)
    return ir_text(module)


def _schedule_and_run(text: str) -> str:
    """The default schedule of a one-pool kernel, checked against the reference executor
    through the tuner's runner."""
    target = parse_target("llvm")
    ctx = make_context()
    module = parse_module(ctx, text, "pool")
    LowerToTE(target=target).apply(ctx, module)
    fn = te_function(module)
    schedule = ir_text(default_schedule(fn.clone(), target.vector_bits))
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    task = Task(
        name="pool",
        workload=workload_key(fn),
        target=target,
        te_text=ir_text(module),
        graph_text=text,
        shapes=workload_shapes(fn),
        dtypes=[numpy_dtype_of(t.element_type).name for t in types],
        n_inputs=1,
        weight=1,
        flops=1,
        template="pool",
    )
    runner = LocalRunner(MeasureOptions(repeat=1, check=True))
    try:
        (record,) = runner.measure(task, TaskSpace(task), [Candidate({}, schedule)])
    finally:
        runner.close()
    assert record.error == "ok", record.detail
    return schedule
