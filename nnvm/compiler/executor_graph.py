"""The executor graph: what the compiled entry point does, as JSON-serializable data.

It is read off the graph function after fusion and memory planning: the ordered kernel calls,
where each argument lives (a graph input, a param, a place in the arena, a graph output), the
storage plan, and every tensor's shape and dtype. The entry point is generated from it; tools
and the debug runtime read it to time and check kernels one by one."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.errors import UserError
from nnvm.passes.plan_memory import OFFSET_ATTR, PLAN_ATTR
from nnvm.reference import argument_names, find_function

FORMAT_VERSION = 1


@dataclass
class TensorInfo:
    shape: list[int]
    dtype: str

    @staticmethod
    def of(value: SSAValue) -> TensorInfo:
        t = value.type
        if not isinstance(t, TensorType):
            raise UserError(f"only tensors can cross kernel boundaries, got {t}")
        return TensorInfo(list(t.get_shape()), str(numpy_dtype_of(t.element_type)))

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class Ref:
    """Where a kernel argument lives: kind is input|param|constant|arena|output, with the
    input/output index, the param or constant name, or the arena byte offset."""

    kind: str
    index: int = 0
    name: str = ""
    offset: int = 0


@dataclass
class Node:
    kernel: str
    inputs: list[Ref]
    outputs: list[Ref]
    input_info: list[TensorInfo]
    output_info: list[TensorInfo]


@dataclass
class Copy:
    """A graph output that no kernel writes (a returned input, param or duplicate)."""

    source: Ref
    output: int


@dataclass
class ExecutorGraph:
    inputs: list[dict[str, Any]]
    outputs: list[TensorInfo]
    params: list[dict[str, Any]]
    constants: dict[str, dict[str, Any]]
    nodes: list[Node]
    copies: list[Copy]
    arena_bytes: int
    naive_bytes: int
    kernels: list[str]
    model_hash: str = ""
    format_version: int = FORMAT_VERSION
    target: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @staticmethod
    def from_json(text: str) -> ExecutorGraph:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise UserError(f"graph JSON is malformed: {err}") from None
        if data.get("format_version") != FORMAT_VERSION:
            raise UserError(
                f"graph format version {data.get('format_version')} is not supported "
                f"(this nnvm reads version {FORMAT_VERSION})"
            )

        def ref(d: dict[str, Any]) -> Ref:
            return Ref(**d)

        def info(d: dict[str, Any]) -> TensorInfo:
            return TensorInfo(**d)

        try:
            return ExecutorGraph(
                inputs=data["inputs"],
                outputs=[info(o) for o in data["outputs"]],
                params=data["params"],
                constants=data["constants"],
                nodes=[
                    Node(
                        n["kernel"],
                        [ref(r) for r in n["inputs"]],
                        [ref(r) for r in n["outputs"]],
                        [info(i) for i in n["input_info"]],
                        [info(i) for i in n["output_info"]],
                    )
                    for n in data["nodes"]
                ],
                copies=[Copy(ref(c["source"]), c["output"]) for c in data["copies"]],
                arena_bytes=data["arena_bytes"],
                naive_bytes=data["naive_bytes"],
                kernels=data["kernels"],
                model_hash=data.get("model_hash", ""),
                format_version=data["format_version"],
                target=data.get("target", ""),
                extra=data.get("extra", {}),
            )
        except (KeyError, TypeError) as err:
            raise UserError(f"graph JSON lacks or mistypes a field: {err}") from None


def executor_graph(module: ModuleOp, function: str = "main") -> ExecutorGraph:
    """Read the executor graph off a fused and memory-planned module."""
    fn = find_function(module, function)
    plan = fn.attributes.get(PLAN_ATTR)
    if plan is None:
        raise UserError(f"@{function} has no memory plan: run fuse and plan-memory first")
    names = argument_names(fn)
    where: dict[SSAValue, Ref] = {}
    inputs = []
    for k, (arg, name) in enumerate(zip(fn.body.block.args, names, strict=True)):
        where[arg] = Ref("input", index=k)
        inputs.append({"name": name, **asdict(TensorInfo.of(arg))})
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    params: list[dict[str, Any]] = []
    constants: dict[str, dict[str, Any]] = {}
    nodes: list[Node] = []
    kernels: list[str] = []
    written_outputs: set[int] = set()
    for op in fn.body.block.ops:
        if isinstance(op, ParamOp):
            where[op.result] = Ref("param", name=op.key)
            params.append({"name": op.key, **asdict(TensorInfo.of(op.result))})
        elif isinstance(op, ConstantOp):
            key = f"__constant{len(constants)}"
            where[op.result] = Ref("constant", name=key)
            constants[key] = {"value": op.numpy().tolist(), **asdict(TensorInfo.of(op.result))}
        elif isinstance(op, func.CallOp):
            nodes.append(_node(op, where, ret, written_outputs))
            if op.callee.root_reference.data not in kernels:
                kernels.append(op.callee.root_reference.data)
        elif not isinstance(op, func.ReturnOp):
            raise UserError(
                f"{op.name} is left in @{function} after fusion; every computation must be "
                "a kernel call"
            )
    copies = [Copy(where[v], k) for k, v in enumerate(ret.operands) if k not in written_outputs]
    return ExecutorGraph(
        inputs=inputs,
        outputs=[TensorInfo.of(v) for v in ret.operands],
        params=params,
        constants=constants,
        nodes=nodes,
        copies=copies,
        arena_bytes=plan.data["arena_bytes"].value.data,  # type: ignore[attr-defined]
        naive_bytes=plan.data["naive_bytes"].value.data,  # type: ignore[attr-defined]
        kernels=kernels,
    )


def _node(call: func.CallOp, where: dict[SSAValue, Ref], ret: Operation, written: set[int]) -> Node:
    offsets = call.attributes.get(OFFSET_ATTR)
    planned = list(offsets.get_values()) if offsets is not None else []  # type: ignore[attr-defined]
    outputs: list[Ref] = []
    cursor = 0
    for res in call.results:
        returned_at = [k for k, v in enumerate(ret.operands) if v is res and k not in written]
        if returned_at:
            ref = Ref("output", index=returned_at[0])
            written.add(returned_at[0])
        else:
            if cursor >= len(planned):
                raise UserError(
                    f"call of @{call.callee.root_reference.data} has no planned storage"
                )
            ref = Ref("arena", offset=int(planned[cursor]))
            cursor += 1
        where[res] = ref
        outputs.append(ref)
    return Node(
        kernel=call.callee.root_reference.data,
        inputs=[where[v] for v in call.operands],
        outputs=outputs,
        input_info=[TensorInfo.of(v) for v in call.operands],
        output_info=[TensorInfo.of(r) for r in call.results],
    )


def model_hash(*parts: bytes | str) -> str:
    """A short content hash tying library, graph and params of one build together."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
    return h.hexdigest()[:32]
