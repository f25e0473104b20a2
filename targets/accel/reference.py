"""The numpy int8 reference the simulator is checked against: conv2d / dense with int32
accumulation (wrapping), plus bias, an arithmetic shift right, and a clip to int8 (or to
[0, 127] with relu), as the accelerator's requantization computes it."""

from __future__ import annotations

import numpy as np


def requantize(acc: np.ndarray, shift, relu: bool, round_half_up: bool = False) -> np.ndarray:
    """clip(acc >> shift) of an (N, C, ...) int32 array; `shift` one amount or one per channel."""
    shift = np.asarray(shift, np.int64).reshape(-1, *([1] * (acc.ndim - 2)))
    if round_half_up:
        half = np.where(shift > 0, np.left_shift(1, np.maximum(shift, 1) - 1), 0)
        acc = (acc.astype(np.int64) + half).astype(np.int32)
    return np.clip(acc >> shift, 0 if relu else -128, 127).astype(np.int8)


def conv2d_int8(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None,
    stride: int,
    padding: int,
    shift: int,
    relu: bool = False,
    round_half_up: bool = False,
) -> np.ndarray:
    """(N, C, H, W) int8 * (O, C, KH, KW) int8 -> (N, O, OH, OW) int8."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]  # (N, C, OH, OW, KH, KW)
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64), optimize=True)
    acc = acc.astype(np.int64).astype(np.int32)  # exact in float64, then int32 wrap-around
    if bias is not None:
        acc = (acc.astype(np.int64) + bias.astype(np.int64)[None, :, None, None]).astype(np.int32)
    return requantize(acc, shift, relu, round_half_up)


def dense_int8(x, w, bias, shift, relu=False):
    """(N, K) int8 @ (M, K)^T int8 -> (N, M) int8."""
    y = conv2d_int8(x[:, :, None, None], w[:, :, None, None], bias, 1, 0, shift, relu)
    return y[:, :, 0, 0]
