"""Ops that bring values into a graph without operands: weights (`nnvm.param`) and small inline
constants (`nnvm.constant`). Weights never live in the IR: a param names an entry of the params
store that travels beside the module (see docs/design.md, "Params")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm.base import (
    EvalContext,
    NNVMOp,
    dense_from_numpy,
    numpy_from_dense,
)
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind

if TYPE_CHECKING:
    from nnvm.dialects.te.builder import KernelBuilder, TensorRef


@irdl_op_definition
class ParamOp(NNVMOp):
    """`%w = nnvm.param "conv1.weight" : tensor<64x3x7x7xf32>`: a named weight from the store."""

    name = "nnvm.param"
    param_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure(), OpPattern(OpPatternKind.OPAQUE))

    def __init__(self, name: str, result_type: TensorType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[result_type])

    @property
    def key(self) -> str:
        return self.param_name.data

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        return [self.result.type]

    def verify_(self) -> None:
        if not self.key:
            raise VerifyException("nnvm.param needs a non-empty name")

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        if self.key not in ctx.params:
            raise KeyError(f'param "{self.key}" is not in the params store')
        value = np.asarray(ctx.params[self.key])
        want = self.result.type
        if tuple(value.shape) != tuple(want.get_shape()) or value.dtype != numpy_dtype_of(
            want.element_type
        ):
            raise ValueError(
                f'param "{self.key}" holds {value.dtype}{list(value.shape)}, but the graph '
                f"declares {want}"
            )
        return [value]

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        raise NotImplementedError(
            f'param "{self.key}" has no te definition: weights reach a kernel as its arguments '
            "(run fuse, which passes them in)"
        )

    @classmethod
    def parse(cls, parser: Parser) -> ParamOp:
        pos = parser.pos
        name = parser.parse_str_literal()
        parser.parse_punctuation(":")
        rtype = parser.parse_type()
        if not isinstance(rtype, TensorType):
            parser.raise_error(f"nnvm.param must produce a ranked tensor, got {rtype}", pos, pos)
        return cls(name, rtype)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.key)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class ConstantOp(NNVMOp):
    """`%c = nnvm.constant dense<[1, 3]> : tensor<2xi64>`: a small value kept inline."""

    name = "nnvm.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike(), OpPattern(OpPatternKind.OPAQUE))

    def __init__(self, value: DenseIntOrFPElementsAttr | np.ndarray):
        if isinstance(value, np.ndarray | np.generic):
            value = dense_from_numpy(np.asarray(value))
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        return [self.value.get_type()]

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        return [numpy_from_dense(self.value)]

    def numpy(self) -> np.ndarray:
        return numpy_from_dense(self.value)

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """A splat is a formula (it inlines into its readers); anything else a global."""
        value = self.numpy()
        flat = value.reshape(-1)
        splat = flat.size and np.all(flat == flat[0])
        if splat and not np.isnan(flat[:1].astype(np.float64)).any():
            from nnvm.dialects.nnvm.dtypes import element_type_of

            scalar = flat[0].item()
            return [b.compute(value.shape, lambda *i: scalar, dtype=element_type_of(value.dtype))]
        return [b.constant(value)]

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("nnvm.constant expects a dense<...> : tensor<...> value", pos, pos)
        return cls(value)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)


SOURCE_OPS = [ParamOp, ConstantOp]
