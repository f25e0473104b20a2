"""Inputs the IR fuzzer found: an attribute xDSL cannot build from the text (an unknown enum
case) is a located parse error, and a tensor too large to plan (a mutated shape) is a located
plan-memory error, never an internal error."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

from nnvm.passes.plan_memory import tensor_bytes
from nnvm.registry import make_context
from nnvm.support.diagnostics import DiagnosticError, parse_module
from nnvm.support.errors import UserError


def test_unknown_enum_case_is_a_located_parse_error():
    text = """func.func @reduce(%v: vector<8xf32>) -> f32 {
  %m = vector.reduction <m f32 from vector<8xaxnumf>, %v : vector<8xf32> into f32
  func.return %m : f32
}"""
    with pytest.raises(UserError, match="not a valid CombiningKindFlag") as info:
        parse_module(make_context(), text, "bad.mlir")
    assert "bad.mlir:2:" in str(info.value.location)


def test_a_tensor_beyond_any_offset_is_refused():
    huge = Block(arg_types=[TensorType(f32, [10**9, 10**9])]).args[0]
    with pytest.raises(DiagnosticError, match="needs 4000000000000000000 bytes"):
        tensor_bytes(huge)
    unknown = Block(arg_types=[TensorType(f32, [-1, 4])]).args[0]
    with pytest.raises(DiagnosticError):
        tensor_bytes(unknown)
