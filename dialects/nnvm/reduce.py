"""(being written) graph ops: reduce."""

REDUCE_OPS: list[type] = []
