"""A numpy int8 reference of quantize-int8's arithmetic, written from the formulas in
passes/quantize_requant.py (not from the graph the pass emits): the tests compare the CPU
build of a quantized graph with it bit for bit."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nnvm.passes import quantize_requant as rq
from nnvm.quantize import Calibration


class Int8Numpy:
    """Replays one quantized anchor at a time: quantize the input, integer conv/dense with an
    int32 bias, requantize, dequantize (the graph's result: dequantize the int32 sums)."""

    def __init__(self, cal: Calibration, method: str, requant: str, last: str = ""):
        self.cal, self.method, self.requant = cal, method, requant
        self.last = last  # the anchor whose output the graph returns
        self.pow2 = requant == "shift"

    def _scale(self, name: str) -> float:
        return rq.activation_scale(self.cal.range_of(name, self.method), self.pow2)

    def _input(self, x: np.ndarray, key: str) -> tuple[np.ndarray, float]:
        s = self._scale(f"{key}/in0")
        scaled = x.astype(np.float32) * np.float32(1.0 / s)
        return np.clip(np.round(scaled), -127, 127).astype(np.int8), s

    def _finish(self, acc: np.ndarray, s_x: float, s_w: np.ndarray, b, key: str, axis: int):
        shape = [1] * acc.ndim
        shape[axis] = -1
        acc = acc.astype(np.int64)
        assert np.abs(acc).max(initial=0) < 2**31  # the int32 accumulator does not overflow
        acc = acc.astype(np.int32)
        if b is not None:
            acc = acc + rq.quantize_bias(b, s_x, s_w).reshape(shape)
        if self.last == key:  # a graph result: dequantized from int32
            scale = (s_x * s_w).astype(np.float32).reshape(shape)
            return acc.astype(np.float32) * scale
        s_y = self._scale(f"{key}/out")
        ratio = (s_x * s_w / s_y).reshape(shape)
        if self.requant == "multiplier":
            m, n = rq.fixed_point(ratio)
            yq = rq.requantize_multiplier(acc, m, n)
        elif self.requant == "float":
            yq = rq.requantize_float(acc, ratio)
        else:
            yq = rq.requantize_shift(acc, rq.power_of_two_shift(ratio))
        return yq.astype(np.float32) * np.float32(s_y)

    def conv2d(self, x, w, b, key: str, stride: int = 1, pad: int = 0) -> np.ndarray:
        q, s_x = self._input(x, key)
        s_w = rq.weight_scales(w, 0, self.pow2)
        wq = rq.quantize_weight(w, s_w, 0).astype(np.int64)
        qp = np.pad(q.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        kh, kw = w.shape[2:]
        win = sliding_window_view(qp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
        acc = np.einsum("nchwij,ocij->nohw", win, wq)
        return self._finish(acc, s_x, s_w, b, key, 1)

    def dense(self, x, w, b, key: str) -> np.ndarray:
        q, s_x = self._input(x, key)
        s_w = rq.weight_scales(w, 0, self.pow2)
        wq = rq.quantize_weight(w, s_w, 0).astype(np.int64)
        acc = q.astype(np.int64) @ wq.T
        return self._finish(acc, s_x, s_w, b, key, acc.ndim - 1)
