"""ONNX model -> graph-dialect module (`func.func @main`) plus a params store.

The importer walks the nodes in order, keeps values known at import time as numpy arrays
(initializers, Constants, folded shape arithmetic) and emits only real compute. Everything it
cannot express is collected, so one error lists the model's whole gap."""

from __future__ import annotations

import math
import os
import re
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError, Message
from onnx import helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Region, SSAValue

from nnvm.dialects.nnvm.base import tensor
from nnvm.dialects.nnvm.dtypes import element_type_of
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.frontend.onnx import ops as _ops  # noqa: F401  (registers the converters)
from nnvm.frontend.onnx.builder import (
    GraphBuilder,
    ImportShapeError,
    Known,
    NeedsKnownValue,
    Unsupported,
    Value,
    check_size,
    dtype_of,
    shape_of,
)
from nnvm.frontend.onnx.functions import (
    MAX_DEPTH,
    FunctionBody,
    inline,
    local_functions,
    schema_function,
    tensor_type,
)
from nnvm.frontend.onnx.registry import CONVERTERS, Converter, NodeContext
from nnvm.support.errors import UserError

DEFAULT_DOMAINS = ("", "ai.onnx")

ShapeArg = Mapping[str, Sequence[int]]


def _converter_key(node: onnx.NodeProto) -> str:
    """Converters are keyed by op type; ops of another domain by 'domain.OpType'."""
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}"


def converters() -> dict[str, Converter]:
    """The built-in converters and the plugins' (Plugin.onnx_converters); a plugin may add op
    types and domains, not replace a built-in converter."""
    from nnvm.support.plugins import registry

    table = dict(CONVERTERS)
    for key, (factory, source) in registry().onnx_converters.items():
        if key in CONVERTERS:
            raise UserError(
                f"ONNX converter '{key}' is defined twice: by nnvm (built in) and by {source}"
            )
        conv = factory()
        if not isinstance(conv, Converter):
            raise UserError(
                f"plugin {source}: the ONNX converter for '{key}' is a {type(conv).__name__}, "
                "not an nnvm.frontend.onnx.registry.Converter"
            )
        table[key] = conv
    return table


class OnnxImportError(UserError):
    """The model uses unsupported ops/attributes, or needs input values at import time.

    `problems` lists one line per unsupported node; `needs_known_inputs` names graph inputs
    that feed shape/axes/pads positions (a caller holding their values can fold them)."""

    def __init__(
        self,
        message: str,
        location: str | None,
        problems: list[str],
        needs_known_inputs: list[str],
    ):
        super().__init__(message, location)
        self.problems = problems
        self.needs_known_inputs = needs_known_inputs


class MissingShapeError(UserError):
    """Inputs with symbolic or unknown dims and no shape given (`inputs` names them)."""

    def __init__(self, message: str, location: str | None, inputs: list[str]):
        super().__init__(message, location)
        self.inputs = inputs


class _Poison:
    """The output of a node that could not be converted (its consumers are skipped)."""


POISON = _Poison()


@dataclass
class _Problems:
    lines: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)

    def add(self, label: str, op_type: str, opset: int, what: str) -> None:
        self.lines.append(f"node {label} ({op_type}, opset {opset}): {what}")


def load_model(
    model: onnx.ModelProto | str | os.PathLike[str] | bytes,
) -> tuple[onnx.ModelProto, str | None]:
    """The ModelProto and the file it came from; unreadable or malformed files are UserErrors."""
    if isinstance(model, onnx.ModelProto):
        return model, None
    if isinstance(model, bytes | bytearray):
        where = None
        try:
            proto = onnx.load_model_from_string(bytes(model))
        except (DecodeError, ValueError, RuntimeError) as err:
            raise UserError(f"not a valid ONNX model: {err}") from None
    else:
        where = os.fspath(model)
        if not os.path.isfile(where):
            raise UserError("cannot read the model: no such file", where)
        try:
            proto = onnx.load(where)
        except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError) as err:
            raise UserError(f"not a valid ONNX model: {err}", where) from None
    if proto.ir_version <= 0 or not proto.HasField("graph"):
        raise UserError("not a valid ONNX model (no IR version or no graph)", where)
    if (what := _non_text_name(proto.graph)) is not None:
        raise UserError(f"not a valid ONNX model: {what} is not UTF-8 text", where)
    return proto, where


def _non_text_name(graph: onnx.GraphProto, path: str = "graph") -> str | None:
    """Where a name the model gives is bytes that are not UTF-8 (protobuf hands them over as
    bytes, not str), or None."""
    for kind, values in (("input", graph.input), ("output", graph.output)):
        for i, vi in enumerate(values):
            if not isinstance(vi.name, str):
                return f"the name of {path} {kind} #{i}"
    for i, t in enumerate(graph.initializer):
        if not isinstance(t.name, str):
            return f"the name of {path} initializer #{i}"
    for i, node in enumerate(graph.node):
        where = f"{path} node #{i}"
        texts = [node.name, node.op_type, node.domain, *node.input, *node.output]
        if not all(isinstance(t, str) for t in texts):
            return f"a name, op type or domain of {where}"
        for attr in node.attribute:
            if not isinstance(attr.name, str):
                return f"an attribute name of {where}"
            for g in [attr.g] if attr.HasField("g") else list(attr.graphs):
                if (inner := _non_text_name(g, f"{where} subgraph")) is not None:
                    return inner
    return None


def check_model(model: onnx.ModelProto, where: str | None) -> None:
    """ONNX's own checker and its type and shape inference in strict mode: a model that breaks
    the standard (a repeated or unknown attribute, an unknown opset or element type, a name
    defined twice, an input of a type its op does not take, a declared output type its node
    cannot produce) is refused before anything reads it. Graph outputs and value_info may leave
    their types out (onnxruntime infers them, so do we): the check sees them inferred. It runs
    after the import, whose own errors name every problem at once."""
    for kind, values in (("input", model.graph.input), ("output", model.graph.output)):
        for vi in values:
            t = vi.type
            if t.WhichOneof("value") == "tensor_type" and t.tensor_type.elem_type == 0:
                raise UserError(
                    f"invalid ONNX model: graph {kind} {vi.name!r} has element type 0 (UNDEFINED)",
                    where,
                )
    copy = _without_weight_data(model)
    copy.graph.name = copy.graph.name or "main"  # onnxruntime does not insist on one; nor do we
    _forget_declared_shapes(copy.graph)
    try:
        try:
            inferred = onnx.shape_inference.infer_shapes(copy, check_type=True, strict_mode=True)
        except onnx.shape_inference.InferenceError as err:
            if not _only_shape_merges(str(err)):
                raise
            # a shape that onnx's inference and a node's declared one disagree on (torch's
            # exporter writes some) is a hint, as declared shapes are: onnxruntime runs it
            inferred = onnx.shape_inference.infer_shapes(copy, check_type=True)
        _drop_untyped(inferred.graph)
        onnx.checker.check_model(inferred)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, ValueError) as err:
        raise UserError(f"invalid ONNX model: {_first_line(err)}", where) from None


STAND_IN_ELEMENTS = 1024


def _without_weight_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy for the check with every initializer of more than STAND_IN_ELEMENTS elements
    turned into a graph input of its type and shape. Inference reads the values only of small
    initializers (shapes, axes, pads); onnx serializes the model whole for each inference and
    check, which for ResNet-50's 100 MB of weights was most of a warm build, and beyond
    protobuf's 2 GiB would not work at all. The importer reads (and checks) the weights itself."""
    copy = onnx.ModelProto()
    _copy_fields(model, copy, skip="graph")
    graph = copy.graph
    _copy_fields(model.graph, graph, skip="initializer")
    declared = {vi.name for vi in graph.input}
    for init in model.graph.initializer:
        if math.prod(init.dims) <= STAND_IN_ELEMENTS:
            graph.initializer.add().CopyFrom(init)
        elif init.name not in declared:  # before IR 4 an initializer is a declared input too
            graph.input.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    return copy


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    """Every set field of one protobuf message into another of its kind, but `skip`."""
    for desc, value in source.ListFields():
        if desc.name == skip:
            continue
        if isinstance(value, Message):
            getattr(target, desc.name).CopyFrom(value)
        elif isinstance(value, str | bytes | int | float | bool):
            setattr(target, desc.name, value)
        else:  # a repeated field
            getattr(target, desc.name).extend(value)


def _only_shape_merges(message: str) -> bool:
    """Does an inference error list nothing but shape-merge conflicts?"""
    errors = re.findall(r"\(op_type:[^)]*\): \[(\w+)\] ([^(]*)", message)
    return bool(errors) and all(
        kind == "ShapeInferenceError" and "Can't merge shape info" in text for kind, text in errors
    )


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graph and every subgraph in it (If/Loop/Scan bodies), nested ones too."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            for g in attr.graphs:
                yield from _graphs(g)


def _forget_declared_shapes(graph: onnx.GraphProto) -> None:
    """Declared shapes of outputs and intermediate values are hints (onnxruntime warns and
    goes on when they are wrong, and so do we: the importer infers its own); their element
    types still count. A value_info entry of an initializer or graph input (onnxscript's
    optimizer writes them for the constants it folds) is dropped: those declare their own
    type and shape, and a value_info without the shape hid the value from inference (a Falcon
    export's rotary Slice lost its constant axes, and onnx's inference then refused a valid
    Mul)."""
    for g in _graphs(graph):
        declared = {i.name for i in [*g.initializer, *g.input]}
        declared |= {s.values.name for s in g.sparse_initializer}
        keep = [vi for vi in g.value_info if vi.name not in declared]
        if len(keep) != len(g.value_info):
            del g.value_info[:]
            g.value_info.extend(keep)
        for vi in [*g.output, *g.value_info]:
            if vi.type.WhichOneof("value") == "tensor_type":
                vi.type.tensor_type.ClearField("shape")


def _drop_untyped(graph: onnx.GraphProto) -> None:
    """value_info entries without a type say nothing; an untyped graph output (shape inference
    could not type it either) is typed by the importer, not by this check."""
    for g in _graphs(graph):
        keep = [vi for vi in g.value_info if vi.type.WhichOneof("value") is not None]
        del g.value_info[:]
        g.value_info.extend(keep)
        for vi in [*g.input, *g.output, *g.value_info]:
            t = vi.type
            if t.WhichOneof("value") is None:
                t.tensor_type.elem_type = onnx.TensorProto.FLOAT
            if t.WhichOneof("value") == "tensor_type" and not t.tensor_type.HasField("shape"):
                t.tensor_type.shape.SetInParent()  # unknown rank: the checker wants the field


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = " ".join(lines[:3]) if lines else type(err).__name__
    return text if len(text) < 400 else text[:400] + "..."


def default_opset(model: onnx.ModelProto) -> int:
    """The model's opset of the default ONNX domain; a model without one is refused (read as
    opset 1 it would silently get old semantics, e.g. Clip without min/max inputs)."""
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            newest = onnx.defs.onnx_opset_version()
            if not 1 <= entry.version <= newest:
                raise UserError(
                    f"the model imports opset {entry.version} of the default ONNX domain; "
                    f"this onnx package knows opsets 1 to {newest}"
                )
            return int(entry.version)
    raise UserError(
        "the model imports no opset of the default ONNX domain, so its ops' versions are "
        "unknown (add opset_import { domain: '', version: N })"
    )


@cache
def _schema(op_type: str, opset: int) -> onnx.defs.OpSchema | None:
    """An op's schema in the default domain at an opset (None: no such op there)."""
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # noqa: BLE001 - no schema: nothing to check against
        return None


def arity_problem(node: onnx.NodeProto, opset: int) -> str | None:
    """Why the node's input or output count does not fit its schema, or which input the schema
    requires (neither optional nor variadic) it leaves empty (TopK without its k); None when
    it fits."""
    schema = _schema(node.op_type, opset)
    if schema is None:
        return None
    lo_in, hi_in = schema.min_input, schema.max_input
    lo_out, hi_out = schema.min_output, schema.max_output
    n_in, n_out = len(node.input), len(node.output)
    if not lo_in <= n_in <= hi_in:
        return f"has {n_in} inputs; {node.op_type}-{opset} takes {lo_in} to {hi_in}"
    if not lo_out <= n_out <= hi_out:
        return f"has {n_out} outputs; {node.op_type}-{opset} gives {lo_out} to {hi_out}"
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    for i, formal in enumerate(schema.inputs[:n_in]):
        if formal.option == single and not node.input[i]:
            return f"input #{i} ({formal.name}) is required; the node leaves it empty"
    return None


def _label(node: onnx.NodeProto, index: int) -> str:
    if node.name:
        return repr(node.name)
    first = next((o for o in node.output if o), "")
    return f"#{index}" + (f" (output {first!r})" if first else "")


def _numpy_dtype(elem_type: int, what: str) -> np.dtype:
    try:
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
        element_type_of(dt)
        return dt
    except (KeyError, TypeError, ValueError):
        name = (
            onnx.TensorProto.DataType.Name(elem_type)
            if elem_type in onnx.TensorProto.DataType.values()
            else str(elem_type)
        )
        raise Unsupported(f"{what} has unsupported element type {name}") from None


def _topological(
    nodes: Sequence[onnx.NodeProto], available: set[str]
) -> list[tuple[int, onnx.NodeProto]]:
    """Nodes in an order where every input is defined first (ONNX requires it; be lenient)."""
    ordered: list[tuple[int, onnx.NodeProto]] = []
    defined = set(available)
    pending = list(enumerate(nodes))
    while pending:
        rest = []
        for index, node in pending:
            if all(not n or n in defined for n in node.input):
                ordered.append((index, node))
                defined.update(o for o in node.output if o)
            else:
                rest.append((index, node))
        if len(rest) == len(pending):
            ordered.extend(rest)  # undefined inputs: reported when the node is reached
            break
        pending = rest
    return ordered


class OnnxImporter:
    """One import of one model (see `from_onnx`)."""

    def __init__(
        self,
        model: onnx.ModelProto,
        where: str | None,
        shape: ShapeArg | None,
        dtype: str | Mapping[str, str],
        known_inputs: Mapping[str, np.ndarray] | None,
    ):
        self.model = model
        self.graph = model.graph
        self.where = where
        self.shape = dict(shape or {})
        self.dtype = dtype
        self.known_inputs = dict(known_inputs or {})
        self.opset = default_opset(model)
        self.values: dict[str, Value | _Poison] | ChainMap[str, Value | _Poison] = {}
        self.block = Block()
        self.builder = GraphBuilder(self.block)
        self.problems = _Problems()
        self.converters = converters()
        self.functions = local_functions(model)
        self._depth = 0

    def error(self, message: str) -> UserError:
        return UserError(message, self.where)

    # -- graph inputs and initializers ---------------------------------------------------------

    def _initializers(self) -> None:
        for init in self.graph.initializer:
            try:
                array = numpy_helper.to_array(init)
                dtype = _numpy_dtype(init.data_type, f"initializer {init.name!r}")
            except Unsupported as err:
                self.problems.lines.append(str(err))
                self.values[init.name] = POISON
                continue
            except Exception as err:  # noqa: BLE001 - corrupt tensor data
                raise self.error(f"initializer {init.name!r} cannot be read: {err}") from None
            self.values[init.name] = Known(np.asarray(array, dtype=dtype), init.name, weight=True)
        for sparse in self.graph.sparse_initializer:
            self.problems.lines.append(
                f"sparse initializer {sparse.values.name!r} is not supported"
            )
            self.values[sparse.values.name] = POISON

    def _input_dtype(self, name: str, elem_type: int) -> np.dtype:
        if isinstance(self.dtype, Mapping) and name in self.dtype:
            return np.dtype(self.dtype[name])
        if elem_type == 0:
            return np.dtype(self.dtype if isinstance(self.dtype, str) else "float32")
        return _numpy_dtype(elem_type, f"input {name!r}")

    def _input_shape(self, vi: onnx.ValueInfoProto, missing: list[str]) -> tuple[int, ...] | None:
        ttype = vi.type.tensor_type
        declared: list[int | str] | None = None
        if ttype.HasField("shape"):
            declared = [
                int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                for d in ttype.shape.dim
            ]
        given = self.shape.get(vi.name)
        if given is None:
            if declared is None or any(isinstance(d, str) for d in declared):
                shown = (
                    "unknown rank"
                    if declared is None
                    else "[" + ", ".join(map(str, declared)) + "]"
                )
                missing.append(f"{vi.name!r} ({shown})")
                return None
            return tuple(int(d) for d in declared)  # type: ignore[arg-type]
        try:
            dims = tuple(int(d) for d in given)
        except (TypeError, ValueError):
            raise self.error(
                f"shape for input {vi.name!r} must be a list of integers, got {given!r}"
            ) from None
        if any(d < 0 for d in dims):
            raise self.error(f"shape for input {vi.name!r} has a negative dimension: {list(dims)}")
        if declared is not None and (
            len(declared) != len(dims)
            or any(isinstance(d, int) and d != g for d, g in zip(declared, dims, strict=False))
        ):
            raise self.error(
                f"shape {list(dims)} given for input {vi.name!r} is inconsistent with the model's "
                f"declared shape [{', '.join(map(str, declared))}]"
            )
        return dims

    def _graph_inputs(self) -> tuple[list[str], list[Any]]:
        initialized = {t.name for t in self.graph.initializer}
        names, types, missing, missing_names = [], [], [], []
        real_inputs = [vi for vi in self.graph.input if vi.name not in initialized]
        known_names = {vi.name for vi in real_inputs}
        for key in self.shape:
            if key not in known_names:
                raise self.error(
                    f"shape given for {key!r}, which is not a graph input (inputs: "
                    + ", ".join(repr(n) for n in sorted(known_names))
                    + ")"
                )
        for vi in real_inputs:
            kind = vi.type.WhichOneof("value")
            if kind != "tensor_type":
                self.problems.lines.append(
                    f"input {vi.name!r}: {kind or 'untyped'} inputs are not supported"
                )
                self.values[vi.name] = POISON
                continue
            try:
                dt = self._input_dtype(vi.name, vi.type.tensor_type.elem_type)
            except Unsupported as err:
                self.problems.lines.append(str(err))
                self.values[vi.name] = POISON
                continue
            if vi.name in self.known_inputs:
                array = np.asarray(self.known_inputs[vi.name]).astype(dt, copy=False)
                self.values[vi.name] = Known(array, vi.name)
                continue
            dims = self._input_shape(vi, missing)
            if dims is None:
                missing_names.append(vi.name)
                continue
            names.append(vi.name)
            types.append(tensor(dims, element_type_of(dt)))
        if missing:
            raise MissingShapeError(
                "the shape of input "
                + ", ".join(missing)
                + " is not fully known; pass it with shape={name: [dims...]} "
                "(nnvm-translate: --shape NAME=D0,D1,...)",
                self.where,
                missing_names,
            )
        return names, types

    # -- nodes ---------------------------------------------------------------------------------

    def _needs(self, value: SSAValue, arg_names: list[str]) -> list[str]:
        """Graph inputs that `value` depends on (walking its definitions upwards)."""
        seen: set[int] = set()
        found: list[str] = []
        stack = [value]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, BlockArgument):
                name = arg_names[v.index]
                if name not in found:
                    found.append(name)
            elif v.owner is not None:
                stack.extend(v.owner.operands)  # type: ignore[union-attr]
        return found

    def _convert_nodes(self, arg_names: list[str], nodes: Sequence[onnx.NodeProto]) -> None:
        available = set(self.values)
        for index, node in _topological(nodes, available):
            label = _label(node, index)
            opset = self.opset
            conv = self.converters.get(_converter_key(node))
            if conv is None and self._expand_function(node, label, arg_names):
                continue
            if conv is None and node.domain not in DEFAULT_DOMAINS:
                self.problems.add(
                    label, f"{node.domain}.{node.op_type}", opset, "op domain not supported"
                )
                self._poison(node)
                continue
            if conv is None:
                self.problems.add(label, node.op_type, opset, "op type not supported")
                self._poison(node)
                continue
            if node.domain in DEFAULT_DOMAINS and (why := arity_problem(node, opset)) is not None:
                self.problems.add(label, node.op_type, opset, why)
                self._poison(node)
                continue
            bad_attrs = sorted(a.name for a in node.attribute if a.name not in conv.attrs)
            inputs: list[Value | None] = []
            poisoned = False
            for name in node.input:
                if not name:
                    inputs.append(None)
                    continue
                if name not in self.values:
                    raise self.error(
                        f"node {label} ({node.op_type}) uses {name!r}, which no graph input, "
                        "initializer or earlier node defines"
                    )
                v = self.values[name]
                if isinstance(v, _Poison):
                    poisoned = True
                    inputs.append(None)
                else:
                    inputs.append(v)
            if bad_attrs:
                self.problems.add(
                    label,
                    node.op_type,
                    opset,
                    "attribute " + ", ".join(bad_attrs) + " not supported",
                )
            if opset < conv.since:
                self.problems.add(label, node.op_type, opset, f"needs opset >= {conv.since}")
            if bad_attrs or poisoned or opset < conv.since:
                self._poison(node)
                continue
            ctx = NodeContext(node, opset, inputs, self.builder, self._subgraph_runner(arg_names))
            try:
                outs = list(conv.fn(ctx))
            except NeedsKnownValue as err:
                deps = self._needs(err.value, arg_names)
                for d in deps:
                    if d not in self.problems.needs:
                        self.problems.needs.append(d)
                dep_text = (
                    f" (it depends on graph input {', '.join(map(repr, deps))})" if deps else ""
                )
                self.problems.add(label, node.op_type, opset, f"{err}{dep_text}")
                self._poison(node)
                continue
            except Unsupported as err:
                self.problems.add(label, node.op_type, opset, str(err))
                self._poison(node)
                continue
            except ImportShapeError as err:
                raise self.error(f"node {label} ({node.op_type}): {err}") from None
            except MemoryError:
                raise self.error(
                    f"node {label} ({node.op_type}): its attributes ask for more memory than "
                    "this machine has (a huge size attribute?)"
                ) from None
            except (TypeError, ValueError, IndexError, KeyError) as err:
                # Malformed attributes (a required one missing, a wrong type) and the like.
                self.problems.add(label, node.op_type, opset, f"cannot convert: {err}")
                self._poison(node)
                continue
            self._bind_outputs(node, label, opset, outs)

    def _function_body(self, node: onnx.NodeProto, label: str) -> FunctionBody | None:
        """The model's own function, else the standard's function body, for `node`."""
        prefix = f"{node.output[0] if node.output else label}/{node.op_type}/"
        local = self.functions.get((node.domain, node.op_type))
        if local is not None:
            where = f"function {node.domain}.{node.op_type} of the model"
            return inline(node, local, prefix, self.opset, where)
        if node.domain not in DEFAULT_DOMAINS:
            return None
        types: list[onnx.TypeProto | None] = []
        for name in node.input:
            v = self.values.get(name) if name else None
            if v is None or isinstance(v, _Poison):
                types.append(None)
            else:
                types.append(tensor_type(dtype_of(v), shape_of(v)))
        fn = schema_function(node, self.opset, types)
        if fn is None:
            return None
        return inline(node, fn, prefix, self.opset, f"the ONNX function {node.op_type}")

    def _may_have_function(self, node: onnx.NodeProto) -> bool:
        if (node.domain, node.op_type) in self.functions:
            return True
        if node.domain not in DEFAULT_DOMAINS:
            return False
        schema = _schema(node.op_type, self.opset)
        return schema is not None and bool(
            schema.has_function or schema.has_context_dependent_function
        )

    def _expand_function(self, node: onnx.NodeProto, label: str, arg_names: list[str]) -> bool:
        """Convert `node` as its function body (False when it has none). Problems inside the
        body are reported as one item of the node."""
        if not self._may_have_function(node):
            return False
        if any(isinstance(self.values.get(n), _Poison) for n in node.input if n):
            self._poison(node)  # an input already failed; that failure is reported
            return True
        body = self._function_body(node, label)
        if body is None:
            return False
        opset = self.opset
        if self._depth >= MAX_DEPTH:
            self.problems.add(
                label, node.op_type, opset, f"functions nest deeper than {MAX_DEPTH} calls"
            )
            self._poison(node)
            return True
        local: dict[str, Value | _Poison] = {}
        self._depth += 1
        try:
            inner = self._convert_in_scope(arg_names, body.nodes, local, body.opset)
        finally:
            self._depth -= 1
        if inner.lines:
            self.problems.add(
                label, node.op_type, opset, f"in {body.source}: " + "; ".join(inner.lines)
            )
            self._poison(node)
            return True
        for name in node.output:
            if not name:
                continue
            v = local.get(name)
            if v is None:
                self.problems.add(
                    label, node.op_type, opset, f"{body.source} does not define {name!r}"
                )
                v = POISON
            self.values[name] = v
        return True

    def _subgraph_runner(self, arg_names: list[str]) -> Callable[..., list[Value]]:
        def run(graph: onnx.GraphProto, bindings: Mapping[str, Value]) -> list[Value]:
            return self._run_subgraph(graph, bindings, arg_names)

        return run

    def _run_subgraph(
        self, graph: onnx.GraphProto, bindings: Mapping[str, Value], arg_names: list[str]
    ) -> list[Value]:
        """Convert a control-flow body inline: its inputs bound to `bindings`, outer values
        visible by name (ONNX scoping); problems inside become one Unsupported for the node."""
        local: dict[str, Value | _Poison] = dict(bindings)
        for init in graph.initializer:
            local[init.name] = Known(numpy_helper.to_array(init), init.name, weight=True)
        inner = self._convert_in_scope(arg_names, graph.node, local, self.opset)
        if inner.lines:
            raise Unsupported("in its body: " + "; ".join(inner.lines))
        visible = ChainMap(local, self.values)
        outs = [visible.get(o.name) for o in graph.output]
        if any(v is None or isinstance(v, _Poison) for v in outs):
            raise Unsupported("its body does not produce all of its outputs")
        return outs  # type: ignore[return-value]

    def _convert_in_scope(
        self,
        arg_names: list[str],
        nodes: Sequence[onnx.NodeProto],
        local: dict[str, Value | _Poison],
        opset: int,
    ) -> _Problems:
        """Convert nodes (a control-flow body, a function body) in a scope of their own: new
        names land in `local`, outer names stay visible, and the nodes' problems are returned,
        not reported (the caller reports them as one item); the graph inputs they need are
        noted in the outer problems."""
        outer = (self.values, self.problems, self.opset)
        self.values = ChainMap(local, outer[0])  # type: ignore[assignment]
        self.problems = _Problems()
        self.opset = opset
        try:
            self._convert_nodes(arg_names, nodes)
            inner = self.problems
        finally:
            self.values, self.problems, self.opset = outer
        for d in inner.needs:
            if d not in self.problems.needs:
                self.problems.needs.append(d)
        return inner

    def _poison(self, node: onnx.NodeProto) -> None:
        for name in node.output:
            if name:
                self.values[name] = POISON

    def _bind_outputs(
        self, node: onnx.NodeProto, label: str, opset: int, outs: list[Value | None]
    ) -> None:
        for k, name in enumerate(node.output):
            if not name:
                continue
            v = outs[k] if k < len(outs) else None
            if v is None:
                self.problems.add(
                    label, node.op_type, opset, f"output #{k} ({name!r}) not supported"
                )
                self.values[name] = POISON
                continue
            if isinstance(v, Known):
                v = Known(v.array, name, v.weight)
            self.values[name] = v

    # -- the function --------------------------------------------------------------------------

    def run(self) -> tuple[ModuleOp, dict[str, np.ndarray]]:
        if not self.graph.output:
            raise self.error("the graph has no outputs: there is nothing to compute")
        self._initializers()
        arg_names, arg_types = self._graph_inputs()
        for name, t in zip(arg_names, arg_types, strict=True):
            try:
                check_size(t)
            except ImportShapeError as err:
                raise self.error(f"graph input {name!r}: {err}") from None
        self.block = Block(arg_types=arg_types)
        self.builder = GraphBuilder(self.block)
        for name, arg in zip(arg_names, self.block.args, strict=True):
            arg.name_hint = _hint(name)
            self.values[name] = arg
        self._convert_nodes(arg_names, self.graph.node)
        results: list[SSAValue] = []
        out_names: list[str] = []
        for vi in self.graph.output:
            v = self.values.get(vi.name)
            if v is None:
                raise self.error(f"graph output {vi.name!r} is not produced by any node or input")
            if isinstance(v, _Poison):
                continue
            try:
                results.append(self.builder.value(v))
            except Unsupported as err:
                self.problems.lines.append(f"graph output {vi.name!r}: {err}")
                continue
            out_names.append(vi.name)
        if self.problems.lines:
            n = len(self.problems.lines)
            message = (
                f"cannot import the model (opset {self.opset}): {n} unsupported "
                + ("item" if n == 1 else "items")
                + ":\n  "
                + "\n  ".join(self.problems.lines)
            )
            raise OnnxImportError(message, self.where, self.problems.lines, self.problems.needs)
        self.block.add_op(func.ReturnOp(*results))
        _dead_code_elimination(self.block, self.builder.params)
        fn = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(self.block),
            arg_attrs=_name_attrs(arg_names),
            res_attrs=_name_attrs(out_names),
        )
        return ModuleOp([fn]), self.builder.params


def _hint(name: str) -> str | None:
    """An SSA name hint from an ONNX name, when it is a valid identifier."""
    cleaned = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return cleaned if cleaned and (cleaned[0].isalpha() or cleaned[0] == "_") else None


def _name_attrs(names: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({"nnvm.name": StringAttr(n)}) for n in names])


def _dead_code_elimination(block: Block, params: dict[str, np.ndarray]) -> None:
    """Drop ops whose results are unused (dead branches of the graph, unused params)."""
    for op in reversed(list(block.ops)):
        if isinstance(op, func.ReturnOp) or any(r.first_use is not None for r in op.results):
            continue
        if isinstance(op, ParamOp):
            params.pop(op.key, None)
        block.erase_op(op)


def from_onnx(
    model: onnx.ModelProto | str | os.PathLike[str] | bytes,
    shape: ShapeArg | None = None,
    dtype: str | Mapping[str, str] = "float32",
    *,
    known_inputs: Mapping[str, np.ndarray] | None = None,
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Import an ONNX model as a graph-dialect module with a `main` function and its params.

    `shape` gives concrete shapes for inputs with symbolic dims; `dtype` is the element type
    of inputs that declare none (or a per-input mapping that overrides the model). Inputs in
    `known_inputs` are folded as constants (how the ONNX backend specializes on shape-like
    inputs). Raises UserError (OnnxImportError for unsupported content)."""
    proto, where = load_model(model)
    imported = OnnxImporter(proto, where, shape, dtype, known_inputs).run()
    check_model(proto, where)  # after our own checks, which name every problem at once
    return imported
