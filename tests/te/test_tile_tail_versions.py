"""A register tile computed at its epilogue's column tiles, where the columns leave a tail (a
blocked 1x1 conv at 99 columns in tiles of 14, one column left): the column-tile loop is
versioned, so the full tile and the tail tile each get their own depth loop and copy-out and
never meet (loop_nests.py `versioned`; the tile's own nest is versioned the same way). Tested for fullness inside the depth loop instead, the
two tiles met at every step and LLVM gave both one register assignment: the 28 accumulators
rotated through registers every step (0.164 ms against 0.107 at 98 columns). Each version's
depth loop carries its accumulators with no test in it; the result matches the reference."""

from __future__ import annotations

import pytest
from harness import check, lower, parse
from xdsl.dialects import scf

from nnvm.targets.cpu.schedules import conv2d


def _conv(width: int) -> str:
    x = f"tensor<1x1x3x{width}x16xf32>"
    w = "tensor<4x1x1x1x16x16xf32>"
    y = f"tensor<1x4x3x{width}x16xf32>"
    attrs = 'data_layout = "NCHW16c", kernel_layout = "OIHW16i16o", out_layout = "NCHW16c"'
    return f"""
func.func @k(%x: {x}, %w: {w}) -> {y} {{
  %c = nnvm.conv2d %x, %w {{{attrs}}} : ({x}, {w}) -> {y}
  %y = nnvm.relu %c : ({y}) -> {y}
  func.return %y : {y}
}}"""


def _depth_loops(module) -> list[scf.ForOp]:
    return [op for op in module.walk() if isinstance(op, scf.ForOp) and len(op.iter_args) >= 4]


@pytest.mark.parametrize("width", [99, 97, 98], ids=["one-column-tail", "13-column-tail", "none"])
def test_full_and_tail_tiles_have_their_own_depth_loops(width: int, monkeypatch) -> None:
    monkeypatch.setattr(conv2d, "_conv_tile", lambda *a, **k: (2, 1, 14))
    module = parse(_conv(width))
    lowered = lower(module.clone())
    loops = _depth_loops(lowered)
    if width % 14 == 0:
        assert len(loops) == 1, "a map with no tail has one tile"
    else:
        # the full tile's first, then the tail's (its columns guarded)
        assert len(loops) == 2, f"{len(loops)} depth loops carry accumulators"
        full = loops[0]
        assert len(full.iter_args) == 28
        assert any(
            any(isinstance(op, scf.IfOp) for op in loop.body.walk()) for loop in loops[1:]
        ), "no tail tile with its columns guarded"
        assert not any(isinstance(op, scf.IfOp) for op in full.body.walk()), (
            "the full tile's depth loop tests for a tail"
        )
    check(module, atol=1e-4)
