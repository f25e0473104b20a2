"""lower-to-te: each kernel function of graph ops becomes one te kernel.

A kernel function is a function whose body holds only graph ops (the outlined fused groups
`@fused_*`, or a whole unfused function of ops); functions that call others or name params
(the graph's `main`) are left alone. Each op contributes the computes of its own te definition
(`te_compute`, a method of its class), in order, so a fused group becomes one kernel whose
intermediate computes the schedule later inlines or computes at their consumer.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass

from nnvm.dialects.nnvm.base import NNVMOp
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.dialects.te.builder import KernelBuilder, TensorRef
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.target import Target, parse_target


def is_graph_kernel(fn: func.FuncOp) -> bool:
    """Only graph ops (no calls, no params) and at least one of them."""
    if fn.is_declaration:
        return False
    ops = list(fn.body.block.ops)
    body = [op for op in ops if not isinstance(op, func.ReturnOp)]
    return bool(body) and all(isinstance(op, NNVMOp) and not isinstance(op, ParamOp) for op in body)


def lower_function(fn: func.FuncOp, panel: int = 0) -> None:
    old = fn.body.block
    block = Block(arg_types=[a.type for a in old.args])
    for new, arg in zip(block.args, old.args, strict=True):
        new.name_hint = arg.name_hint
    builder = KernelBuilder(block, panel=panel)
    env: dict[SSAValue, TensorRef] = {
        a: TensorRef(n) for a, n in zip(old.args, block.args, strict=True)
    }
    for op in old.ops:
        if isinstance(op, func.ReturnOp):
            block.add_op(func.ReturnOp(*[env[v].value for v in op.operands]))
            continue
        assert isinstance(op, NNVMOp)
        builder.prefix = op.name.removeprefix("nnvm.")
        try:
            outs = op.te_compute(builder, [env[v] for v in op.operands])
        except NotImplementedError as err:
            raise DiagnosticError(op, str(err)) from None
        if len(outs) != len(op.results):
            raise DiagnosticError(
                op,
                f"the te definition of {op.name} gives {len(outs)} tensors for "
                f"{len(op.results)} results",
            )
        for res, out in zip(op.results, outs, strict=True):
            if out.type != res.type:
                raise DiagnosticError(
                    op, f"the te definition of {op.name} computes {out.type}, not {res.type}"
                )
            env[res] = out
    fn.body.detach_block(old)
    for op in reversed(list(old.ops)):
        op.drop_all_references()
    fn.body.add_block(block)


@dataclass(frozen=True)
class LowerToTE(ModulePass):
    """Graph kernels -> te kernels, through each op's `te_compute`."""

    name = "lower-to-te"

    target: str | Target | None = None
    """The target (object or target string; default: the host): its matmul panel width."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        panel = parse_target(self.target).capabilities.panel
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and is_graph_kernel(fn):
                lower_function(fn, panel)
