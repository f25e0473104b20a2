"""ONNX functions, inlined at import.

Many ONNX ops are defined by the standard as a function of other ops (Mish, RMSNormalization,
Attention, RotaryEmbedding, GroupNormalization, SoftmaxCrossEntropyLoss, ...), and exporters
may call functions the model itself defines (`ModelProto.functions`). An op without a
converter of its own is replaced by such a body, its names moved into a scope of the call
site, so the importer converts the ops the body is made of (ONNX's "function expansion")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

#: How deeply function bodies may call further functions (a model's own functions may recurse).
MAX_DEPTH = 16


@dataclass(frozen=True)
class FunctionBody:
    """The nodes that replace one call, written against `opset` of the default domain."""

    nodes: list[onnx.NodeProto]
    opset: int
    source: str


def _default_opset(fn: onnx.FunctionProto, caller_opset: int) -> int:
    for entry in fn.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return caller_opset


def _pick_version(versions: Sequence[int], opset: int) -> int | None:
    """The newest function version at or below the model's opset (else the oldest one)."""
    if not versions:
        return None
    fitting = [v for v in versions if v <= opset]
    return max(fitting) if fitting else min(versions)


def schema_function(
    node: onnx.NodeProto, opset: int, input_types: Sequence[onnx.TypeProto | None]
) -> onnx.FunctionProto | None:
    """The standard's function body of `node` at `opset` (None if the op has none).

    Context-dependent bodies (whose ops depend on attributes and input types) are asked for
    with the inputs' types; a missing optional input has no type."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:  # noqa: BLE001 - no schema at this opset: no body
        return None
    fn = onnx.FunctionProto()
    if schema.has_context_dependent_function:
        version = _pick_version(schema.context_dependent_function_opset_versions, opset)
        if version is None:
            return None
        types = [(t or onnx.TypeProto()).SerializeToString() for t in input_types]
        try:
            raw = schema.get_context_dependent_function_with_opset_version(
                version, node.SerializeToString(), types
            )
        except Exception:  # noqa: BLE001 - the builder refused these types/attributes
            return None
        fn.ParseFromString(raw)
    elif schema.has_function:
        version = _pick_version(schema.function_opset_versions, opset)
        if version is None:
            return None
        fn.ParseFromString(schema.get_function_with_opset_version(version))
    else:
        return None
    if not fn.node:
        return None
    # the schema's attribute defaults are the function's: a body's reference to an attribute
    # the call leaves out means the default
    given = {a.name for a in fn.attribute_proto}
    for name, attr in schema.attributes.items():
        if name not in given and attr.default_value is not None and attr.default_value.type:
            default = onnx.AttributeProto()
            default.CopyFrom(attr.default_value)
            default.name = name
            fn.attribute_proto.append(default)
    return fn


def local_functions(model: onnx.ModelProto) -> dict[tuple[str, str], onnx.FunctionProto]:
    """The model's own functions by (domain, name)."""
    return {(f.domain, f.name): f for f in model.functions}


def tensor_type(dtype: np.dtype, shape: Sequence[int]) -> onnx.TypeProto:
    return helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)


class _Renamer:
    """Names of a body moved into the call site's scope: formal inputs and outputs become the
    call's actual ones, every other name gets the call's prefix (also inside subgraphs)."""

    def __init__(self, formal_to_actual: Mapping[str, str], prefix: str):
        self.mapping = dict(formal_to_actual)
        self.prefix = prefix

    def name(self, n: str) -> str:
        if not n:
            return n
        return self.mapping.get(n, self.prefix + n)

    def graph(self, g: onnx.GraphProto, attrs: Mapping[str, onnx.AttributeProto]) -> None:
        for vi in [*g.input, *g.output, *g.value_info]:
            vi.name = self.name(vi.name)
        for init in g.initializer:
            init.name = self.name(init.name)
        nodes = [self.node(n, attrs) for n in g.node]
        del g.node[:]
        g.node.extend(nodes)

    def node(self, n: onnx.NodeProto, attrs: Mapping[str, onnx.AttributeProto]) -> onnx.NodeProto:
        out = onnx.NodeProto()
        out.CopyFrom(n)
        out.input[:] = [self.name(i) for i in n.input]
        out.output[:] = [self.name(o) for o in n.output]
        if out.name:
            out.name = self.prefix + out.name
        kept: list[onnx.AttributeProto] = []
        for a in out.attribute:
            if a.ref_attr_name:
                actual = attrs.get(a.ref_attr_name)
                if actual is None:
                    continue  # not given and no default: the attribute is absent
                b = onnx.AttributeProto()
                b.CopyFrom(actual)
                b.name = a.name
                a = b
            if a.type == onnx.AttributeProto.GRAPH:
                self.graph(a.g, attrs)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    self.graph(g, attrs)
            kept.append(a)
        del out.attribute[:]
        out.attribute.extend(kept)
        return out


def inline(
    node: onnx.NodeProto, fn: onnx.FunctionProto, prefix: str, caller_opset: int, source: str
) -> FunctionBody:
    """The body of `fn` for the call `node`: formal parameters bound to the call's names,
    attribute references resolved against the call's attributes (then the function's
    defaults), everything else renamed under `prefix`."""
    formal: dict[str, str] = {}
    for k, name in enumerate(fn.input):
        formal[name] = node.input[k] if k < len(node.input) else ""
    for k, name in enumerate(fn.output):
        if k < len(node.output) and node.output[k]:
            formal[name] = node.output[k]
    attrs: dict[str, onnx.AttributeProto] = {a.name: a for a in fn.attribute_proto}
    attrs.update({a.name: a for a in node.attribute})
    renamer = _Renamer(formal, prefix)
    nodes = [renamer.node(n, attrs) for n in fn.node]
    return FunctionBody(nodes, _default_opset(fn, caller_opset), source)
