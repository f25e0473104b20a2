"""Read the executor graph off a fused, memory-planned graph function."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.passes.plan_memory import OFFSET_ATTR, PLAN_ATTR, VIEW_ATTR
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import Copy, ExecutorGraph, Node, Ref, TensorInfo
from nnvm.support.ir import argument_names, find_function


def tensor_info(value: SSAValue) -> TensorInfo:
    t = value.type
    if not isinstance(t, TensorType):
        raise UserError(f"only tensors can cross kernel boundaries, got {t}")
    return TensorInfo(list(t.get_shape()), str(numpy_dtype_of(t.element_type)))


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
        inputs.append({"name": name, **asdict(tensor_info(arg))})
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
            params.append({"name": op.key, **asdict(tensor_info(op.result))})
        elif isinstance(op, ConstantOp):
            key = f"__constant{len(constants)}"
            where[op.result] = Ref("constant", name=key)
            constants[key] = {"value": op.numpy().tolist(), **asdict(tensor_info(op.result))}
        elif isinstance(op, func.CallOp) and VIEW_ATTR in op.attributes:
            where[op.results[0]] = where[op.operands[0]]  # a reshape: the same bytes
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
        outputs=[tensor_info(v) for v in ret.operands],
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
        input_info=[tensor_info(v) for v in call.operands],
        output_info=[tensor_info(r) for r in call.results],
    )
