"""Host-side layouts: NCHW int8 data to NCHW{BATCH}n{BLOCK_IN}c blocks, OIHW weights to
OIHW{BLOCK_OUT}o{BLOCK_IN}i blocks, per-channel int32 bias to acc entries, and the blocked
int8 output back to NCHW. Channels (and the batch) are zero-padded up to whole blocks."""

from __future__ import annotations

import numpy as np

from nnvm.targets.accel.config import AccelConfig


def blocks(n: int, block: int) -> int:
    return -(-n // block)


def _pad_axis(x: np.ndarray, axis: int, to: int) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, to - x.shape[axis])
    return np.pad(x, widths)


def pack_data(cfg: AccelConfig, x: np.ndarray) -> np.ndarray:
    """(N, C, H, W) -> (N/b, C/bi, H, W, b, bi): inp entries in DRAM order."""
    n, c, h, w = x.shape
    nb, cb = blocks(n, cfg.batch), blocks(c, cfg.block_in)
    x = _pad_axis(_pad_axis(x, 0, nb * cfg.batch), 1, cb * cfg.block_in)
    x = x.reshape(nb, cfg.batch, cb, cfg.block_in, h, w)
    return np.ascontiguousarray(x.transpose(0, 2, 4, 5, 1, 3).astype(np.int8))


def pack_weights(cfg: AccelConfig, w: np.ndarray) -> np.ndarray:
    """(O, I, KH, KW) -> (O/bo, I/bi, KH, KW, bo, bi): wgt entries in DRAM order."""
    o, i, kh, kw = w.shape
    ob, ib = blocks(o, cfg.block_out), blocks(i, cfg.block_in)
    w = _pad_axis(_pad_axis(w, 0, ob * cfg.block_out), 1, ib * cfg.block_in)
    w = w.reshape(ob, cfg.block_out, ib, cfg.block_in, kh, kw)
    return np.ascontiguousarray(w.transpose(0, 2, 4, 5, 1, 3).astype(np.int8))


def pack_bias(cfg: AccelConfig, bias: np.ndarray) -> np.ndarray:
    """(O,) int32 -> (O/bo, b, bo): one acc entry per output block, the same for every batch row."""
    ob = blocks(len(bias), cfg.block_out)
    b = _pad_axis(bias.astype(np.int32), 0, ob * cfg.block_out).reshape(ob, 1, cfg.block_out)
    return np.ascontiguousarray(np.broadcast_to(b, (ob, cfg.batch, cfg.block_out)))


def unpack_output(cfg: AccelConfig, y: np.ndarray, n: int, c: int) -> np.ndarray:
    """(N/b, C/bo, H, W, b, bo) -> (N, C, H, W), the padding dropped."""
    nb, cb, h, w = y.shape[:4]
    y = y.transpose(0, 4, 1, 5, 2, 3).reshape(nb * cfg.batch, cb * cfg.block_out, h, w)
    return np.ascontiguousarray(y[:n, :c])
