"""Tuning the accelerator's layers: their te schedules ask knobs (tiling, loop order, virtual
threads), nnvm.tune measures candidates on the cycle model (SimulatorRunner), records are
schedule IR, and a log applies to accel layers in nnvm-opt and in build(); tuned programs stay
bit-exact."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

import nnvm
from nnvm.compiler import build
from nnvm.registry import make_context
from nnvm.runtime import graph_runtime
from nnvm.support.diagnostics import parse_module
from nnvm.support.tuning_log import read_log
from nnvm.targets.accel.config import DEFAULT_CONFIG
from nnvm.targets.accel.reference import conv2d_int8
from nnvm.targets.accel.simulator import simulate
from nnvm.targets.accel.target import AccelTarget
from nnvm.targets.accel.te_layer import layer_kernel
from nnvm.targets.accel.te_plan import plan_layer_te
from nnvm.targets.accel.tiling import Conv2dLayer, choose_tiling
from nnvm.targets.accel.tuned_layers import AccelApplyTuningLog
from nnvm.testing import onnx_models
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.simulator_runner import SimulatorRunner
from nnvm.tune.space import TaskSpace
from nnvm.tune.task import extract_tasks, kernel_task
from nnvm.tune.tuner import tune

LAYER = Conv2dLayer(1, 48, 12, 12, 40, 3, 3, 1, 1)


def _task(layer=LAYER):
    target = AccelTarget()
    task = kernel_task(target, "accel_0", ModuleOp([layer_kernel(target.accel_config(), layer)]))
    assert task is not None
    return task


def test_a_layer_kernel_asks_the_tiling_and_the_virtual_threads():
    task = _task()
    assert set(task.knobs) == {
        "virtual_threads",
        "tile_out_blocks",
        "tile_in_blocks",
        "tile_rows",
        "tile_cols",
        "order",
    }
    d = choose_tiling(DEFAULT_CONFIG, LAYER, 2)
    assert task.default_config == {
        "virtual_threads": 2,
        "tile_out_blocks": d.tob,
        "tile_in_blocks": d.tib,
        "tile_rows": d.toh,
        "tile_cols": d.tow,
        "order": d.order,
    }
    assert task.template == "accel.conv2d"


def test_the_cycle_model_measures_and_checks_candidates():
    task = _task(Conv2dLayer(1, 64, 56, 56, 64, 3, 3, 1, 1))
    space = TaskSpace(task)
    too_big = space.make(
        {"virtual_threads": 2, "tile_out_blocks": 4, "tile_in_blocks": 4, "tile_rows": 56}
        | {"tile_cols": 56}
    )
    assert too_big is not None
    ok, refused = SimulatorRunner(MeasureOptions(check=True)).measure(
        task, space, [space.default(), too_big]
    )
    assert ok.error == "ok" and ok.seconds > 0
    assert refused.error == "build" and "buffer holds" in refused.detail


def test_tuned_records_apply_to_layers_and_stay_exact(tmp_path):
    task = _task()
    log = tmp_path / "tune.jsonl"
    result = tune([task], SimulatorRunner(MeasureOptions(check=True)), str(log), trials=16,
                  strategy="random", batch=8, early_stop=None, confirm_rounds=0)  # fmt: skip
    (state,) = result.states
    assert state.best_s <= state.default_s
    best = read_log(log).best(AccelTarget().description)[task.workload]
    assert all(r.error in ("ok", "build") for r in read_log(log).trials)
    # the record is te schedule IR: lowered, it is exact
    plan = plan_layer_te(DEFAULT_CONFIG, LAYER, schedule=best.schedule)
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 48, 12, 12), dtype=np.int8)
    w = rng.integers(-128, 128, (40, 48, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, 40).astype(np.int32)
    shifts = np.arange(40) % 4 + 7
    dram = plan.pack(x, w, bias, shifts)
    simulate(DEFAULT_CONFIG, plan.insns, dram)
    np.testing.assert_array_equal(plan.output(dram), conv2d_int8(x, w, bias, 1, 1, shifts))
    # accel-apply-tuning-log gives the layer that schedule
    text = """
func.func @f(%x: tensor<1x48x12x12xi8>, %w: tensor<40x48x3x3xi8>, %r: tensor<40x1x1xi32>, %s: tensor<40x1x1xi32>) -> tensor<1x40x12x12xi8> {
  %y = accel.conv2d %x : tensor<1x48x12x12xi8>, %w : tensor<40x48x3x3xi8> rounding %r : tensor<40x1x1xi32> shift %s : tensor<40x1x1xi32> {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} -> tensor<1x40x12x12xi8>
  func.return %y : tensor<1x40x12x12xi8>
}"""
    module = parse_module(make_context(), text, "<test>")
    AccelApplyTuningLog(log=str(log)).apply(make_context(), module)
    (conv,) = [o for o in module.walk() if o.name == "accel.conv2d"]
    assert conv.attributes["schedule"].data == best.schedule


def test_model_tasks_and_a_tuned_build(quantized, tmp_path):
    model, qm, qp = quantized
    tasks = extract_tasks(qm, qp, devices=["accel"])
    accel = [t for t in tasks if t.template == "accel.conv2d"]
    assert len(accel) == 4 and all(isinstance(t.target, AccelTarget) for t in accel)
    log = tmp_path / "tune.jsonl"
    tune(accel, SimulatorRunner(MeasureOptions(check=False)), str(log), trials=8,
         strategy="random", batch=8, early_stop=None, confirm_rounds=0)  # fmt: skip
    host = build(qm, params=qp)
    graph, lib, params = build(qm, params=qp, devices=["accel"], tuning_log=str(log))
    assert any('schedule = "te.schedule' in t for t in graph.extra["kernel_ir"].values())
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    feed = onnx_models.random_inputs(model, seed=3)
    m.run(**feed)
    h = graph_runtime.create(*host[:2], nnvm.cpu(0))
    h.set_input(**host[2])
    h.run(**feed)
    np.testing.assert_array_equal(m.get_output(0), h.get_output(0))
