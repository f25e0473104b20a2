"""Recurrent layers with ONNX semantics: LSTM and GRU (default activations only).

Every operand is required (a frontend fills absent biases, initial states and peepholes with
zeros), so the op never has optional-operand bookkeeping. Sequence lengths are not supported:
every batch entry runs the whole sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    ShapeError,
    bool_prop,
    float_prop,
    int_prop,
    str_prop,
    tensor,
)
from nnvm.dialects.nnvm.dtypes import is_float
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind

_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class _RecurrentOp(NNVMOp):
    """Shared attribute checks and the layout handling of ONNX's recurrent ops.

    layout = 0: X [seq, batch, input], states [dirs, batch, H], Y [seq, dirs, batch, H];
    layout = 1: X [batch, seq, input], states [batch, dirs, H], Y [batch, seq, dirs, H].
    """

    def _attrs(self) -> tuple[int, int, int]:
        """(hidden size, number of directions, layout) after validating the attributes."""
        what = self.name.removeprefix("nnvm.")
        hidden = self.attr("hidden_size")
        direction = self.attr("direction")
        layout = self.attr("layout")
        if hidden < 1:
            raise ShapeError(f"{what}: hidden_size must be >= 1, got {hidden}")
        if direction not in _DIRECTIONS:
            raise ShapeError(
                f'{what}: direction must be "forward", "reverse" or "bidirectional", '
                f'got "{direction}"'
            )
        if layout not in (0, 1):
            raise ShapeError(f"{what}: layout must be 0 or 1, got {layout}")
        if self.attr("clip") < 0:
            raise ShapeError(f"{what}: clip must be >= 0 (0 disables it)")
        return hidden, 2 if direction == "bidirectional" else 1, layout

    def _check(
        self, operand_types: Sequence[TensorType], expected: Sequence[tuple[str, tuple[int, ...]]]
    ) -> None:
        what = self.name.removeprefix("nnvm.")
        elt = operand_types[0].element_type
        if not is_float(elt):
            raise ShapeError(f"{what} needs float operands, got {elt}")
        for t, (label, shape) in zip(operand_types, expected, strict=True):
            if t.element_type != elt:
                raise ShapeError(f"{what}: {label} has element type {t.element_type}, not {elt}")
            if tuple(t.get_shape()) != shape:
                raise ShapeError(
                    f"{what}: {label} must have shape {list(shape)}, got {list(t.get_shape())}"
                )

    def _x_dims(self, x: TensorType, layout: int) -> tuple[int, int, int]:
        shape = x.get_shape()
        what = self.name.removeprefix("nnvm.")
        if len(shape) != 3:
            raise ShapeError(f"{what}: X must be 3-D, got rank {len(shape)}")
        seq, batch, inp = (shape[1], shape[0], shape[2]) if layout else shape
        return seq, batch, inp

    @staticmethod
    def _state_shape(dirs: int, batch: int, hidden: int, layout: int) -> tuple[int, int, int]:
        return (batch, dirs, hidden) if layout else (dirs, batch, hidden)

    @staticmethod
    def _y_shape(seq: int, dirs: int, batch: int, hidden: int, layout: int) -> tuple[int, ...]:
        return (batch, seq, dirs, hidden) if layout else (seq, dirs, batch, hidden)

    def _run(
        self,
        x: np.ndarray,
        states: Sequence[np.ndarray],
        step: Callable[[int, np.ndarray, list[np.ndarray]], list[np.ndarray]],
    ) -> list[np.ndarray]:
        """Run `step(direction, x_t, states) -> new states` over time for every direction.

        x and states arrive in the op's layout; returns Y and the final states in that layout.
        The first state is the hidden state that Y collects.
        """
        layout = self.attr("layout")
        reverse = self.attr("direction") == "reverse"
        xd = x.astype(np.float64)
        st = [s.astype(np.float64) for s in states]
        if layout:
            xd = xd.transpose(1, 0, 2)
            st = [s.transpose(1, 0, 2) for s in st]
        seq = xd.shape[0]
        dirs = st[0].shape[0]
        ys = []
        finals: list[list[np.ndarray]] = []
        for d in range(dirs):
            backward = reverse or d == 1
            cur = [s[d] for s in st]
            y = np.zeros((seq, *cur[0].shape))
            for t in reversed(range(seq)) if backward else range(seq):
                cur = step(d, xd[t], cur)
                y[t] = cur[0]
            ys.append(y)
            finals.append(cur)
        y_all = np.stack(ys, axis=1)  # [seq, dirs, batch, H]
        outs = [np.stack([f[k] for f in finals]) for k in range(len(states))]
        if layout:
            y_all = y_all.transpose(2, 0, 1, 3)
            outs = [o.transpose(1, 0, 2) for o in outs]
        return [a.astype(x.dtype) for a in (y_all, *outs)]

    def _clip(self, v: np.ndarray) -> np.ndarray:
        c = self.attr("clip")
        return np.clip(v, -c, c) if c > 0 else v


@irdl_op_definition
class LSTMOp(_RecurrentOp):
    """`%y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = H}`: ONNX LSTM
    (gate order i, o, f, c; sigmoid / tanh / tanh; peepholes P [dirs, 3H] in order i, o, f)."""

    name = "nnvm.lstm"
    x = operand_def()
    w = operand_def()
    r = operand_def()
    b = operand_def()
    initial_h = operand_def()
    initial_c = operand_def()
    p = operand_def()
    y = result_def()
    y_h = result_def()
    y_c = result_def()
    hidden_size = int_prop()
    direction = str_prop("forward")
    clip = float_prop(0.0)
    input_forget = bool_prop(False)
    layout = int_prop(0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        hidden, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(operand_types[0], layout)
        state = self._state_shape(dirs, batch, hidden, layout)
        h4 = 4 * hidden
        self._check(
            operand_types,
            [
                ("X", tuple(operand_types[0].get_shape())),
                ("W", (dirs, h4, inp)),
                ("R", (dirs, h4, hidden)),
                ("B", (dirs, 2 * h4)),
                ("initial_h", state),
                ("initial_c", state),
                ("P", (dirs, 3 * hidden)),
            ],
        )
        elt = operand_types[0].element_type
        return [
            tensor(self._y_shape(seq, dirs, batch, hidden, layout), elt),
            tensor(state, elt),
            tensor(state, elt),
        ]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, w, r, b, h0, c0, p = inputs
        hid = self.attr("hidden_size")
        w, r, b, p = (a.astype(np.float64) for a in (w, r, b, p))
        couple = self.attr("input_forget")

        def step(d: int, xt: np.ndarray, state: list[np.ndarray]) -> list[np.ndarray]:
            h, c = state
            gates = xt @ w[d].T + h @ r[d].T + b[d, : 4 * hid] + b[d, 4 * hid :]
            gi, go, gf, gc = (gates[:, k * hid : (k + 1) * hid] for k in range(4))
            pi, po, pf = (p[d, k * hid : (k + 1) * hid] for k in range(3))
            i = _sigmoid(self._clip(gi + pi * c))
            f = 1.0 - i if couple else _sigmoid(self._clip(gf + pf * c))
            g = np.tanh(self._clip(gc))
            c = f * c + i * g
            o = _sigmoid(self._clip(go + po * c))
            return [o * np.tanh(c), c]

        return self._run(x, [h0, c0], step)


@irdl_op_definition
class GRUOp(_RecurrentOp):
    """`%y, %y_h = nnvm.gru %x, %w, %r, %b, %h0 {hidden_size = H}`: ONNX GRU (gate order
    z, r, h; sigmoid / tanh; linear_before_reset applies R_h before the reset gate)."""

    name = "nnvm.gru"
    x = operand_def()
    w = operand_def()
    r = operand_def()
    b = operand_def()
    initial_h = operand_def()
    y = result_def()
    y_h = result_def()
    hidden_size = int_prop()
    direction = str_prop("forward")
    clip = float_prop(0.0)
    linear_before_reset = bool_prop(False)
    layout = int_prop(0)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        hidden, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(operand_types[0], layout)
        state = self._state_shape(dirs, batch, hidden, layout)
        h3 = 3 * hidden
        self._check(
            operand_types,
            [
                ("X", tuple(operand_types[0].get_shape())),
                ("W", (dirs, h3, inp)),
                ("R", (dirs, h3, hidden)),
                ("B", (dirs, 2 * h3)),
                ("initial_h", state),
            ],
        )
        elt = operand_types[0].element_type
        return [tensor(self._y_shape(seq, dirs, batch, hidden, layout), elt), tensor(state, elt)]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        x, w, r, b, h0 = inputs
        hid = self.attr("hidden_size")
        w, r, b = (a.astype(np.float64) for a in (w, r, b))
        linear_before_reset = self.attr("linear_before_reset")

        def step(d: int, xt: np.ndarray, state: list[np.ndarray]) -> list[np.ndarray]:
            (h,) = state
            wb, rb = b[d, : 3 * hid], b[d, 3 * hid :]
            xg = xt @ w[d].T + wb
            rw = r[d]
            sl = [slice(k * hid, (k + 1) * hid) for k in range(3)]
            z = _sigmoid(self._clip(xg[:, sl[0]] + h @ rw[sl[0]].T + rb[sl[0]]))
            rr = _sigmoid(self._clip(xg[:, sl[1]] + h @ rw[sl[1]].T + rb[sl[1]]))
            if linear_before_reset:
                hh = xg[:, sl[2]] + rr * (h @ rw[sl[2]].T + rb[sl[2]])
            else:
                hh = xg[:, sl[2]] + (rr * h) @ rw[sl[2]].T + rb[sl[2]]
            hh = np.tanh(self._clip(hh))
            return [(1.0 - z) * hh + z * h]

        return self._run(x, [h0], step)


RNN_OPS: list[type[NNVMOp]] = [LSTMOp, GRUOp]
