"""A transpose whose input rows are long (tokens x channels -> NCHW, as a SegFormer or Swin
export writes it) runs the axis the input is contiguous along just inside tiles of the last
output axis, so the input lines a tile reads are reused from L1 (scheduler.py `_transposed`);
a transform out of a channel block (16-float rows) keeps the plain loop nest, whose reads
stream consecutive lines. Every kernel matches the reference executor with its default
schedule, tails of the last axis included."""

from __future__ import annotations

import pytest
from harness import CTX, check, parse

from nnvm.dialects.te.schedule import ReorderOp, SplitOp
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass


def _tokens_to_nchw(tokens_h: int, tokens_w: int, channels: int) -> str:
    t = f"tensor<1x{tokens_h * tokens_w}x{channels}xf32>"
    tt = f"tensor<1x{channels}x{tokens_h * tokens_w}xf32>"
    y = f"tensor<1x{channels}x{tokens_h}x{tokens_w}xf32>"
    return f"""
func.func @k(%x: {t}) -> {y} {{
  %t = nnvm.transpose %x {{perm = [0, 2, 1]}} : ({t}) -> {tt}
  %y = nnvm.reshape %t {{shape = [1, {channels}, {tokens_h}, {tokens_w}]}} : ({tt}) -> {y}
  func.return %y : {y}
}}"""


def _unblock(channels: int, size: int) -> str:
    x = f"tensor<1x{channels // 16}x{size}x{size}x16xf32>"
    y = f"tensor<1x{channels}x{size * size}xf32>"
    n = f"tensor<1x{channels}x{size}x{size}xf32>"
    return f"""
func.func @k(%x: {x}) -> {y} {{
  %n = nnvm.layout_transform %x {{src_layout = "NCHW16c", dst_layout = "NCHW"}} : ({x}) -> {n}
  %y = nnvm.reshape %n {{shape = [1, {channels}, {size * size}]}} : ({n}) -> {y}
  func.return %y : {y}
}}"""


def _schedule(text: str):
    module = parse(text)
    scheduled = module.clone()
    LowerToTE().apply(CTX, scheduled)
    ApplyDefaultSchedulePass().apply(CTX, scheduled)
    return module, scheduled


@pytest.mark.parametrize(
    ("h", "w", "channels", "split"),
    [(8, 8, 64, False), (4, 100, 64, True), (3, 5, 96, False)],
    ids=["64-columns", "100-columns-tiled-with-a-tail", "odd"],
)
def test_tokens_to_nchw_runs_channels_inside_column_tiles(h, w, channels, split) -> None:
    module, scheduled = _schedule(_tokens_to_nchw(h, w, channels))
    reorders = [o for o in scheduled.walk() if isinstance(o, ReorderOp)]
    assert reorders, str(scheduled)
    order = [a.data for a in reorders[-1].properties["axes"].data]
    assert order[-2] == "j", order  # the channel axis, just inside the columns (tiles)
    assert any(isinstance(o, SplitOp) for o in scheduled.walk()) == split
    check(module, atol=0)


def test_unblocking_a_channel_block_keeps_the_plain_loop_nest() -> None:
    module, scheduled = _schedule(_unblock(32, 6))
    assert not [o for o in scheduled.walk() if isinstance(o, ReorderOp)], str(scheduled)
    check(module, atol=0)


def _patches_to_tokens() -> str:
    """MobileViT's unfold: [4, 4, 256, 36] patches -> [4, 256, 144] tokens, rows of 36."""
    x = "tensor<4x4x256x36xf32>"
    t = "tensor<4x256x4x36xf32>"
    y = "tensor<4x256x144xf32>"
    return f"""
func.func @k(%x: {x}) -> {y} {{
  %t = nnvm.transpose %x {{perm = [0, 2, 1, 3]}} : ({x}) -> {t}
  %y = nnvm.reshape %t {{shape = [4, 256, 144]}} : ({t}) -> {y}
  func.return %y : {y}
}}"""


def test_a_copy_with_runs_shorter_than_its_last_axis_is_not_one_fused_loop() -> None:
    """Its last axis reads runs of 36: one loop fused over every axis (vectors of 16) would
    rebuild each index by div/mod and split vectors across runs; the outer axes are fused and
    the last one stays a loop (MobileViT's unfold: 1.18 ms -> out of the top kernels)."""
    from nnvm.dialects.te.schedule import FuseOp

    module, scheduled = _schedule(_patches_to_tokens())
    fuses = [o for o in scheduled.walk() if isinstance(o, FuseOp)]
    assert fuses and all(
        [a.data for a in f.properties["axes"].data] != ["i", "j", "k"] for f in fuses
    ), str(scheduled)
    check(module, atol=0)
