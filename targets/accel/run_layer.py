"""Run one int8 layer on the simulated accelerator: generate its program, simulate it, and read
the unpacked output back, with the cycle report."""

from __future__ import annotations

import numpy as np

from nnvm.targets.accel.config import DEFAULT_CONFIG, AccelConfig
from nnvm.targets.accel.conv2d_program import conv2d_program
from nnvm.targets.accel.simulator import Report, simulate
from nnvm.targets.accel.tiling import Conv2dLayer


def run_conv2d(
    x: np.ndarray,
    w: np.ndarray,
    bias: np.ndarray | None = None,
    stride: int = 1,
    padding: int = 0,
    shift: int = 0,
    relu: bool = False,
    virtual_threads: int = 1,
    cfg: AccelConfig = DEFAULT_CONFIG,
    round_half_up: bool = False,
) -> tuple[np.ndarray, Report]:
    """clip((conv2d(x, w) + bias) >> shift) for int8 NCHW x and OIHW w; (output, report)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    layer = Conv2dLayer(n, c, h, wd, o, kh, kw, stride, padding)
    program = conv2d_program(
        cfg, layer, x, w, bias, shift, relu, virtual_threads, round_half_up=round_half_up
    )
    report = simulate(cfg, program.insns, program.dram)
    return program.output(), report


def run_dense(x, w, bias=None, shift=0, relu=False, virtual_threads=1, cfg=DEFAULT_CONFIG):
    """(N, K) int8 @ (M, K)^T int8 as a 1x1 conv on a 1x1 image; (output (N, M), report)."""
    y, report = run_conv2d(
        x[:, :, None, None], w[:, :, None, None], bias, 1, 0, shift, relu, virtual_threads, cfg
    )
    return y[:, :, 0, 0], report
