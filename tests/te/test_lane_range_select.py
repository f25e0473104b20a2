"""A select whose condition bounds the vectorized axis (a pad of the innermost axis, a causal
mask) runs as vectors: one load masked to the lanes in range, the other value in the rest
(formulas.lane_range_select). Each kernel is checked against numpy, compiled and in the
loop interpreter (which also fails a masked-in lane that reads outside its row), and is
checked to be vectorized."""

from __future__ import annotations

import numpy as np
from harness import check, parse
from hypothesis import given, settings
from hypothesis import strategies as st


def _pad_module(rows: int, width: int, left: int, right: int, fill: str) -> str:
    out = width + left + right
    return f"""
func.func @k(%x: tensor<{rows}x{width}xf32>) -> tensor<{rows}x{out}xf32> {{
  %p = te.compute "pad" [i, j] template "pad" = select(and(j >= {left}, j - {left} < {width}), %x[i, j - {left}], {fill}) : (tensor<{rows}x{width}xf32>) -> tensor<{rows}x{out}xf32>
  func.return %p : tensor<{rows}x{out}xf32>
}}"""


def _vectorized(lowered) -> bool:  # noqa: ANN001
    """Every read of x is a masked vector load (no scalar load of x, no guard around one)."""
    text = str(lowered)
    return "vector.maskedload %x" in text and "memref.load %x" not in text


@settings(max_examples=25, deadline=None)
@given(
    width=st.integers(1, 40),
    left=st.integers(0, 5),
    right=st.integers(0, 5),
    lanes=st.sampled_from([4, 8, 16]),
    fill=st.sampled_from(["0.0", "-1.5"]),
)
def test_pad_of_the_vectorized_axis(width: int, left: int, right: int, lanes: int, fill: str):
    x = np.random.default_rng(width).standard_normal((3, width)).astype(np.float32)
    want = np.pad(x, ((0, 0), (left, right)), constant_values=float(fill))
    module = parse(_pad_module(3, width, left, right, fill))
    schedule = f'te.split "pad" j by {lanes} -> (j.o, j.i)\nte.vectorize "pad" j.i'
    lowered = check(module, [x], schedule=schedule, backend="both", want=[want], atol=0)
    if width + left + right > 1:  # one column: a scalar loop
        assert _vectorized(lowered)


def test_pad_of_rows_and_columns_vectorized():
    """The stem conv's pad: rows (uniform per vector) and columns (lanes) in one condition;
    a row outside the input is a vector of the fill, its load all masked off."""
    text = """
func.func @k(%x: tensor<2x5x21xf32>) -> tensor<2x7x23xf32> {
  %p = te.compute "pad" [c, h, w] template "pad" = select(and(and(and(h >= 1, h - 1 < 5), w >= 1), w - 1 < 21), %x[c, h - 1, w - 1], 0.0) : (tensor<2x5x21xf32>) -> tensor<2x7x23xf32>
  func.return %p : tensor<2x7x23xf32>
}"""
    x = np.random.default_rng(0).standard_normal((2, 5, 21)).astype(np.float32)
    want = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    schedule = 'te.split "pad" w by 16 -> (w.o, w.i)\nte.vectorize "pad" w.i'
    lowered = check(parse(text), [x], schedule=schedule, backend="both", want=[want], atol=0)
    assert _vectorized(lowered)


def test_causal_mask_vectorized():
    """select(j <= i, x, fill): the lanes up to the diagonal read, the rest take the fill
    (the read is in bounds everywhere: the select is not lazy, and was a scalar loop)."""
    text = """
func.func @k(%x: tensor<9x13xf32>) -> tensor<9x13xf32> {
  %m = te.compute "mask" [i, j] = select(j <= i, %x[i, j], -1000000000.0) : (tensor<9x13xf32>) -> tensor<9x13xf32>
  func.return %m : tensor<9x13xf32>
}"""
    x = np.random.default_rng(1).standard_normal((9, 13)).astype(np.float32)
    want = np.where(np.tril(np.ones((9, 13), bool)), x, np.float32(-1e9))
    schedule = 'te.split "mask" j by 8 -> (j.o, j.i)\nte.vectorize "mask" j.i'
    lowered = check(parse(text), [x], schedule=schedule, backend="both", want=[want], atol=0)
    assert "vector.maskedload" in str(lowered)


def test_condition_that_is_not_a_range_stays_scalar():
    """j == 3 is one lane, not a bound on the lanes: the loop stays scalar, and right."""
    text = """
func.func @k(%x: tensor<2x11xf32>) -> tensor<2x11xf32> {
  %m = te.compute "m" [i, j] = select(j == 3, %x[i, j], 0.0) : (tensor<2x11xf32>) -> tensor<2x11xf32>
  func.return %m : tensor<2x11xf32>
}"""
    x = np.random.default_rng(2).standard_normal((2, 11)).astype(np.float32)
    want = np.zeros_like(x)
    want[:, 3] = x[:, 3]
    schedule = 'te.split "m" j by 8 -> (j.o, j.i)\nte.vectorize "m" j.i'
    lowered = check(parse(text), [x], schedule=schedule, backend="both", want=[want], atol=0)
    assert "vector.maskedload" not in str(lowered)


def test_false_branch_that_reads_stays_lazy():
    """A false branch that reads (x[i - 1, 0], outside x on row 0) would be computed for
    every lane: such a select keeps its scf.if, the read only where it is taken."""
    text = """
func.func @k(%x: tensor<3x9xf32>) -> tensor<3x10xf32> {
  %p = te.compute "p" [i, j] = select(and(j >= 1, j - 1 < 9), %x[i, j - 1], select(i >= 1, %x[i - 1, 0], 0.0)) : (tensor<3x9xf32>) -> tensor<3x10xf32>
  func.return %p : tensor<3x10xf32>
}"""
    x = np.random.default_rng(3).standard_normal((3, 9)).astype(np.float32)
    want = np.zeros((3, 10), np.float32)
    want[:, 1:] = x
    want[1:, 0] = x[:-1, 0]
    schedule = 'te.split "p" j by 8 -> (j.o, j.i)\nte.vectorize "p" j.i'
    lowered = check(parse(text), [x], schedule=schedule, backend="both", want=[want], atol=0)
    assert "vector.maskedload %x" not in str(lowered)
