"""A conv of an unblocked input (a 3-channel stem: NCHW in, NCHW16c out) runs its kernel
columns outermost among the taps (`conv.kw_outer`, conv2d.py): with the input channels and
rows inside, the loops LLVM unrolls read distinct input rows, instead of taps whose
broadcasts overlap (stride < kernel width) and were held, and spilled, across the unrolled
body. Its padded copy of the input runs as vectors (a pad of the innermost axis: masked
loads, formulas.lane_range_select). Each schedule is checked against the reference executor
through the tuner's runner."""

from __future__ import annotations

import pytest
from tuned_kernels import assert_compute_the_kernel, conv_bias_relu, task_of

from nnvm.tune.space import TaskSpace


def _stem(size: int, kernel: int, stride: int, out_blocks: int) -> str:
    pad = kernel // 2
    oh = (size + 2 * pad - kernel) // stride + 1
    x = f"tensor<1x3x{size}x{size}xf32>"
    wt = f"tensor<{out_blocks}x1x{kernel}x{kernel}x3x16xf32>"
    b = f"tensor<1x{out_blocks}x1x1x16xf32>"
    y = f"tensor<1x{out_blocks}x{oh}x{oh}x16xf32>"
    attrs = (
        f"strides = [{stride}, {stride}], padding = [{pad}, {pad}, {pad}, {pad}], "
        'data_layout = "NCHW", kernel_layout = "OIHW3i16o", out_layout = "NCHW16c"'
    )
    return conv_bias_relu(x, wt, b, y, attrs)


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "blocks"),
    [(30, 3, 2, 2), (23, 3, 1, 1), (33, 7, 2, 4)],
    ids=["3x3-s2", "3x3-s1-odd", "7x7-s2"],
)
def test_stem_taps_columns_outermost(size: int, kernel: int, stride: int, blocks: int) -> None:
    task = task_of(_stem(size, kernel, stride, blocks), "conv")
    assert task.default_config["conv.kw_outer"] is True
    schedule = TaskSpace(task).default().schedule
    assert 'te.reorder "conv2d" (n, ' in schedule and "kw, ic, kh, " in schedule, schedule
    space = TaskSpace(task)
    candidates = [space.default(), space.make({**task.default_config, "conv.kw_outer": False})]
    assert_compute_the_kernel(task, space, candidates)


@pytest.mark.parametrize(
    ("kernel", "cols"), [(3, 7), (7, 14)], ids=["3x3-seven-columns", "7x7-fourteen"]
)
def test_short_stems_take_seven_column_tiles(kernel: int, cols: int) -> None:
    """A 3x3 stem over 3 channels (27 products an output) tiles 7 output columns, a 7x7 one
    14 (conv2d.py STEM_COLUMNS); both compute the kernel at 111 columns (a tail tile)."""
    task = task_of(_stem(221, kernel, 2, 2), "conv")
    assert task.default_config["conv.cols"] == cols
    space = TaskSpace(task)
    assert_compute_the_kernel(task, space, [space.default()])
