"""The ops of the tensor-expression dialect `te`: what each kernel computes, element by element.

A te kernel is a `func.func` whose tensor arguments are its placeholders (inputs, in the kernel
ABI's order) and whose results are its outputs. Its body holds:

* `te.compute`: a tensor defined by a formula for one element, with optional commutative
  reduction over named axes. The formula is a region (arith/math ops, `te.read`s of other
  tensors, a `te.yield`); its custom syntax reads like the formula itself:

      %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j]
             : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>

* `te.constant`: a small constant tensor (becomes a global).
* `te.extern`: an opaque external kernel called with the kernel ABI (the escape hatch).
* `te.schedule`: how to compute it (see schedule.py); applied by `lower-te-to-loops`.

`select` in a formula is lazy: the reads of the branch not taken never happen, so padding can
be written as `select(in_bounds, %x[...], 0.0)`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.te.exprs import REDUCE_KINDS


@irdl_op_definition
class ReadOp(IRDLOperation):
    """`te.read %A[%i, %j]`: one element of a tensor, inside a compute's formula."""

    name = "te.read"
    tensor = operand_def(TensorType)
    indices = var_operand_def(IndexType)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue, indices: Sequence[SSAValue]):
        assert isinstance(tensor.type, TensorType)
        super().__init__(operands=[tensor, list(indices)], result_types=[tensor.type.element_type])

    def verify_(self) -> None:
        t = self.tensor.type
        assert isinstance(t, TensorType)
        if len(self.indices) != len(t.get_shape()):
            raise VerifyException(
                f"te.read of a rank-{len(t.get_shape())} tensor takes {len(t.get_shape())} "
                f"indices, got {len(self.indices)}"
            )
        if self.result.type != t.element_type:
            raise VerifyException(f"te.read produces {t.element_type}, not {self.result.type}")

    @classmethod
    def parse(cls, parser: Parser) -> ReadOp:  # assembly_format needs the result type
        tensor = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t = parser.parse_type()
        tv = parser.resolve_operand(tensor, t)
        ivs = [parser.resolve_operand(i, IndexType()) for i in indices]
        op = cls(tv, ivs)
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string("] : ")
        printer.print_attribute(self.tensor.type)


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """A tensor defined elementwise: result[spatial...] = reduce over [reduce axes] of formula.

    The region's block arguments are the index variables, spatial axes first (one per result
    dimension), then the reduction axes; `axis_names` names them all (schedules refer to axes
    by these names, and to the stage by `tag`)."""

    name = "te.compute"
    tag = prop_def(StringAttr)
    axis_names = prop_def(ArrayAttr[StringAttr])
    reduce = opt_prop_def(StringAttr)
    reduce_extents = opt_prop_def(DenseArrayBase)
    template = opt_prop_def(StringAttr)
    body = region_def("single_block")
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(
        self,
        tag: str,
        result_type: TensorType,
        axis_names: Sequence[str],
        body: Region,
        reduce: str | None = None,
        reduce_extents: Sequence[int] = (),
        template: str | None = None,
    ):
        props: dict[str, Attribute] = {
            "tag": StringAttr(tag),
            "axis_names": ArrayAttr([StringAttr(n) for n in axis_names]),
        }
        if reduce is not None:
            props["reduce"] = StringAttr(reduce)
            props["reduce_extents"] = DenseArrayBase.from_list(i64, list(reduce_extents))
        if template is not None:
            props["template"] = StringAttr(template)
        super().__init__(properties=props, regions=[body], result_types=[result_type])

    # -- views ---------------------------------------------------------------------------------

    @property
    def stage_name(self) -> str:
        return self.tag.data

    @property
    def shape(self) -> tuple[int, ...]:
        t = self.result.type
        assert isinstance(t, TensorType)
        return tuple(t.get_shape())

    @property
    def element_type(self) -> Attribute:
        t = self.result.type
        assert isinstance(t, TensorType)
        return t.element_type

    @property
    def reduce_kind(self) -> str | None:
        return self.reduce.data if self.reduce is not None else None

    @property
    def reduce_shape(self) -> tuple[int, ...]:
        if self.reduce_extents is None:
            return ()
        return tuple(int(v) for v in self.reduce_extents.get_values())

    @property
    def names(self) -> list[str]:
        return [a.data for a in self.axis_names.data]

    @property
    def spatial_names(self) -> list[str]:
        return self.names[: len(self.shape)]

    @property
    def reduce_names(self) -> list[str]:
        return self.names[len(self.shape) :]

    @property
    def template_name(self) -> str | None:
        return self.template.data if self.template is not None else None

    @property
    def block(self) -> Block:
        return self.body.block

    @property
    def yielded(self) -> SSAValue:
        term = self.block.last_op
        assert isinstance(term, YieldOp)
        return term.value

    def inputs(self) -> list[SSAValue]:
        """The tensors the formula reads, in order of first appearance."""
        seen: list[SSAValue] = []
        for op in self.block.ops:
            if isinstance(op, ReadOp) and op.tensor not in seen:
                seen.append(op.tensor)
        return seen

    # -- verification --------------------------------------------------------------------------

    def verify_(self) -> None:
        names = self.names
        rank, nred = len(self.shape), len(self.reduce_shape)
        if any(d < 0 for d in self.shape):
            raise VerifyException("te.compute needs a static result shape")
        if len(names) != rank + nred:
            raise VerifyException(
                f"te.compute '{self.stage_name}' names {len(names)} axes, but has {rank} spatial "
                f"and {nred} reduction axes"
            )
        if len(set(names)) != len(names):
            raise VerifyException(f"te.compute '{self.stage_name}': axis names repeat: {names}")
        if (self.reduce is None) != (self.reduce_extents is None):
            raise VerifyException("te.compute: reduce and reduce_extents come together")
        if self.reduce_kind is not None and self.reduce_kind not in REDUCE_KINDS:
            raise VerifyException(
                f"te.compute: unknown reduction '{self.reduce_kind}' (expected one of "
                f"{', '.join(REDUCE_KINDS)})"
            )
        if self.reduce_kind is not None and not nred:
            raise VerifyException("te.compute: a reduction needs at least one reduction axis")
        if any(e < 1 for e in self.reduce_shape):
            raise VerifyException("te.compute: reduction extents must be >= 1")
        args = self.block.args
        if len(args) != rank + nred or any(not isinstance(a.type, IndexType) for a in args):
            raise VerifyException(
                f"te.compute '{self.stage_name}': the body takes {rank + nred} index arguments"
            )
        if not isinstance(self.block.last_op, YieldOp):
            raise VerifyException("te.compute: the body must end with te.yield")
        if self.yielded.type != self.element_type:
            raise VerifyException(
                f"te.compute '{self.stage_name}' yields {self.yielded.type}, but its result "
                f"holds {self.element_type}"
            )
        for op in self.block.ops:
            for operand in op.operands:
                owner = operand.owner
                inside = (
                    owner.parent_block() is self.block
                    if isinstance(owner, Operation)
                    else owner is self.block
                )
                if not inside and not isinstance(operand.type, TensorType):
                    raise VerifyException(
                        f"te.compute '{self.stage_name}': the formula may only capture tensors "
                        "(read through te.read)"
                    )

    # -- syntax --------------------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> ComputeOp:
        from nnvm.dialects.te.formula import parse_compute

        return parse_compute(cls, parser)

    def print(self, printer: Printer) -> None:
        from nnvm.dialects.te.formula import print_compute

        print_compute(self, printer)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a formula: the element value (before the reduction combines it)."""

    name = "te.yield"
    value = operand_def()
    traits = traits_def(IsTerminator(), HasParent(ComputeOp), Pure())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """`%c = te.constant dense<[1.0, 2.0]> : tensor<2xf32>`: a small constant tensor."""

    name = "te.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("te.constant takes a dense<...> : tensor<...> value", pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls(value)  # type: ignore[arg-type]
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        if self.attributes:
            printer.print_op_attributes(self.attributes)


@irdl_op_definition
class ExternOp(IRDLOperation):
    """`%y = te.extern @nnvm_lstm(%x, %w) : (...) -> ...`: an opaque external kernel.

    It is called with the kernel ABI (pointers to the inputs, then to the outputs); schedules
    cannot look inside it."""

    name = "te.extern"
    callee = prop_def(SymbolRefAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    tag = opt_prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    def __init__(
        self,
        callee: str,
        inputs: Sequence[SSAValue],
        output_types: Sequence[TensorType],
        tag: str | None = None,
    ):
        props: dict[str, Attribute] = {"callee": SymbolRefAttr(callee)}
        if tag is not None:
            props["tag"] = StringAttr(tag)
        super().__init__(
            operands=[list(inputs)], result_types=[list(output_types)], properties=props
        )

    @property
    def stage_name(self) -> str:
        return self.tag.data if self.tag is not None else self.callee.root_reference.data


def make_compute_block(count: int, names: Sequence[str]) -> Block:
    """An empty formula block with `count` index arguments named after the axes."""
    block = Block(arg_types=[IndexType()] * count)
    for arg, n in zip(block.args, names, strict=True):
        arg.name_hint = _hint(n)
    return block


def _hint(name: str) -> str | None:
    import re

    return name if re.fullmatch(r"[A-Za-z_][\w$.]*", name) else None
