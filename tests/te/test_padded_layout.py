"""layout_transform over channels its block does not divide: into a blocked layout the last
block is padded with zeros, out of one `logical` says how many channels are real. Each kernel,
lowered with its default schedule (vectorized, the reblock template between blocked layouts),
matches the reference executor, padding included."""

from __future__ import annotations

import pytest
from harness import check, parse

CASES = {
    "pad-then-crop": """
func.func @k(%x: tensor<1x24x5x7xf32>) -> tensor<1x24x5x7xf32> {
  %b = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : (tensor<1x24x5x7xf32>) -> tensor<1x2x5x7x16xf32>
  %r = nnvm.relu %b : (tensor<1x2x5x7x16xf32>) -> tensor<1x2x5x7x16xf32>
  %y = nnvm.layout_transform %r {src_layout = "NCHW16c", dst_layout = "NCHW", logical = array<i64: 1, 24, 5, 7>} : (tensor<1x2x5x7x16xf32>) -> tensor<1x24x5x7xf32>
  func.return %y : tensor<1x24x5x7xf32>
}""",
    "pad": """
func.func @k(%x: tensor<2x40x3x3xf32>) -> tensor<2x3x3x3x16xf32> {
  %b = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : (tensor<2x40x3x3xf32>) -> tensor<2x3x3x3x16xf32>
  func.return %b : tensor<2x3x3x3x16xf32>
}""",
    "reblock-into-padding": """
func.func @k(%x: tensor<1x3x5x7x8xf32>) -> tensor<1x2x5x7x16xf32> {
  %b = nnvm.layout_transform %x {src_layout = "NCHW8c", dst_layout = "NCHW16c"} : (tensor<1x3x5x7x8xf32>) -> tensor<1x2x5x7x16xf32>
  func.return %b : tensor<1x2x5x7x16xf32>
}""",
    "reblock-out-of-padding": """
func.func @k(%x: tensor<1x2x5x7x16xf32>) -> tensor<1x3x5x7x8xf32> {
  %b = nnvm.layout_transform %x {src_layout = "NCHW16c", dst_layout = "NCHW8c", logical = array<i64: 1, 24, 5, 7>} : (tensor<1x2x5x7x16xf32>) -> tensor<1x3x5x7x8xf32>
  func.return %b : tensor<1x3x5x7x8xf32>
}""",
    "weights-both-axes": """
func.func @k(%w: tensor<40x24x3x3xf32>) -> tensor<3x2x3x3x16x16xf32> {
  %b = nnvm.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW16i16o"} : (tensor<40x24x3x3xf32>) -> tensor<3x2x3x3x16x16xf32>
  func.return %b : tensor<3x2x3x3x16x16xf32>
}""",
}


@pytest.mark.parametrize("name", list(CASES))
def test_padded_layout_transform(name: str) -> None:
    check(parse(CASES[name]), atol=0)
