"""`python -m bench --kernels`: the kernel classes that missed the fast paths (issue 14), one op
per model, against onnxruntime in the harness (outputs checked, interleaved rounds).

Each case is a shape a real export produces and the five bench models do not: 197 tokens (no
register tile divides the rows), torch's [seq, 1, hidden] projections, grouped convs with 16
and with 4 channels per group, dilated convs on 33 columns, 1x7 kernels on 17, a 7x7
depthwise conv. tests/e2e/test_kernel_classes.py checks the same classes for correctness."""

from __future__ import annotations

from collections.abc import Callable

import onnx
from onnx import helper

from nnvm.testing.onnx_models import single_op


def _conv(c: int, hw: int, k=(3, 3), groups: int = 1, dil: int = 1) -> onnx.ModelProto:
    ph, pw = dil * (k[0] - 1) // 2, dil * (k[1] - 1) // 2
    node = helper.make_node(
        "Conv", ["x", "w"], ["y"], group=groups, dilations=[dil, dil], pads=[ph, pw, ph, pw]
    )
    return single_op(node, [1, c, hw, hw], {"w": (c, c // groups, *k)})


def _matmul(x_shape: list[int], w_shape: tuple[int, int]) -> onnx.ModelProto:
    return single_op(helper.make_node("MatMul", ["x", "w"], ["y"]), x_shape, {"w": w_shape})


KERNELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "matmul 1x197x768 . 768x3072": lambda: _matmul([1, 197, 768], (768, 3072)),
    "matmul 197x1x768 . 768x2304": lambda: _matmul([197, 1, 768], (768, 2304)),
    "matmul 7x768 . 768x768": lambda: _matmul([7, 768], (768, 768)),
    "conv 3x3 g=16 256ch 28": lambda: _conv(256, 28, groups=16),
    "conv 3x3 g=32 128ch 56": lambda: _conv(128, 56, groups=32),
    "conv 3x3 d=2 256ch 33": lambda: _conv(256, 33, dil=2),
    "conv 3x3 d=12 256ch 33": lambda: _conv(256, 33, dil=12),
    "conv 1x7 192ch 17": lambda: _conv(192, 17, k=(1, 7)),
    "conv dw 7x7 96ch 56": lambda: _conv(96, 56, k=(7, 7), groups=96),
}
