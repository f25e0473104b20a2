"""Ops that return their input unchanged (identity, dropout at inference); simplify-inference
removes them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from nnvm.dialects.nnvm.autodiff import VJPBuilder
from nnvm.dialects.nnvm.base import EvalContext, NNVMOp
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.dialects.te.builder import KernelBuilder, TensorRef


class PassThroughOp(NNVMOp):
    """The value itself; simplify-inference removes these."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.ELEMWISE))

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        return [operand_types[0]]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [inputs[0]]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        return [b.copy(inputs[0], name="")]

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> list[SSAValue | None]:
        return [grads[0]]


@irdl_op_definition
class IdentityOp(PassThroughOp):
    """ONNX Identity."""

    name = "nnvm.identity"


@irdl_op_definition
class DropoutOp(PassThroughOp):
    """ONNX Dropout at inference time: the identity."""

    name = "nnvm.dropout"


PASSTHROUGH_OPS: list[type[NNVMOp]] = [IdentityOp, DropoutOp]
