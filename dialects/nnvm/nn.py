"""(being written) graph ops: nn."""

NN_OPS: list[type] = []
