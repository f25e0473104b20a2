"""A transform out of a channel-blocked layout (NCHW16c -> NCHW) whose inlined producer is
costly (interpolation taps, a transcendental function) computes the producer a row at a time
in the blocked layout, vectorized along the block, and copies the row out channel by channel
(scheduler.py `_unblock_rows`); a cheap producer (a ReLU) stays inlined. Each kernel, with
its default schedule, matches the reference executor, channel tails included."""

from __future__ import annotations

import pytest
from harness import CTX, check, parse

from nnvm.dialects.te.schedule import ComputeAtOp
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass


def _kernel(op: str, channels: int, size: int, out_size: int) -> str:
    blocks = -(-channels // 16)
    x = f"tensor<1x{blocks}x{size}x{size}x16xf32>"
    y16 = f"tensor<1x{blocks}x{out_size}x{out_size}x16xf32>"
    y = f"tensor<1x{channels}x{out_size}x{out_size}xf32>"
    if op == "resize":
        produce = (
            f"%r = nnvm.resize %x {{size = [1, {blocks}, {out_size}, {out_size}, 16], "
            f'mode = "linear"}} : ({x}) -> {y16}'
        )
    else:
        produce = f"%r = nnvm.{op} %x : ({x}) -> {y16}"
    return f"""
func.func @k(%x: {x}) -> {y} {{
  {produce}
  %y = nnvm.layout_transform %r {{src_layout = "NCHW16c", dst_layout = "NCHW", logical = array<i64: 1, {channels}, {out_size}, {out_size}>}} : ({y16}) -> {y}
  func.return %y : {y}
}}"""


@pytest.mark.parametrize(
    ("op", "channels", "size", "out_size", "rows"),
    [
        ("resize", 21, 4, 16, True),
        ("resize", 32, 5, 9, True),
        ("sigmoid", 21, 6, 6, True),
        ("relu", 21, 6, 6, False),
    ],
    ids=["resize-x4-channel-tail", "resize-odd", "sigmoid", "relu-stays-inlined"],
)
def test_unblocking_transform_computes_costly_rows_blocked(
    op: str, channels: int, size: int, out_size: int, rows: bool
) -> None:
    lowered_from = parse(_kernel(op, channels, size, out_size))
    scheduled = lowered_from.clone()
    LowerToTE().apply(CTX, scheduled)
    ApplyDefaultSchedulePass().apply(CTX, scheduled)
    at = [o for o in scheduled.walk() if isinstance(o, ComputeAtOp)]
    assert bool(at) == rows, str(scheduled)
    check(lowered_from, atol=1e-5)
