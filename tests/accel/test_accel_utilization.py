"""GEMM-core utilization in the cycle model for ResNet-18's convs, with one and two virtual
threads, each module with its own DMA port and with one shared port: printed per layer
(`pytest -s -m slow tests/accel/test_accel_utilization.py`), and checked for what must hold:
the same GEMM work either way, double buffering never slower where each module has its own
DMA port, and faster over the whole network with one shared port (there a layer may lose a
little: its two-slot tiles are smaller, and one port serves the loads and stores in whole
instructions)."""

from __future__ import annotations

import numpy as np
import pytest
from test_accel_layers import RESNET18_CONVS, _operands

from nnvm.targets.accel.config import DEFAULT_CONFIG, config_from_dict
from nnvm.targets.accel.reference import conv2d_int8
from nnvm.targets.accel.run_layer import run_conv2d

# how often each distinct conv occurs in ResNet-18 (weights the whole-network figure)
OCCURRENCES = {
    (64, 64, 56, 3, 1, 1): 4,
    (128, 128, 28, 3, 1, 1): 3,
    (256, 256, 14, 3, 1, 1): 3,
    (512, 512, 7, 3, 1, 1): 3,
}
SHARED = config_from_dict({"SHARED_DMA": 1}, "<shared DMA port>")


def _measure(shape, cfg=DEFAULT_CONFIG):
    c, o, h, k, s, p = shape
    x, w, bias = _operands(0, c, o, h, k)
    want = conv2d_int8(x, w, bias, s, p, 9, True)
    reports = []
    for vt in (1, 2):
        y, report = run_conv2d(x, w, bias, s, p, 9, True, vt, cfg)
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
    totals = np.zeros(5)
    print(
        "\n(cin, cout, size, k, stride, pad)   own DMA ports: vt=1   vt=2   one shared port: vt=1   vt=2"
    )
    for shape in RESNET18_CONVS:
        runs = _measure(shape) + _measure(shape, SHARED)
        assert len({r.gemm_cycles for r in runs}) == 1
        assert runs[1].total_cycles <= runs[0].total_cycles, shape
        if shape[0] != 3:  # the stem stays on the CPU by default
            n = OCCURRENCES.get(shape, 1)
            totals += n * np.array([runs[0].gemm_cycles] + [r.total_cycles for r in runs])
        print(f"{shape!s:36}" + "".join(f"{r.gemm_utilization:>9.1%}" for r in runs))
    print(
        f"{'ResNet-18 convs but the stem':36}"
        + "".join(f"{totals[0] / t:>9.1%}" for t in totals[1:])
    )
    assert totals[4] < totals[3]  # shared port: vt=2 faster over the network
    assert totals[0] / totals[1] >= 0.70 and totals[0] / totals[2] >= 0.85  # the bars
