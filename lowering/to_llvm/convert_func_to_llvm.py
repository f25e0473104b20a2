"""convert-func-to-llvm: func.func/call/return to llvm.func/call/return (kernel ABI).

Memref arguments become bare `!llvm.ptr` to the first element of the (static-shaped) buffer, so a
kernel is `void @name(ptr %in0, ..., ptr %out0, ...)` with no memref descriptors at the boundary
(docs/design.md, kernel ABI). Public functions keep external linkage and are what a JIT or a shared
library exports; private functions with a body become internal so LLVM may inline and drop them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Attribute, Block, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder, convert_type
from nnvm.support.errors import UserError


def retype_block_args(block: Block, rewriter: PatternRewriter | None = None) -> None:
    """Give block arguments their llvm types; old uses see a cast back to the old type."""
    for arg in list(block.args):
        old = arg.type
        new = convert_type(old)
        if new == old:
            continue
        if rewriter is not None:
            new_arg = rewriter.replace_value_with_new_type(arg, new)
        else:
            from xdsl.rewriter import Rewriter

            new_arg = Rewriter.replace_value_with_new_type(arg, new)
        cast = UnrealizedConversionCastOp.get([new_arg], [old])
        if block.first_op is None:
            block.add_op(cast)
        else:
            block.insert_op_before(cast, block.first_op)
        new_arg.replace_uses_with_if(cast.results[0], lambda use, c=cast: use.operation is not c)


def _result_type(types: tuple[Attribute, ...], what: str, op: Operation) -> Attribute | None:
    if len(types) == 0:
        return None
    if len(types) > 1:
        raise LoweringError(
            op, f"{what}: functions with several results are not supported by the kernel ABI"
        )
    if isinstance(types[0], MemRefType):
        raise LoweringError(
            op,
            f"{what}: returning a memref is not supported by the kernel ABI; "
            "pass the output buffer as an argument instead",
        )
    return convert_type(types[0])


def _llvm_arg_attrs(op: func.FuncOp) -> ArrayAttr | None:
    """Keep only `llvm.*` argument attributes (noalias, align, ...)."""
    if op.arg_attrs is None:
        return None
    kept = [
        DictionaryAttr({k: v for k, v in d.data.items() if k.startswith("llvm.")})
        for d in op.arg_attrs.data
    ]
    if not any(d.data for d in kept):
        return None
    return ArrayAttr(kept)


class FuncToLLVM(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        ftype = op.function_type
        inputs = [convert_type(t) for t in ftype.inputs.data]
        output = _result_type(tuple(ftype.outputs.data), f"@{op.sym_name.data}", op)
        is_decl = not op.body.blocks
        private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        linkage = "internal" if (private and not is_decl) else "external"
        body = rewriter.move_region_contents_to_new_regions(op.body)
        if body.blocks:
            retype_block_args(body.blocks[0], rewriter)
        props: dict[str, Attribute | None] = {}
        if (arg_attrs := _llvm_arg_attrs(op)) is not None:
            props["arg_attrs"] = arg_attrs
        new = llvm.FuncOp(
            op.sym_name.data,
            llvm.LLVMFunctionType(inputs, output),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
            other_props=props,
        )
        rewriter.replace(op, new, [])


def _return(op: func.ReturnOp, b: LLVMBuilder):
    values = [b.to_llvm(v) for v in op.arguments]
    if len(values) > 1:
        raise UserError("func.return with several values is not supported by the kernel ABI")
    b.add_op(llvm.ReturnOp(values[0] if values else None))
    return []


def _call(op: func.CallOp, b: LLVMBuilder):
    what = f"call to @{op.callee.string_value()}"
    result = _result_type(tuple(r.type for r in op.res), what, op)
    args = [b.to_llvm(v) for v in op.arguments]
    value = b.call(op.callee.string_value(), args, result)
    return [value] if result is not None else []


FUNC_TABLE: dict[type[Operation], Handler] = {func.ReturnOp: _return, func.CallOp: _call}


@dataclass(frozen=True)
class ConvertFuncToLLVM(ModulePass):
    """Lower func to llvm with bare-pointer memref arguments."""

    name = "convert-func-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_table(op, FUNC_TABLE)
        convert_func_signatures(op)


def convert_func_signatures(module: ModuleOp) -> None:
    """func.func -> llvm.func (bare-pointer memref arguments), once their bodies are lowered."""
    PatternRewriteWalker(FuncToLLVM(), apply_recursively=False).rewrite_module(module)


__all__ = ["ConvertFuncToLLVM", "retype_block_args"]
