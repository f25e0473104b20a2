"""The table of ONNX op converters and the per-node context they work through.

A converter is a function `(ctx: NodeContext) -> list[Value | None]` registered for one or
more ONNX op types with the attribute names it understands; attribute defaults come from the
op's ONNX schema at the model's opset, so converters see opset-correct values."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper
from xdsl.ir import SSAValue

from nnvm.frontend.onnx.builder import (
    GraphBuilder,
    ImportShapeError,
    Known,
    NeedsKnownValue,
    Unsupported,
    Value,
    dtype_of,
    shape_of,
)

ConverterFn = Callable[["NodeContext"], Sequence[Value | None]]


@dataclass(frozen=True)
class Converter:
    op_type: str
    fn: ConverterFn
    attrs: frozenset[str]
    since: int


CONVERTERS: dict[str, Converter] = {}


def converter(
    *op_types: str, attrs: Sequence[str] = (), since: int = 1
) -> Callable[[ConverterFn], ConverterFn]:
    """Register `fn` for `op_types` (default ONNX domain) understanding `attrs`."""

    def register(fn: ConverterFn) -> ConverterFn:
        for op_type in op_types:
            CONVERTERS[op_type] = Converter(op_type, fn, frozenset(attrs), since)
        return fn

    return register


@cache
def _schema_defaults(op_type: str, opset: int, domain: str) -> dict[str, Any]:
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:  # noqa: BLE001 - no schema: no defaults
        return {}
    out: dict[str, Any] = {}
    for name, attr in schema.attributes.items():
        if attr.default_value is not None and attr.default_value.type != 0:
            out[name] = attribute_value(attr.default_value)
    return out


def attribute_value(attr: onnx.AttributeProto) -> Any:
    """An ONNX attribute as plain Python (strings decoded, tensors as numpy)."""
    value = helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.FLOAT:
        return _shortest(value)
    if attr.type == onnx.AttributeProto.FLOATS:
        return [_shortest(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


def _shortest(value: float) -> float:
    """ONNX floats are float32: keep the shortest decimal that round-trips (1e-05, not
    9.999999747378752e-06), so IR attributes read as the model author wrote them."""
    return float(str(np.float32(value)))


class NodeContext:
    """What a converter sees: the node's inputs (values or None), attributes and opset."""

    def __init__(
        self,
        node: onnx.NodeProto,
        opset: int,
        inputs: list[Value | None],
        builder: GraphBuilder,
        run_subgraph: Callable[[onnx.GraphProto, dict[str, Value]], list[Value]] | None = None,
    ):
        self.node = node
        self.op_type = node.op_type
        self.opset = opset
        self.inputs = inputs
        self.builder = builder
        self._run_subgraph = run_subgraph
        self.attrs = {a.name: attribute_value(a) for a in node.attribute}
        self._defaults = _schema_defaults(node.op_type, opset, "")
        #: How many outputs the node declares (trailing empty names dropped).
        outs = list(node.output)
        while outs and not outs[-1]:
            outs.pop()
        self.num_outputs = len(outs)
        self.output_wanted = [bool(o) for o in outs]

    # -- attributes ----------------------------------------------------------------------------

    def attr(self, name: str, default: Any = None) -> Any:
        """The node's attribute, else the schema default at this opset, else `default`."""
        if name in self.attrs:
            return self.attrs[name]
        return self._defaults.get(name, default)

    def flag(self, name: str, default: int = 0) -> bool:
        """A 0/1 attribute (keepdims, transB, ceil_mode...); any other value is refused, since
        runtimes disagree on what it would mean."""
        value = self.attr(name, default)
        if value not in (0, 1):
            raise ImportShapeError(f"attribute {name} must be 0 or 1, got {value!r}")
        return bool(value)

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    # -- inputs --------------------------------------------------------------------------------

    def input(self, k: int) -> Value | None:
        return self.inputs[k] if k < len(self.inputs) else None

    def required(self, k: int) -> Value:
        v = self.input(k)
        if v is None:
            raise Unsupported(f"required input #{k} is missing")
        return v

    def const(self, k: int, what: str) -> np.ndarray | None:
        """Input k as a numpy array known at import time (None when absent)."""
        v = self.input(k)
        if v is None:
            return None
        if isinstance(v, Known):
            return v.array
        assert isinstance(v, SSAValue)
        raise NeedsKnownValue(f"input #{k} ({what}) must be known at import time", v)

    def int_const(self, k: int, what: str) -> int | None:
        """Input k, a scalar known at import time (its first element), as an int; None when
        absent."""
        array = self.const(k, what)
        return None if array is None else int(np.asarray(array).reshape(-1)[0])

    def shape(self, v: Value) -> tuple[int, ...]:
        return shape_of(v)

    def dtype(self, v: Value) -> np.dtype:
        return dtype_of(v)

    def rank(self, v: Value) -> int:
        return len(shape_of(v))

    # -- building ------------------------------------------------------------------------------

    def emit(self, op_name: str, *operands: Value, **props: Any) -> Value:
        """Build a single-result op (or fold it) and return its result."""
        (result,) = self.builder.emit(op_name, operands, props)
        return result

    def emit_multi(self, op_name: str, *operands: Value, **props: Any) -> list[Value]:
        return self.builder.emit(op_name, operands, props)

    def known(self, array: np.ndarray | Any, dtype: Any = None, tag: str = "const") -> Known:
        """A known value created by this node (a constant the converter needs)."""
        arr = np.asarray(array, dtype=dtype)
        return Known(arr, f"{self.output_name(0)}.{tag}")

    def scalar(self, value: float | int, like: Value) -> Known:
        """A rank-0 constant of `like`'s dtype (for broadcast arithmetic)."""
        return self.known(np.asarray(value).astype(dtype_of(like)), tag="scalar")

    def output_name(self, k: int) -> str:
        return self.node.output[k] if k < len(self.node.output) else f"{self.node.name}.{k}"

    def subgraph(self, graph: onnx.GraphProto, bindings: dict[str, Value]) -> list[Value]:
        """Convert a body graph (If branch, Loop body) inline; returns its output values."""
        if self._run_subgraph is None:
            raise Unsupported("subgraphs are not supported here")
        return self._run_subgraph(graph, bindings)

    def unsupported(self, what: str) -> Unsupported:
        return Unsupported(what)
