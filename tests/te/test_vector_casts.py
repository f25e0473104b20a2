"""Casts, integer compares and selects vectorize (nnvm.support.xdsl_fixes widens xDSL's arith
ops to vectors, as MLIR's are): an int8 quantize kernel and an int64 requantize kernel run as
vector loops and still equal the reference executor exactly. A select whose branches only read
in bounds (indexed by the axes themselves) computes both branches as lanes."""

from __future__ import annotations

import re

import numpy as np
from harness import check, parse


def vector_op(text: str, op: str, src: str, dst: str) -> bool:
    return re.search(rf"{op} .*: vector<\d+x{src}> to vector<\d+x{dst}>", text) is not None


QUANTIZE = """
func.func @k(%x: tensor<3x40xf32>) -> tensor<3x40xf32> {
  %s = nnvm.constant dense<21.5> : tensor<f32>
  %m = nnvm.mul %x, %s : (tensor<3x40xf32>, tensor<f32>) -> tensor<3x40xf32>
  %r = nnvm.round %m : (tensor<3x40xf32>) -> tensor<3x40xf32>
  %c = nnvm.clip %r {min = -127.0, max = 127.0} : (tensor<3x40xf32>) -> tensor<3x40xf32>
  %q = nnvm.cast %c {to = "int8"} : (tensor<3x40xf32>) -> tensor<3x40xi8>
  %f = nnvm.cast %q {to = "float32"} : (tensor<3x40xi8>) -> tensor<3x40xf32>
  func.return %f : tensor<3x40xf32>
}"""

REQUANT = """
func.func @k(%acc: tensor<2x48xi32>, %mult: tensor<48xi64>, %sh: tensor<48xi64>) -> tensor<2x48xi8> {
  %a = nnvm.cast %acc {to = "int64"} : (tensor<2x48xi32>) -> tensor<2x48xi64>
  %p = nnvm.mul %a, %mult : (tensor<2x48xi64>, tensor<48xi64>) -> tensor<2x48xi64>
  %s = nnvm.bit_shift %p, %sh {direction = "right"} : (tensor<2x48xi64>, tensor<48xi64>) -> tensor<2x48xi64>
  %c = nnvm.clip %s {min = -128.0, max = 127.0} : (tensor<2x48xi64>) -> tensor<2x48xi64>
  %q = nnvm.cast %c {to = "int8"} : (tensor<2x48xi64>) -> tensor<2x48xi8>
  func.return %q : tensor<2x48xi8>
}"""


def test_quantize_kernel_vectorizes():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 40)) * 4).astype(np.float32)
    lowered = str(check(parse(QUANTIZE), [x]))
    assert vector_op(lowered, "arith.fptosi", "f32", "i8")
    assert vector_op(lowered, "arith.sitofp", "i8", "f32")


def test_requantize_kernel_vectorizes():
    rng = np.random.default_rng(1)
    acc = rng.integers(-(2**20), 2**20, (2, 48), dtype=np.int32)
    mult = rng.integers(1, 2**15, 48, dtype=np.int64)
    shift = rng.integers(12, 30, 48, dtype=np.int64)
    shift[0] = 70  # past the width: bit_shift's select gives 0 there (LLVM's shift is poison)
    lowered = str(check(parse(REQUANT), [acc, mult, shift]))
    assert vector_op(lowered, "arith.extsi", "i32", "i64")
    assert vector_op(lowered, "arith.trunci", "i64", "i8")
    # the per-column amount is read in bounds: the guarded shift runs as lanes, not scf.if
    assert re.search(r"arith.shrsi .*: vector<\d+xi64>", lowered)
    assert "scf.if" not in lowered


PER_CHANNEL_SHIFT = """
func.func @k(%acc: tensor<1x4x3x16xi64>, %sh: tensor<1x4x1x1xi64>) -> tensor<1x4x3x16xi64> {
  %s = nnvm.bit_shift %acc, %sh {direction = "right"} : (tensor<1x4x3x16xi64>, tensor<1x4x1x1xi64>) -> tensor<1x4x3x16xi64>
  func.return %s : tensor<1x4x3x16xi64>
}"""


def test_a_broadcast_operand_at_constant_indices_stays_vectorized():
    """The per-channel shift of an NCHW tensor is read at [0, c, 0, 0]: in bounds, so the
    guarded shift still runs as lanes."""
    rng = np.random.default_rng(2)
    acc = rng.integers(-(2**40), 2**40, (1, 4, 3, 16), dtype=np.int64)
    shift = np.array([3, 64, 17, 0], np.int64).reshape(1, 4, 1, 1)
    lowered = str(check(parse(PER_CHANNEL_SHIFT), [acc, shift]))
    assert re.search(r"arith.shrsi .*: vector<\d+xi64>", lowered)
    assert "scf.if" not in lowered
