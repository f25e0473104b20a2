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
    _check_rows_computed_at(_kernel(op, channels, size, out_size), rows)


def _check_rows_computed_at(text: str, computed_at: bool) -> None:
    """The default schedule computes the producer at the transform's rows (or not), and the
    kernel matches the reference executor."""
    lowered_from = parse(text)
    scheduled = lowered_from.clone()
    LowerToTE().apply(CTX, scheduled)
    ApplyDefaultSchedulePass().apply(CTX, scheduled)
    at = [o for o in scheduled.walk() if isinstance(o, ComputeAtOp)]
    assert bool(at) == computed_at, str(scheduled)
    check(lowered_from, atol=1e-5)


def _blocking_kernel(op: str, channels: int, rows: int, cols: int) -> str:
    blocks = -(-channels // 16)
    x = f"tensor<1x{channels}x{rows}x{cols}xf32>"
    y = f"tensor<1x{blocks}x{rows}x{cols}x16xf32>"
    scale = f"tensor<1x{channels}x1x1xf32>"
    if op == "silu":  # a group norm's apply (x * scale + shift) and SiLU, as a UNet has them
        produce = f"""%a = nnvm.mul %x, %s : ({x}, {scale}) -> {x}
  %b = nnvm.add %a, %s : ({x}, {scale}) -> {x}
  %g = nnvm.sigmoid %b : ({x}) -> {x}
  %r = nnvm.mul %b, %g : ({x}, {x}) -> {x}"""
    else:
        produce = f"%r = nnvm.{op} %x : ({x}) -> {x}"
    return f"""
func.func @k(%x: {x}, %s: {scale}) -> {y} {{
  {produce}
  %y = nnvm.layout_transform %r {{src_layout = "NCHW", dst_layout = "NCHW16c"}} : ({x}) -> {y}
  func.return %y : {y}
}}"""


@pytest.mark.parametrize(
    ("op", "channels", "rows", "cols", "computed_at"),
    [
        ("silu", 32, 3, 48, True),
        ("silu", 21, 2, 40, True),
        ("sigmoid", 16, 3, 17, True),
        ("sigmoid", 32, 4, 7, False),
        ("relu", 32, 3, 48, False),
    ],
    ids=["silu", "silu-channel-and-row-tails", "sigmoid", "rows-shorter-than-a-vector", "relu"],
)
def test_blocking_transform_computes_costly_rows_in_vectors(
    op: str, channels: int, rows: int, cols: int, computed_at: bool
) -> None:
    """The mirror: a transform into NCHW16c whose inlined producer is costly computes the
    block's rows of the producer in vectors along the row (`_block_rows`); a ReLU, or rows
    shorter than a vector, stay inlined."""
    _check_rows_computed_at(_blocking_kernel(op, channels, rows, cols), computed_at)
