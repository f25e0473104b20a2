"""(being written) graph ops: pooling."""

POOLING_OPS: list[type] = []
