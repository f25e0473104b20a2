"""prune-conv-taps: convs whose window taps read only padding become smaller convs that
compute the same thing (reference executor before and after), for any size, stride, padding
and dilation; the convs of DeepLab's ASPP on a 16x16 map become 1x1."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_graph_rewrites import PASSES, check_pass, t

from nnvm.passes.prune_conv_taps import PruneConvTapsPass, pruned_axis, tap_bands

PASSES["prune-conv-taps"] = PruneConvTapsPass


def conv(x: tuple[int, ...], w: tuple[int, ...], pads, dil, strides=(1, 1), groups=1) -> str:
    from nnvm.dialects.nnvm.conv import conv_output_size

    oh = conv_output_size(x[2], w[2], strides[0], pads[0], pads[2], dil[0])
    ow = conv_output_size(x[3], w[3], strides[1], pads[1], pads[3], dil[1])
    y = (x[0], w[0], oh, ow)
    return f"""
func.func @main(%x: {t(x)}) -> {t(y)} {{
  %w = nnvm.param "w" : {t(w)}
  %y = nnvm.conv2d %x, %w {{padding = {list(pads)}, dilation = {list(dil)}, strides = {list(strides)}, groups = {groups}}} : ({t(x)}, {t(w)}) -> {t(y)}
  func.return %y : {t(y)}
}}
"""


def conv_windows(module) -> list[tuple[int, ...]]:
    from nnvm.dialects.nnvm.conv import Conv2DOp

    return [
        tuple(op.operands[1].type.get_shape()[2:])
        for op in module.walk()
        if isinstance(op, Conv2DOp)
    ]


@pytest.mark.parametrize("dilation", [24, 36])
def test_aspp_branch_on_a_small_map_becomes_1x1(dilation: int) -> None:
    text = conv((1, 8, 16, 16), (4, 8, 3, 3), [dilation] * 4, (dilation, dilation))
    after = check_pass(text, "prune-conv-taps")
    assert conv_windows(after) == [(1, 1)]
    (op,) = [op for op in after.walk() if op.name == "nnvm.conv2d"]
    assert list(op.attr("padding")) == [0, 0, 0, 0]


def test_partly_dead_window_keeps_its_live_rows() -> None:
    # 7 rows, dilation 4, padding 8: taps 0 and 4 read rows -8 and 8, outside for every output;
    # the other three read the input for most rows (too much work left to split into bands)
    after = check_pass(conv((1, 3, 7, 7), (2, 3, 5, 3), [8, 1, 8, 1], (4, 1)), "prune-conv-taps")
    assert conv_windows(after) == [(3, 3)]


def test_atrous_window_overhanging_the_map_splits_into_bands() -> None:
    # DeepLab's rate-12 ASPP branch on a 16x16 map: rows 0-3 read taps 1-2, rows 4-11 tap 1,
    # rows 12-15 taps 0-1 (the same for columns): nine convs, a quarter of the work
    text = conv((1, 8, 16, 16), (4, 8, 3, 3), [12] * 4, (12, 12))
    after = check_pass(text, "prune-conv-taps")
    assert conv_windows(after) == [(a, b) for a in (2, 1, 2) for b in (2, 1, 2)]
    convs = [op for op in after.walk() if op.name == "nnvm.conv2d"]
    assert all(list(op.attr("padding")) == [0, 0, 0, 0] for op in convs)
    assert [tuple(op.results[0].type.get_shape()[2:]) for op in convs][:3] == [
        (4, 4),
        (4, 8),
        (4, 4),
    ]


def test_undilated_convs_on_small_maps_are_not_split() -> None:
    after = check_pass(conv((1, 3, 2, 2), (2, 3, 3, 3), [1, 1, 1, 1], (1, 1)), "prune-conv-taps")
    assert conv_windows(after) == [(3, 3)]


def test_live_windows_are_left_alone() -> None:
    after = check_pass(conv((1, 3, 9, 9), (2, 3, 3, 3), [1, 1, 1, 1], (1, 1)), "prune-conv-taps")
    assert conv_windows(after) == [(3, 3)]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 9),
    kernel=st.integers(1, 5),
    stride=st.integers(1, 3),
    dilation=st.integers(1, 6),
    pad_lo=st.integers(0, 12),
    pad_hi=st.integers(0, 12),
    groups=st.sampled_from([1, 2]),
)
def test_pruning_keeps_the_result(size, kernel, stride, dilation, pad_lo, pad_hi, groups) -> None:
    from nnvm.dialects.nnvm.conv import conv_output_size

    out = conv_output_size(size, kernel, stride, pad_lo, pad_hi, dilation)
    if out < 1:
        return
    text = conv(
        (1, 4, size, 5),
        (4, 4 // groups, kernel, 1),
        [pad_lo, 0, pad_hi, 0],
        (dilation, 1),
        (stride, 1),
        groups,
    )
    after = check_pass(text, "prune-conv-taps")
    plan = pruned_axis(size, out, kernel, stride, pad_lo, dilation)
    bands = tap_bands(size, out, kernel, stride, pad_lo, dilation)
    windows = conv_windows(after)
    if len(windows) == 1:
        assert windows == [(plan[1] if plan else kernel, 1)]
    else:  # split into bands of output rows, each with the taps live there
        assert dilation > 1 and bands is not None
        assert windows == [(t1 - t0, 1) for _, _, t0, t1 in bands]
