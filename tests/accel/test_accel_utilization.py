"""GEMM-core utilization in the cycle model for ResNet-18's convs, with one and two virtual
threads: printed per layer (`pytest -s -m slow tests/accel/test_accel_utilization.py`), and
checked for what must hold: the same GEMM work either way, and double buffering never slower."""

from __future__ import annotations

import numpy as np
import pytest
from test_accel_layers import RESNET18_CONVS, _operands

from nnvm.targets.accel.reference import conv2d_int8
from nnvm.targets.accel.run_layer import run_conv2d

# how often each distinct conv occurs in ResNet-18 (weights the whole-network figure)
OCCURRENCES = {
    (64, 64, 56, 3, 1, 1): 4,
    (128, 128, 28, 3, 1, 1): 3,
    (256, 256, 14, 3, 1, 1): 3,
    (512, 512, 7, 3, 1, 1): 3,
}


def _measure(shape):
    c, o, h, k, s, p = shape
    x, w, bias = _operands(0, c, o, h, k)
    want = conv2d_int8(x, w, bias, s, p, 9, True)
    reports = []
    for vt in (1, 2):
        y, report = run_conv2d(x, w, bias, s, p, 9, True, vt)
        np.testing.assert_array_equal(y, want)
        reports.append(report)
    return reports


def test_virtual_threads_hide_load_latency():
    one, two = _measure((128, 128, 28, 3, 1, 1))
    assert one.gemm_cycles == two.gemm_cycles
    assert two.total_cycles < one.total_cycles
    assert two.busy["load"] >= one.busy["load"]  # the same or more DMA, overlapped


@pytest.mark.slow
def test_resnet18_utilization_table():
    rows, totals = [], np.zeros(3)
    print("\nlayer (cin, cout, size, k, stride, pad)   vt=1 util   cycles    vt=2 util   cycles")
    for shape in RESNET18_CONVS:
        one, two = _measure(shape)
        assert one.gemm_cycles == two.gemm_cycles
        assert two.total_cycles <= one.total_cycles, shape
        rows.append((shape, one, two))
        if shape[0] != 3:  # the stem stays on the CPU by default
            n = OCCURRENCES.get(shape, 1)
            totals += (n * one.gemm_cycles, n * one.total_cycles, n * two.total_cycles)
        print(
            f"{shape!s:40} {one.gemm_utilization:8.1%} {one.total_cycles:9d}"
            f"   {two.gemm_utilization:8.1%} {two.total_cycles:9d}"
        )
    print(
        f"{'ResNet-18 convs but the stem, x occurrences':40} {totals[0] / totals[1]:8.1%} {int(totals[1]):9d}"
        f"   {totals[0] / totals[2]:8.1%} {int(totals[2]):9d}"
    )
