"""Building graph-dialect ops from the ONNX importer.

Every op is built through `GraphBuilder.emit`, which asks the op's own `infer_result_types` for
its result types (the frontend never computes shapes twice) and, when every operand is known at
import time, runs the op's own `evaluate` instead of emitting it (constant folding of shape
arithmetic and weight transforms, with the same semantics the graph would have)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerType, TensorType, f64
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.irdl.constraints import VerificationContext
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm.base import EvalContext, NNVMOp, attribute_from_python, tensor
from nnvm.dialects.nnvm.dtypes import element_type_of, numpy_dtype_of
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp

#: Values computed at import (not weights) up to this many elements stay inline as constants.
INLINE_LIMIT = 64


@dataclass(eq=False)
class Known:
    """A value known at import time: an initializer, a Constant, or folded shape arithmetic.

    `weight` marks values that derive from initializers: they become `nnvm.param`s (never
    inline) when real compute consumes them; `name` is the ONNX name they trace back to."""

    array: np.ndarray
    name: str
    weight: bool = False


Value = SSAValue | Known


class Unsupported(Exception):
    """A node uses something the importer cannot express (collected, reported together)."""


class NeedsKnownValue(Unsupported):
    """A shape/axes/pads-like input is only known at run time (the backend can specialize)."""

    def __init__(self, message: str, value: SSAValue):
        super().__init__(message)
        self.value = value


class ImportShapeError(Exception):
    """An op rejected its operands: the model's shapes or types are inconsistent."""


MAX_TENSOR_BYTES = 1 << 40
"""The largest tensor a model may compute (1 TiB): beyond it sizes and arena offsets would
overflow 64-bit arithmetic long before anything could run."""


def check_size(t: Attribute) -> None:
    """Refuse a tensor type beyond MAX_TENSOR_BYTES (or with a negative extent)."""
    if not isinstance(t, TensorType):
        return
    shape = list(t.get_shape())
    count = math.prod(shape)
    bits = getattr(t.element_type, "bitwidth", 32) or 32
    if any(d < 0 for d in shape) or count * max(bits // 8, 1) > MAX_TENSOR_BYTES:
        raise ImportShapeError(
            f"it would compute a tensor of shape {shape} ({count} elements), larger than the "
            f"{MAX_TENSOR_BYTES >> 30} GiB nnvm supports"
        )


def shape_of(v: Value) -> tuple[int, ...]:
    if isinstance(v, Known):
        return tuple(v.array.shape)
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def dtype_of(v: Value) -> np.dtype:
    if isinstance(v, Known):
        return v.array.dtype
    t = v.type
    assert isinstance(t, TensorType)
    return numpy_dtype_of(t.element_type)


def type_of(v: Value) -> TensorType:
    if isinstance(v, Known):
        return tensor(v.array.shape, element_type_of(v.array.dtype))
    assert isinstance(v.type, TensorType)
    return v.type


_OP_CLASSES: dict[str, type[NNVMOp]] = {}


def op_class(name: str) -> type[NNVMOp]:
    """The op class of a graph-dialect op name (looked up lazily: the dialect grows)."""
    if not _OP_CLASSES:
        from nnvm.dialects.nnvm import ALL_OPS

        _OP_CLASSES.update({cls.name: cls for cls in ALL_OPS})
    cls = _OP_CLASSES.get(name)
    if cls is None:
        raise Unsupported(f"the graph dialect has no op {name}")
    return cls


def _property(cls: type[NNVMOp], key: str, value: Any) -> Attribute:
    """A Python value as the attribute kind the op declares for `key`."""
    prop = cls.get_irdl_definition().properties.get(key)
    if prop is None:
        raise KeyError(f"{cls.name} has no property {key!r}")
    candidates = [attribute_from_python(value, like=prop.default_value)]
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str):
        candidates.append(DenseArrayBase.from_list(f64, [float(v) for v in value]))
    elif isinstance(value, int | float | np.number) and not isinstance(value, bool):
        candidates.append(FloatAttr(float(value), f64))
    for cand in candidates:
        try:
            prop.constr.verify(cand, VerificationContext())
            return cand
        except VerifyException:
            continue
    raise TypeError(f"{cls.name}.{key}: cannot express {value!r} as {prop.constr}")


_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.\-/:]")


class GraphBuilder:
    """Appends ops to the body of `main`, materializing known values on first real use."""

    def __init__(self, block: Block):
        self.block = block
        self.params: dict[str, np.ndarray] = {}
        self._materialized: dict[Known, SSAValue] = {}  # keeps the keys alive: no id reuse
        self._names: set[str] = set()
        # Structurally equal ops built twice (exporters repeat reshapes of one value) are
        # built once: every graph op is pure.
        self._built: dict[tuple[object, ...], list[SSAValue]] = {}
        self._folded: dict[tuple[object, ...], tuple[list[Known], list[Known]]] = {}
        """Folds by (op, operand arrays, properties), with the operands that the ids name
        kept alive: a weight shared by several layers (ALBERT's, a tied embedding) and
        transposed by each is one folded array, so one param, packed once."""

    # -- names and known values ----------------------------------------------------------------

    def unique_name(self, onnx_name: str) -> str:
        """A param name: the ONNX name with odd characters replaced, unique in the store."""
        base = _NAME_CHARS.sub("_", onnx_name) or "param"
        name, k = base, 1
        while name in self._names:
            name, k = f"{base}_{k}", k + 1
        self._names.add(name)
        return name

    def value(self, v: Value) -> SSAValue:
        """An SSA value for an operand: known values become a param or an inline constant."""
        if not isinstance(v, Known):
            return v
        cached = self._materialized.get(v)
        if cached is not None:
            return cached
        # a folded transpose stays a view: the pass that packs the weight copies it once
        array = np.asarray(v.array, order="C") if v.array.size <= INLINE_LIMIT else v.array
        try:
            elt = element_type_of(array.dtype)
        except TypeError:
            raise Unsupported(f"value {v.name!r} has unsupported dtype {array.dtype}") from None
        if (v.weight and array.size > 1) or array.size > INLINE_LIMIT:
            name = self.unique_name(v.name)
            op: Operation = ParamOp(name, tensor(array.shape, elt))
            self.params[name] = array
        else:
            op = ConstantOp(array)
        self.block.add_op(op)
        result = op.results[0]
        self._materialized[v] = result
        return result

    # -- ops -----------------------------------------------------------------------------------

    def emit(
        self, op_name: str, operands: Sequence[Value], props: Mapping[str, Any] | None = None
    ) -> list[Value]:
        """Build `op_name` over `operands`; fold it when every operand is known."""
        cls = op_class(op_name)
        properties: dict[str, Attribute] = {}
        for key, val in (props or {}).items():
            if val is not None:
                properties[key] = _property(cls, key, val)
        for key, prop in cls.get_irdl_definition().properties.items():
            if key not in properties and prop.default_value is not None:
                properties[key] = prop.default_value
        types = [type_of(v) for v in operands]
        scratch = Block(arg_types=types)
        probe = cls.create(operands=list(scratch.args), result_types=[], properties=properties)
        try:
            result_types = probe.infer_result_types(types)
        except VerifyException as err:
            raise ImportShapeError(str(err)) from None
        for t in result_types:
            check_size(t)
        if operands and all(isinstance(v, Known) for v in operands):
            knowns = [v for v in operands if isinstance(v, Known)]
            fold_key = (
                op_name,
                *(id(k.array) for k in knowns),
                *sorted((k, str(a)) for k, a in properties.items()),
            )
            done = self._folded.get(fold_key)
            if done is None:
                done = (knowns, self._fold(cls, operands, scratch, result_types, properties))
                self._folded[fold_key] = done
            return list(done[1])
        values = [self.value(v) for v in operands]
        key = (
            op_name,
            *(id(v) for v in values),
            *sorted((k, str(a)) for k, a in properties.items()),
        )
        if key in self._built:
            return list(self._built[key])
        op = cls.create(operands=values, result_types=list(result_types), properties=properties)
        try:
            op.verify()
        except VerifyException as err:
            raise ImportShapeError(str(err)) from None
        self.block.add_op(op)
        self._built[key] = list(op.results)
        return list(op.results)

    def _fold(
        self,
        cls: type[NNVMOp],
        operands: Sequence[Value],
        scratch: Block,
        result_types: Sequence[TensorType],
        properties: dict[str, Attribute],
    ) -> list[Value]:
        op = cls.create(
            operands=list(scratch.args), result_types=list(result_types), properties=properties
        )
        knowns = [v for v in operands if isinstance(v, Known)]
        try:
            outs = op.evaluate([k.array for k in knowns], EvalContext())
        except (ValueError, IndexError, ArithmeticError) as err:
            raise ImportShapeError(f"{cls.name} cannot be evaluated at import: {err}") from None
        weight = any(k.weight for k in knowns)
        suffix = cls.name.removeprefix("nnvm.")
        folded: list[Value] = []
        for k, (out, want) in enumerate(zip(outs, result_types, strict=True)):
            array = np.asarray(out)
            want_dtype = numpy_dtype_of(want.element_type)
            if array.dtype != want_dtype:
                array = array.astype(want_dtype)
            name = f"{knowns[0].name}.{suffix}" + (f".{k}" if len(outs) > 1 else "")
            folded.append(Known(array.reshape(tuple(want.get_shape())), name, weight))
        return folded


def is_bool_type(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1
