"""The contract every graph op follows: shape/dtype inference, verification, numpy evaluation,
and one readable custom syntax shared by all ops.

Custom syntax (every nnvm op unless it overrides it):

    %r = nnvm.conv2d %x, %w {strides = [2, 2], padding = [3, 3, 3, 3]}
           : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>

Properties whose value equals the declared default are not printed; integer arrays print as
`[1, 2]`, floats with a decimal point, strings quoted, booleans as `true`/`false`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnrankedTensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, prop_def, result_def, traits_def
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm.dtypes import element_type_of, numpy_dtype_of
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind

if TYPE_CHECKING:
    from nnvm.dialects.nnvm.autodiff import VJPBuilder
    from nnvm.dialects.te.builder import KernelBuilder, TensorRef

# ----------------------------------------------------------------------------------------------
# Errors and evaluation context
# ----------------------------------------------------------------------------------------------


class ShapeError(VerifyException):
    """Operands or attributes that no result type can satisfy (e.g. a channel mismatch)."""


@dataclass
class EvalContext:
    """What an op's numpy `evaluate` may look at beyond its operands."""

    params: dict[str, np.ndarray] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# Property helpers: typed declarations and Python views of attribute values
# ----------------------------------------------------------------------------------------------


def _ints(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _floats(values: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def ints_prop(default: Sequence[int] | None = None) -> Any:
    """An integer-array property (strides, axes, shapes); required when there is no default."""
    return prop_def(
        DenseArrayBase.constr(i64), default_value=None if default is None else _ints(default)
    )


def floats_prop(default: Sequence[float] | None = None) -> Any:
    """A float-array property (resize scales)."""
    return prop_def(
        DenseArrayBase.constr(f64), default_value=None if default is None else _floats(default)
    )


def int_prop(default: int | None = None) -> Any:
    """A single integer property (axis, groups)."""
    return prop_def(
        IntegerAttr.constr(type=i64),
        default_value=None if default is None else IntegerAttr(int(default), i64),
    )


def float_prop(default: float | None = None) -> Any:
    """A single float property (epsilon, alpha)."""
    return prop_def(
        FloatAttr.constr(f64), default_value=None if default is None else FloatAttr(default, f64)
    )


def str_prop(default: str | None = None) -> Any:
    """A string property (layouts, modes)."""
    return prop_def(StringAttr, default_value=None if default is None else StringAttr(default))


def bool_prop(default: bool | None = None) -> Any:
    """A boolean property (keepdims, ceil_mode)."""
    return prop_def(
        IntegerAttr.constr(type=IntegerType(1)),
        default_value=None if default is None else BoolAttr.from_bool(default),
    )


def python_value(attr: Attribute) -> Any:
    """The plain Python value of a property attribute (tuple, int, float, str, bool)."""
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if isinstance(attr, IntegerAttr):
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return tuple(python_value(a) for a in attr.data)
    return attr


def attribute_from_python(value: Any, like: Attribute | None = None) -> Attribute:
    """The inverse of `python_value`, used by frontends and passes that build ops."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int | np.integer):
        if isinstance(like, FloatAttr):
            return FloatAttr(float(value), f64)
        return IntegerAttr(int(value), i64)
    if isinstance(value, float | np.floating):
        return FloatAttr(float(value), f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, Sequence | np.ndarray):
        values = (
            list(np.asarray(value).reshape(-1).tolist())
            if isinstance(value, np.ndarray)
            else list(value)
        )
        wants_float = isinstance(like, DenseArrayBase) and not isinstance(
            like.elt_type, IntegerType
        )
        if wants_float or any(isinstance(v, float) for v in values):
            return _floats(values)
        return _ints(values)
    raise TypeError(f"cannot turn {value!r} into an attribute")


# ----------------------------------------------------------------------------------------------
# Type helpers
# ----------------------------------------------------------------------------------------------


def tensor(shape: Sequence[int], element_type: Attribute | str | np.dtype) -> TensorType:
    """A ranked tensor type from a shape and an element type (xDSL type, numpy dtype or name)."""
    if not isinstance(element_type, Attribute):
        element_type = element_type_of(element_type)
    return TensorType(element_type, [int(d) for d in shape])


def is_static(t: Attribute) -> bool:
    return isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape())


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType), f"expected a ranked tensor, got {t}"
    return tuple(t.get_shape())


def compatible(declared: Attribute, inferred: TensorType) -> bool:
    """A declared result type agrees with the inferred one if every known part is equal."""
    if isinstance(declared, UnrankedTensorType):
        return declared.element_type == inferred.element_type
    if not isinstance(declared, TensorType):
        return False
    if declared.element_type != inferred.element_type:
        return False
    d, i = declared.get_shape(), inferred.get_shape()
    return len(d) == len(i) and all(a == b or a < 0 for a, b in zip(d, i, strict=True))


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def unique_axes(axes: Sequence[int], rank: int, what: str) -> list[int]:
    """Normalized axes, rejecting duplicates (they would silently mean one axis)."""
    out = [normalize_axis(a, rank, what) for a in axes]
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {list(axes)} name an axis twice")
    return out


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/ONNX multidirectional broadcasting, with a located error when shapes clash."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError(
                "shapes " + ", ".join(str(list(s)) for s in shapes) + " do not broadcast"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# The base op
# ----------------------------------------------------------------------------------------------


class NNVMOp(IRDLOperation):
    """Base class of every op of the graph dialect (not itself an op).

    Subclasses define `infer_result_types` (shapes and dtypes from operand types and
    properties) and `evaluate` (numpy semantics); verification compares declared result types
    with the inferred ones, so a wrong result type is an error.
    """

    #: Properties printed even when they equal their default (e.g. layouts, for readability).
    ALWAYS_PRINT: ClassVar[tuple[str, ...]] = ()

    # -- semantics -----------------------------------------------------------------------------

    def infer_result_types(self, operand_types: Sequence[TensorType]) -> list[TensorType]:
        """Result types from operand types and properties; raise ShapeError when impossible."""
        raise NotImplementedError(f"{self.name} has no shape inference")

    def evaluate(self, inputs: Sequence[np.ndarray], ctx: EvalContext) -> list[np.ndarray]:
        """Numpy reference semantics: the oracle for tests and the engine of fold-constants."""
        raise NotImplementedError(f"{self.name} has no reference implementation")

    def te_compute(self, b: KernelBuilder, inputs: Sequence[TensorRef]) -> list[TensorRef]:
        """The tensor-expression definition (TVM's FTVMCompute): the te tensors computing the
        results from the inputs, built with `b`; lower-to-te calls it, nothing switches on
        op names."""
        raise NotImplementedError(f"{self.name} has no te definition")

    def vjp(self, g: VJPBuilder, grads: Sequence[SSAValue]) -> Sequence[SSAValue | None]:
        """The vector-Jacobian product (see nnvm.dialects.nnvm.autodiff): one cotangent per
        operand (None: not differentiable or not needed) from one per result, built with `g`."""
        from nnvm.dialects.nnvm.autodiff import NoGradient

        raise NoGradient(f"{self.name} has no gradient (its class defines no vjp)")

    @classmethod
    def has_gradient(cls) -> bool:
        """Whether the class defines a vector-Jacobian product (the gradient pass asks)."""
        return cls.vjp is not NNVMOp.vjp

    @classmethod
    def make(cls, *operands: SSAValue, **props: Any) -> NNVMOp:
        """Build the op with result types from its own inference (so builders never compute
        shapes twice). Properties are given as Python values; unset ones take their defaults."""
        op_def = cls.get_irdl_definition()
        properties: dict[str, Attribute] = {}
        for key, value in props.items():
            prop = op_def.properties.get(key)
            if prop is None:
                raise TypeError(f"{cls.name} has no property {key!r}")
            properties[key] = attribute_from_python(value, prop.default_value)
        for key, prop in op_def.properties.items():
            if key not in properties and prop.default_value is not None:
                properties[key] = prop.default_value
        probe = cls.create(operands=list(operands), result_types=[], properties=properties)
        types = probe.infer_result_types([o.type for o in operands])  # type: ignore[arg-type]
        probe.drop_all_references()
        return cls.create(operands=list(operands), result_types=types, properties=properties)

    def attr(self, name: str) -> Any:
        """The Python value of a property (or discardable attribute), or None when absent."""
        value = self.properties.get(name, self.attributes.get(name))
        return None if value is None else python_value(value)

    # -- verification --------------------------------------------------------------------------

    def verify_(self) -> None:
        operand_types = [o.type for o in self.operands]
        for t in operand_types:
            if not isinstance(t, TensorType | UnrankedTensorType):
                raise VerifyException(f"operands of {self.name} must be tensors, got {t}")
        if not all(is_static(t) for t in operand_types):
            return  # nothing to check until infer-shapes has made operands static
        inferred = self.infer_result_types(operand_types)  # type: ignore[arg-type]
        if len(inferred) != len(self.results):
            raise VerifyException(
                f"{self.name} produces {len(inferred)} results, but {len(self.results)} are declared"
            )
        for k, (res, want) in enumerate(zip(self.results, inferred, strict=True)):
            if not compatible(res.type, want):
                which = f"result #{k}" if len(self.results) > 1 else "result"
                raise VerifyException(
                    f"{self.name}: inferred type {want} of {which} disagrees with the declared {res.type}"
                )

    # -- custom syntax -------------------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser) -> NNVMOp:
        pos = parser.pos
        operands = []
        first = parser.parse_optional_unresolved_operand()
        if first is not None:
            operands.append(first)
            while parser.parse_optional_punctuation(",") is not None:
                operands.append(parser.parse_unresolved_operand())
        entries = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        if len(ftype.inputs.data) != len(operands):
            parser.raise_error(
                f"{cls.name} has {len(operands)} operands but its type lists "
                f"{len(ftype.inputs.data)}",
                pos,
                pos,
            )
        resolved = parser.resolve_operands(operands, ftype.inputs.data, parser.pos)
        properties, attributes = cls._split_entries(entries, parser, pos)
        return cls.create(
            operands=resolved,
            result_types=list(ftype.outputs.data),
            properties=properties,
            attributes=attributes,
        )

    @classmethod
    def _split_entries(
        cls, entries: dict[str, Attribute], parser: Parser, pos: int
    ) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
        """Declared properties get their friendly spelling coerced (a value of the wrong kind is
        a parse error naming the property); the rest are discardable attributes."""
        op_def = cls.get_irdl_definition()
        properties: dict[str, Attribute] = {}
        attributes: dict[str, Attribute] = {}
        for key, value in entries.items():
            prop = op_def.properties.get(key)
            if prop is None:
                attributes[key] = value
                continue
            coerced = _coerce(value, prop.constr)
            if coerced is None:
                parser.raise_error(
                    f"property '{key}' of {cls.name} cannot be {value}", pos, parser.pos
                )
            properties[key] = coerced
        for key, prop in op_def.properties.items():
            if key not in properties and prop.default_value is not None:
                properties[key] = prop.default_value
        return properties, attributes

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        entries: list[tuple[str, Attribute]] = []
        op_def = self.get_irdl_definition()
        ordered = [k for k in op_def.properties if k in self.properties]
        ordered += [k for k in self.properties if k not in op_def.properties]
        for key in ordered:  # declaration order, whatever order the input used
            value = self.properties[key]
            prop = op_def.properties.get(key)
            if prop is not None and prop.default_value == value and key not in self.ALWAYS_PRINT:
                continue
            entries.append((key, value))
        entries.extend(self.attributes.items())
        if entries:
            printer.print_string(" {")
            for k, (key, value) in enumerate(entries):
                if k:
                    printer.print_string(", ")
                printer.print_string(f"{key} = ")
                _print_friendly(printer, value)
            printer.print_string("}")
        printer.print_string(" : ")
        printer.print_function_type([o.type for o in self.operands], [r.type for r in self.results])


class UnaryTransformOp(NNVMOp):
    """Shared shape of the one-input, one-result data-movement ops: each output element is an
    input element found by an index computation. Their properties are static and complete."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure(), OpPattern(OpPatternKind.INJECTIVE))


def _coerce(value: Attribute, constr: Any) -> Attribute | None:
    """Turn the friendly spelling (`[1, 2]`, `3`) into the declared attribute kind, or None
    when the value cannot have that kind."""
    candidates = [value]
    if isinstance(value, ArrayAttr):
        items = [python_value(a) for a in value.data]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            candidates = [_ints(items), _floats(items)]
        elif all(isinstance(v, int | float) for v in items):
            candidates = [_floats(items)]
    elif isinstance(value, IntegerAttr) and not (
        isinstance(value.type, IntegerType) and value.type.width.data == 1
    ):
        candidates = [value, FloatAttr(float(value.value.data), f64)]
    for cand in candidates:
        try:
            constr.verify(cand, VerificationContext())
            return cand
        except VerifyException:
            continue
    return None


def _print_friendly(printer: Printer, value: Attribute) -> None:
    if isinstance(value, DenseArrayBase):
        vals = value.get_values()
        if isinstance(value.elt_type, IntegerType):
            printer.print_string("[" + ", ".join(str(v) for v in vals) + "]")
        else:
            printer.print_string("[" + ", ".join(_float_text(v) for v in vals) + "]")
        return
    if isinstance(value, IntegerAttr) and value.type == i64:
        printer.print_string(str(value.value.data))
        return
    if isinstance(value, IntegerAttr) and value.type == IntegerType(1):
        printer.print_string("true" if value.value.data else "false")
        return
    if isinstance(value, FloatAttr) and value.type == f64:
        printer.print_string(_float_text(value.value.data))
        return
    printer.print_attribute(value)


def _float_text(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        # MLIR spells these as hex bit patterns; keep that for exact round trips.
        bits = np.array([v], dtype=np.float64).view(np.uint64)[0]
        return f"0x{int(bits):016X}"
    text = repr(float(v))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:  # MLIR's float literals need a dot: 1e-05 -> 1.0e-05
        mantissa += ".0"
    return mantissa + e + exponent


# ----------------------------------------------------------------------------------------------
# Dense constants (small scalars and shape constants stay inline)
# ----------------------------------------------------------------------------------------------


def dense_from_numpy(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """An inline dense attribute holding a small numpy array (shape constants, scalars)."""
    array = np.asarray(array)
    ttype = tensor(array.shape, array.dtype)
    flat = array.reshape(-1)
    if array.dtype == np.bool_:
        flat = flat.astype(np.int64)
    return DenseIntOrFPElementsAttr.from_list(ttype, flat.tolist())


def numpy_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    ttype = attr.get_type()
    assert isinstance(ttype, TensorType)
    dtype = numpy_dtype_of(ttype.element_type)
    values = attr.get_values()
    return np.asarray(values, dtype=dtype).reshape(tuple(ttype.get_shape()))


def result_types_of(op: Operation) -> list[Attribute]:
    return [r.type for r in op.results]
