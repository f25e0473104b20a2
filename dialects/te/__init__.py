"""The tensor-expression dialect `te`: kernels as index formulas, and their schedules as IR.

ops.py holds what a kernel computes (`te.compute`, `te.read`, `te.constant`, `te.extern`),
schedule.py how (`te.schedule` and its primitives), stages.py what the primitives mean (over
the stage tree of stage_tree.py, one file per primitive family), and builder.py the Python side
that graph ops use to write their te definitions.
"""

from xdsl.ir import Dialect

from nnvm.dialects.te.ops import ComputeOp, ConstantOp, ExternOp, ReadOp, YieldOp
from nnvm.dialects.te.schedule import SCHEDULE_OPS, ScheduleOp

TE = Dialect("te", [ComputeOp, ReadOp, YieldOp, ConstantOp, ExternOp, *SCHEDULE_OPS], [])

__all__ = ["TE", "ComputeOp", "ReadOp", "YieldOp", "ConstantOp", "ExternOp", "ScheduleOp"]
