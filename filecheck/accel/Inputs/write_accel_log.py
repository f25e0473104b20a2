"""Write a tuning log with one measured record for the 48 -> 40 channel 3x3 layer of
accel-apply-tuning-log.mlir: one virtual thread, tiles of 2 output blocks x 6 rows x 12
columns (what nnvm-tune would write after measuring that candidate on the cycle model):
`write_accel_log.py LOG`."""

import sys

from xdsl.dialects.builtin import ModuleOp

from nnvm.support.tuning_log import LogWriter
from nnvm.targets.accel.target import AccelTarget
from nnvm.targets.accel.te_layer import layer_kernel
from nnvm.targets.accel.tiling import Conv2dLayer
from nnvm.tune.runner import MeasureOptions
from nnvm.tune.simulator_runner import SimulatorRunner
from nnvm.tune.space import TaskSpace
from nnvm.tune.task import kernel_task

target = AccelTarget()
layer = Conv2dLayer(1, 48, 12, 12, 40, 3, 3, 1, 1)
task = kernel_task(target, "accel_0", ModuleOp([layer_kernel(target.accel_config(), layer)]))
space = TaskSpace(task)
chosen = {"virtual_threads": 1, "tile_out_blocks": 2, "tile_rows": 6, "tile_cols": 12}
candidate = space.make(chosen)
(record,) = SimulatorRunner(MeasureOptions(check=True)).measure(task, space, [candidate])
assert record.error == "ok", record.detail
with LogWriter(sys.argv[1]) as log:
    log.trial(record)
