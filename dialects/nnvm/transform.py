"""(being written) graph ops: transform."""

TRANSFORM_OPS: list[type] = []
