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
from nnvm.dialects.nnvm.nn import unpack_panels
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef

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

    # -- te definition: the time loop unrolled (static sequence length) ----------------------

    def _te_clip(self, v: Expr) -> Expr:
        c = self.attr("clip")
        return te.minimum(te.maximum(v, -c), c) if c > 0 else v

    @staticmethod
    def _te_sigmoid(v: Expr) -> Expr:
        return 1.0 / (1.0 + te.exp(-v))

    def _te_steps(self, seq: int, d: int) -> list[int]:
        backward = self.attr("direction") == "reverse" or d == 1
        return list(reversed(range(seq))) if backward else list(range(seq))

    def _te_state(self, s: TensorRef, d: int) -> Callable[[Expr, Expr], Expr]:
        if self.attr("layout"):
            return lambda bi, j: s[bi, d, j]
        return lambda bi, j: s[d, bi, j]

    @staticmethod
    def _te_matvec(
        b: KernelBuilder,
        a: Callable[[Expr, Expr], Expr],
        k: int,
        w: TensorRef,
        d: int,
        rows: tuple[int, int],
        batch: int,
        name: str,
    ) -> TensorRef:
        """out[b, g] = sum_k a(b, k) * w[d, rows[0] + g, k] for g < rows[1]."""
        first, count = rows

        def body(bi: Expr, g: Expr, r: Expr) -> Expr:
            return a(bi, r) * w[d, g + first, r]

        return b.reduce(
            (batch, count),
            "sum",
            (k,),
            body,
            name=name,
            axes=("b", "g"),
            reduce_axes=("k",),
            template="dense",
        )

    @staticmethod
    def _te_project(
        b: KernelBuilder,
        a: Callable[[Expr, Expr], Expr],
        shape: tuple[int, int],
        k: int,
        w: TensorRef,
        d: int,
        kn: bool,
        name: str,
        panel: int = 0,
        first: int = 0,
    ) -> TensorRef:
        """out[m, g] = sum_k a(m, k) * W_d[g, k]. With `kn` the weight is stored [dirs, K, G]
        (contiguous along g), so the matmul template's register tiles apply; otherwise the
        rows of W are dot products (the dense template). With `panel` P it is stored in
        column panels, [dirs, G/P, K, P], which the tiles stream contiguously. `first`: the
        product by columns first .. first + G of W."""

        def body(m: Expr, g: Expr, r: Expr) -> Expr:
            if panel:
                return a(m, r) * w[d, g // panel, r, g % panel]
            if first:  # the columns from `first` on (a GRU's z, r or h gates)
                g = g + first
            return a(m, r) * (w[d, r, g] if kn else w[d, g, r])

        return b.reduce(
            shape,
            "sum",
            (k,),
            body,
            name=name,
            axes=("m", "g"),
            reduce_axes=("k",),
            template="matmul" if kn else "dense",
        )

    def _te_input_projection(
        self,
        b: KernelBuilder,
        x: TensorRef,
        w: TensorRef,
        d: int,
        dims: tuple[int, int, int],
        gates: int,
        kn: bool,
    ) -> Callable[[int, Expr, Expr], Expr]:
        """X_t W^T for every step at once (one GEMM outside the recurrence, W read once);
        returns (t, batch, g) -> the projection."""
        seq, batch, inp = dims
        layout = self.attr("layout")

        def rows(m: Expr, k: Expr) -> Expr:
            t, bi = (m, 0) if batch == 1 else (m // batch, m % batch)
            return x[bi, t, k] if layout else x[t, bi, k]

        gx = self._te_project(b, rows, (seq * batch, gates), inp, w, d, kn, f"x{d}")
        return lambda t, bi, g: gx[bi + t * batch if batch > 1 else t, g]

    def _te_collect(
        self,
        b: KernelBuilder,
        hs: list[dict[int, TensorRef]],
        finals: list[list[TensorRef]],
        seq: int,
        batch: int,
        hidden: int,
    ) -> list[TensorRef]:
        """Y from the per-step hidden states, and the final states, in the op's layout."""
        dirs = len(hs)
        layout = self.attr("layout")
        y_shape = self._y_shape(seq, dirs, batch, hidden, layout)

        def y_body(*i: Expr) -> Expr:
            t, d, bi, j = (i[1], i[2], i[0], i[3]) if layout else i
            value: Expr | None = None
            for dd in reversed(range(dirs)):
                for tt in reversed(range(seq)):
                    v = hs[dd][tt][bi, j]
                    if value is None:
                        value = v
                        continue
                    here = t.eq(tt) if dirs == 1 else t.eq(tt) & d.eq(dd)
                    value = te.select(here, v, value)
            assert value is not None
            return value

        outs = [b.compute(y_shape, y_body, name="y")]
        state = self._state_shape(dirs, batch, hidden, layout)
        for k in range(len(finals[0])):

            def s_body(*i: Expr, k: int = k) -> Expr:
                d, bi, j = (i[1], i[0], i[2]) if layout else i
                value = finals[dirs - 1][k][bi, j]
                for dd in reversed(range(dirs - 1)):
                    value = te.select(d.eq(dd), finals[dd][k][bi, j], value)
                return value

            outs.append(b.compute(state, s_body, name=f"state{k}"))
        return outs


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
    weights_kn = bool_prop(False)
    """W and R stored transposed, [dirs, K, 4H] (alter-layout sets it for constant weights)."""
    recurrent_panel = int_prop(0)
    """P > 0 (with weights_kn): R is packed into column panels, [dirs, 4H/P, H, P], so each step's
    product streams it contiguously (alter-layout sets it where the matmul's panels apply)."""
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def _r_shape(self, dirs: int, hidden: int) -> tuple[int, ...]:
        h4, panel = 4 * hidden, self.attr("recurrent_panel")
        if panel:
            return (dirs, h4 // panel, hidden, panel)
        return (dirs, hidden, h4) if self.attr("weights_kn") else (dirs, h4, hidden)

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        hidden, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(operand_types[0], layout)
        state = self._state_shape(dirs, batch, hidden, layout)
        h4 = 4 * hidden
        kn = self.attr("weights_kn")
        self._check(
            operand_types,
            [
                ("X", tuple(operand_types[0].get_shape())),
                ("W", (dirs, inp, h4) if kn else (dirs, h4, inp)),
                ("R", self._r_shape(dirs, hidden)),
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
        if self.attr("recurrent_panel"):  # [dirs, 4H/P, H, P] -> [dirs, H, 4H]
            r = np.stack([unpack_panels(rd) for rd in r])
        if self.attr("weights_kn"):
            w, r = w.transpose(0, 2, 1), r.transpose(0, 2, 1)
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

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, w, r, bias, h0, c0, p = inputs
        hid, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(x.type, layout)
        hs: list[dict[int, TensorRef]] = []
        finals: list[list[TensorRef]] = []
        for d in range(dirs):
            kn = self.attr("weights_kn")
            gx = self._te_input_projection(b, x, w, d, (seq, batch, inp), 4 * hid, kn)
            h, c = self._te_state(h0, d), self._te_state(c0, d)
            per_step: dict[int, TensorRef] = {}
            last_c: TensorRef | None = None
            for t in self._te_steps(seq, d):
                h_new, last_c = self._te_step(b, (gx, r, bias, p), d, t, h, c, (batch, hid))
                per_step[t] = h_new
                h, c = _reader(h_new), _reader(last_c)
            assert last_c is not None
            hs.append(per_step)
            finals.append([per_step[self._te_steps(seq, d)[-1]], last_c])
        return self._te_collect(b, hs, finals, seq, batch, hid)

    def _te_step(
        self,
        b: KernelBuilder,
        params: tuple,
        d: int,
        t: int,
        h: Callable[[Expr, Expr], Expr],
        c: Callable[[Expr, Expr], Expr],
        dims: tuple[int, int],
    ) -> tuple[TensorRef, TensorRef]:
        """One time step of one direction: (h_t, c_t); only h_{t-1} R^T is left to compute."""
        gx, r, bias, p = params
        batch, hid = dims
        kn = self.attr("weights_kn")
        panel = self.attr("recurrent_panel")
        gh = self._te_project(b, h, (batch, 4 * hid), hid, r, d, kn, f"h{d}.{t}", panel)

        def gate(bi: Expr, j: Expr, k: int) -> Expr:
            g = j + k * hid
            return gx(t, bi, g) + gh[bi, g] + bias[d, g] + bias[d, g + 4 * hid]

        def cell(bi: Expr, j: Expr) -> Expr:
            cv = c(bi, j)
            i_g = self._te_sigmoid(self._te_clip(gate(bi, j, 0) + p[d, j] * cv))
            if self.attr("input_forget"):
                f_g = 1.0 - i_g
            else:
                f_g = self._te_sigmoid(self._te_clip(gate(bi, j, 2) + p[d, j + 2 * hid] * cv))
            return f_g * cv + i_g * te.tanh(self._te_clip(gate(bi, j, 3)))

        c_new = b.compute((batch, hid), cell, name=f"c{d}.{t}", axes=("b", "j"))

        def hidden(bi: Expr, j: Expr) -> Expr:
            cv = c_new[bi, j]
            o_g = self._te_sigmoid(self._te_clip(gate(bi, j, 1) + p[d, j + hid] * cv))
            return o_g * te.tanh(cv)

        return b.compute((batch, hid), hidden, name=f"h{d}.{t}.out", axes=("b", "j")), c_new


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
    weights_kn = bool_prop(False)
    """W and R stored transposed, [dirs, K, 3H] (alter-layout sets it for constant weights)."""
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        hidden, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(operand_types[0], layout)
        state = self._state_shape(dirs, batch, hidden, layout)
        h3 = 3 * hidden
        kn = self.attr("weights_kn")
        self._check(
            operand_types,
            [
                ("X", tuple(operand_types[0].get_shape())),
                ("W", (dirs, inp, h3) if kn else (dirs, h3, inp)),
                ("R", (dirs, hidden, h3) if kn else (dirs, h3, hidden)),
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
        if self.attr("weights_kn"):
            w, r = w.transpose(0, 2, 1), r.transpose(0, 2, 1)
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

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        x, w, r, bias, h0 = inputs
        hid, dirs, layout = self._attrs()
        seq, batch, inp = self._x_dims(x.type, layout)
        hs: list[dict[int, TensorRef]] = []
        finals: list[list[TensorRef]] = []
        kn = self.attr("weights_kn")
        for d in range(dirs):
            h = self._te_state(h0, d)
            per_step: dict[int, TensorRef] = {}
            gx = self._te_input_projection(b, x, w, d, (seq, batch, inp), 3 * hid, kn)
            for t in self._te_steps(seq, d):
                h_new = self._te_step(b, (gx, r, bias), d, t, h, (batch, hid))
                per_step[t] = h_new
                h = _reader(h_new)
            hs.append(per_step)
            finals.append([per_step[self._te_steps(seq, d)[-1]]])
        return self._te_collect(b, hs, finals, seq, batch, hid)

    def _te_step(
        self,
        b: KernelBuilder,
        params: tuple,
        d: int,
        t: int,
        h: Callable[[Expr, Expr], Expr],
        dims: tuple[int, int],
    ) -> TensorRef:
        """One time step of one direction: h_t (x_t W^T is `gx`, computed for every step at
        once; with `weights_kn` the products by R are matmul tiles, else dot products)."""
        gx, r, bias = params
        batch, hid = dims
        kn = self.attr("weights_kn")

        def recurrent(a: Callable[[Expr, Expr], Expr], rows: tuple[int, int], name: str):
            if not kn:
                return self._te_matvec(b, a, hid, r, d, rows, batch, name)
            first, count = rows
            return self._te_project(b, a, (batch, count), hid, r, d, True, name, first=first)

        hzr = recurrent(h, (0, 2 * hid), f"hzr{d}.{t}")

        def zr(bi: Expr, j: Expr, k: int) -> Expr:
            g = j + k * hid
            pre = gx(t, bi, g) + bias[d, g] + hzr[bi, g] + bias[d, g + 3 * hid]
            return self._te_sigmoid(self._te_clip(pre))

        if self.attr("linear_before_reset"):
            hh = recurrent(h, (2 * hid, hid), f"hh{d}.{t}")
        else:
            rh = b.compute(
                (batch, hid),
                lambda bi, j: zr(bi, j, 1) * h(bi, j),
                name=f"rh{d}.{t}",
                axes=("b", "j"),
            )
            hh = recurrent(_reader(rh), (2 * hid, hid), f"hh{d}.{t}")

        def new_h(bi: Expr, j: Expr) -> Expr:
            rec = hh[bi, j] + bias[d, j + 5 * hid]
            if self.attr("linear_before_reset"):
                rec = zr(bi, j, 1) * rec
            cand = te.tanh(self._te_clip(gx(t, bi, j + 2 * hid) + bias[d, j + 2 * hid] + rec))
            z = zr(bi, j, 0)
            return (1.0 - z) * cand + z * h(bi, j)

        return b.compute((batch, hid), new_h, name=f"h{d}.{t}.out", axes=("b", "j"))


def _reader(t: TensorRef) -> Callable[[Expr, Expr], Expr]:
    """The element reader of a [batch, hidden] state."""
    return lambda bi, j: t[bi, j]


RNN_OPS: list[type[NNVMOp]] = [LSTMOp, GRUOp]
