"""A grouped NCHWc conv whose register tiles each read input blocks of their own (RegNetY's
groups of 8 channels, ResNeXt's; a dense conv whose one tile takes every output block) copies its padded input rows inside the tile instead of
making a whole padded copy first (targets/cpu/schedules/conv2d.py `_own_input_blocks`); a
tile of stacked rows, or a dense conv, keeps the whole copy. A whole padded copy of an
NCHW8c input (one narrower vector a position) runs its columns as a loop under fused outer
axes, not as one loop fused over all four with a div/mod chain per vector. Every schedule is
checked against the reference executor through the tuner's runner."""

from __future__ import annotations

import pytest
from tuned_kernels import assert_compute_the_kernel, conv_bias_relu, task_of

from nnvm.tune.space import TaskSpace

PAD_IN_TILE = 'te.compute_at "conv2d.pad" at "conv2d" oh'


def _kernel(groups: int, block: int, in_blocks: int, out_blocks: int, size: int, stride: int):
    """A 3x3 conv of `groups` groups, each `in_blocks` input and `out_blocks` output channel
    blocks of `block` channels, on a size x size map, with a bias and a ReLU."""
    h = size
    oh = (h + 2 - 3) // stride + 1
    x = f"tensor<1x{groups * in_blocks}x{h}x{h}x{block}xf32>"
    wt = f"tensor<{groups * out_blocks}x{in_blocks}x3x3x{block}x{block}xf32>"
    b = f"tensor<1x{groups * out_blocks}x1x1x{block}xf32>"
    y = f"tensor<1x{groups * out_blocks}x{oh}x{oh}x{block}xf32>"
    grouped = f"groups = {groups}, " if groups > 1 else ""
    attrs = (
        f"strides = [{stride}, {stride}], padding = [1, 1, 1, 1], {grouped}"
        f'data_layout = "NCHW{block}c", kernel_layout = "OIHW{block}i{block}o"'
    )
    return conv_bias_relu(x, wt, b, y, attrs)


def _all_ok(task, configs: list[dict]) -> None:
    space = TaskSpace(task)
    candidates = [space.make({**task.default_config, **c}) for c in configs]
    assert_compute_the_kernel(task, space, candidates)


CASES = [
    # (groups, block, in blocks, out blocks a group, size, stride, padded in the tile)
    pytest.param(6, 8, 1, 1, 56, 2, True, id="regnety-8-wide-groups-s2"),
    pytest.param(4, 8, 1, 1, 28, 1, True, id="8-wide-groups"),
    pytest.param(3, 16, 2, 2, 28, 1, True, id="two-blocks-a-group-two-a-tile"),
    pytest.param(4, 16, 1, 1, 7, 1, False, id="7x7-map-stacked-rows"),
    pytest.param(1, 16, 2, 4, 28, 1, False, id="dense"),
    # a dense conv whose one tile takes every output block (YOLO's 16 -> 32 stride-2 conv)
    pytest.param(1, 16, 1, 2, 56, 2, True, id="dense-one-tile-a-row-s2"),
]


@pytest.mark.parametrize(("groups", "block", "ib", "ob", "size", "stride", "in_tile"), CASES)
def test_grouped_convs_pad_in_the_tile_when_no_tile_shares_input(
    groups, block, ib, ob, size, stride, in_tile
) -> None:
    task = task_of(_kernel(groups, block, ib, ob, size, stride), "conv")
    schedule = TaskSpace(task).default().schedule
    assert (PAD_IN_TILE in schedule) == in_tile, schedule
    assert ("conv.pad_in_tile" in task.knobs) == in_tile
    # the whole copy: columns a loop, one vector a position (no 4-axis fused loop)
    assert 'te.fuse "conv2d.pad" (i, j, k, l)' not in schedule
    _all_ok(task, [{}, *([{"conv.pad_in_tile": False}] if in_tile else [])])
