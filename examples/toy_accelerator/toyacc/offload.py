"""toyacc-offload: rewrite fused kernels whose every op the accelerator runs (dense, matmul by
a matrix, a bias or residual add, relu; f32) into the toyacc dialect. A kernel with any other
op is left alone, so the build places it on the host."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr, f32
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from toyacc.dialect import AddOp, BiasAddOp, MatmulOp, ReluOp


def _shape(value) -> list[int] | None:
    """The shape of an f32 tensor of rank >= 1, else None."""
    t = value.type
    if not isinstance(t, TensorType) or t.element_type != f32 or not t.get_shape():
        return None
    return list(t.get_shape())


def why_not(op: Operation) -> str | None:
    """None when `op` runs on toyacc; else the reason."""
    name = op.name
    if name == "func.return":
        return None
    shapes = [_shape(v) for v in (*op.operands, *op.results)]
    if any(s is None for s in shapes):
        return f"{name} is not on f32 tensors"
    if name in ("nnvm.dense", "nnvm.matmul"):
        lhs, rhs, _ = shapes
        if len(rhs) != 2 or len(lhs) < 2 or (name == "nnvm.dense" and len(lhs) != 2):
            return f"{name} is not a product with one weight matrix"
        panel = op.properties.get("rhs_panel")
        if panel is not None and panel.value.data:
            return f"{name} reads a CPU-packed weight"
        return None
    if name == "nnvm.bias_add":
        axis = op.properties.get("axis")
        last = len(shapes[0]) - 1
        return (
            None
            if axis is None or axis.value.data in (last, -1)
            else "bias_add not on the last axis"
        )
    if name == "nnvm.add":
        x, y, out = shapes
        return None if x == out and (y == out or y == out[-1:]) else "a broadcasting add"
    if name == "nnvm.relu":
        return None
    return f"toyacc has no {name}"


def offloadable(fn: func.FuncOp) -> str | None:
    """None when every op of the kernel runs on toyacc; else the first reason it cannot."""
    if fn.is_declaration:
        return "a declaration"
    reasons = [r for op in fn.body.block.ops if (r := why_not(op)) is not None]
    return reasons[0] if reasons else None


def offload(fn: func.FuncOp) -> None:
    for op in list(fn.body.block.ops):
        result_types = [r.type for r in op.results]
        if op.name in ("nnvm.dense", "nnvm.matmul"):
            new = MatmulOp.create(
                operands=list(op.operands),
                result_types=result_types,
                properties={"transpose_rhs": UnitAttr()} if op.name == "nnvm.dense" else {},
            )
        elif op.name == "nnvm.bias_add" or (
            op.name == "nnvm.add" and _shape(op.operands[1]) != _shape(op.results[0])
        ):
            new = BiasAddOp.create(operands=list(op.operands), result_types=result_types)
        elif op.name == "nnvm.add":
            new = AddOp.create(operands=list(op.operands), result_types=result_types)
        elif op.name == "nnvm.relu":
            new = ReluOp.create(operands=list(op.operands), result_types=result_types)
        else:
            continue
        Rewriter.replace_op(op, new)


@dataclass(frozen=True)
class ToyAccOffload(ModulePass):
    """Move every fused kernel that toyacc can run entirely onto the toyacc dialect."""

    name = "toyacc-offload"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and fn.sym_name.data != "main":
                if offloadable(fn) is None:
                    offload(fn)
