"""convert-cf-to-llvm: cf.br/cf.cond_br to llvm.br/llvm.cond_br, block arguments to llvm types.

Non-entry block arguments (loop counters after convert-scf-to-cf) change type here, index to
i64, so all branches into a block must be converted in the same run; entry-block arguments
belong to convert-func-to-llvm.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.convert_func_to_llvm import retype_block_args
from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder


def _br(op: cf.BranchOp, b: LLVMBuilder):
    b.add_op(llvm.BrOp(op.successor, *[b.to_llvm(v) for v in op.arguments]))
    return []


def _cond_br(op: cf.ConditionalBranchOp, b: LLVMBuilder):
    b.add_op(
        llvm.CondBrOp(
            op.cond,
            op.then_block,
            [b.to_llvm(v) for v in op.then_arguments],
            op.else_block,
            [b.to_llvm(v) for v in op.else_arguments],
        )
    )
    return []


CF_TABLE: dict[type[Operation], Handler] = {cf.BranchOp: _br, cf.ConditionalBranchOp: _cond_br}


@dataclass(frozen=True)
class ConvertCfToLLVM(ModulePass):
    """Lower unstructured control flow to llvm branches."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        retype_successor_block_args(op)
        apply_table(op, CF_TABLE)


def retype_successor_block_args(module: ModuleOp) -> None:
    """Non-entry block arguments take their llvm types (uses see casts back), before the
    branches into them are lowered."""
    blocks = [blk for inner in module.walk() for r in inner.regions for blk in list(r.blocks)[1:]]
    for block in blocks:
        retype_block_args(block)
