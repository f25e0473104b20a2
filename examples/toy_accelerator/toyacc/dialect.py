"""The `toyacc` dialect: what the accelerator executes, at tensor level. A matmul runs on the
16x16 GEMM core tile by tile; bias_add and relu run on its vector ALU over the result."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
)

TILE = 16
"""Rows and columns of the GEMM core's tile (VTA's BLOCK_IN = BLOCK_OUT = 16)."""


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`toyacc.matmul %a, %b`: a[..., M, K] @ b[K, N] (b[N, K] with `transpose_rhs`)."""

    name = "toyacc.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    transpose_rhs = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"


@irdl_op_definition
class BiasAddOp(IRDLOperation):
    """`toyacc.bias_add %y, %b`: y[..., N] + b[N] on the vector ALU."""

    name = "toyacc.bias_add"
    data = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$data `,` $bias attr-dict `:` functional-type(operands, results)"


@irdl_op_definition
class AddOp(IRDLOperation):
    """`toyacc.add %x, %y`: x + y of one shape (a residual) on the vector ALU."""

    name = "toyacc.add"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"


@irdl_op_definition
class ReluOp(IRDLOperation):
    """`toyacc.relu %y`: max(y, 0) on the vector ALU."""

    name = "toyacc.relu"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$data attr-dict `:` functional-type(operands, results)"


TOYACC = Dialect("toyacc", [MatmulOp, BiasAddOp, AddOp, ReluOp])
