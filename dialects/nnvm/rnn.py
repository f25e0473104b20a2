"""(being written) graph ops: rnn."""

RNN_OPS: list[type] = []
