"""The one-table pattern all `convert-*-to-llvm` passes share.

Each conversion is a dict from op class to a handler that emits llvm ops into an `LLVMBuilder`
and returns the llvm-typed replacement values; the pattern casts them back to the original
types (an `unrealized_conversion_cast` that `reconcile-unrealized-casts` removes once every
user is converted), so conversions can run alone and in any order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from nnvm.lowering.errors import located
from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder
from nnvm.support.errors import UserError

Handler = Callable[[Operation, LLVMBuilder], Sequence[SSAValue] | None]
"""Emit the replacement of an op; return its llvm-typed results, or None to leave it alone."""


class TableLowering(RewritePattern):
    """Rewrites every op whose class has a handler in the table."""

    def __init__(self, table: dict[type[Operation], Handler]):
        self.table = table

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        handler = self.table.get(type(op))
        if handler is None:
            return
        b = LLVMBuilder()
        try:
            results = handler(op, b)
        except UserError as e:
            raise located(op, e) from None
        if results is None:
            return
        assert len(results) == len(op.results), f"{op.name}: wrong number of results"
        new_results = [b.from_llvm(r, old.type) for r, old in zip(results, op.results, strict=True)]
        for llvm_value, old in zip(results, op.results, strict=True):
            if llvm_value.name_hint is None and not isinstance(llvm_value.owner, Block):
                llvm_value.name_hint = old.name_hint
        replace_op(rewriter, op, b.ops, new_results)


def replace_op(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue],
) -> None:
    """Like `rewriter.replace`, but only the replacing values inherit the old result names
    (rewriter.replace names every new op after them, so a constant 8 prints as %x_1), and the
    new ops take the old op's source location for later diagnostics."""
    for new_op in new_ops:
        new_op.location = op.location
    for new, old in zip(new_results, op.results, strict=True):
        if new.name_hint is None and not isinstance(new.owner, Block):
            new.name_hint = old.name_hint
    rewriter.insert(list(new_ops), InsertPoint.before(op))
    for old, new in zip(op.results, new_results, strict=True):
        rewriter.replace_all_uses_with(old, new)
    rewriter.erase(op)


def apply_table(module: ModuleOp, table: dict[type[Operation], Handler]) -> None:
    """Run a table lowering over the whole module, once per op (no fixpoint needed)."""
    PatternRewriteWalker(TableLowering(table), apply_recursively=False).rewrite_module(module)
