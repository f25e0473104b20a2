"""The one-table walk all `convert-*-to-llvm` passes share.

Each conversion is a dict from op class to a handler that emits llvm ops into an `LLVMBuilder`
and returns the llvm-typed replacement values. `apply_table` lowers a module with one table or
several merged; a result still used by ops outside the table is cast back to its original type
(an `unrealized_conversion_cast` that `reconcile-unrealized-casts` removes once every user is
converted), so conversions can run alone and in any order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.lowering.errors import located
from nnvm.lowering.to_llvm.llvm_builder import ConversionState, LLVMBuilder
from nnvm.support.errors import UserError

Handler = Callable[[Operation, LLVMBuilder], Sequence[SSAValue] | None]
"""Emit the replacement of an op; return its llvm-typed results, or None to leave it alone."""


def lower_op(op: Operation, handler: Handler, state: ConversionState) -> list[Operation] | None:
    """Insert what `handler` emits for `op` before it and record, in `state.lowered`, the llvm
    value that stands for each of its results (a result whose type does not change is replaced
    at once). `op` itself stays until `apply_table` erases it; returns the new ops, or None
    when the handler left the op alone."""
    b = LLVMBuilder(state, op.parent_block())
    try:
        results = handler(op, b)
    except UserError as e:
        raise located(op, e) from None
    if results is None:
        return None
    assert len(results) == len(op.results), f"{op.name}: wrong number of results"
    for new_op in b.ops:
        new_op.location = op.location
    Rewriter.insert_op(b.ops, InsertPoint.before(op))
    for new, old in zip(results, op.results, strict=True):
        if new.name_hint is None and not isinstance(new.owner, Block):
            new.name_hint = old.name_hint
        if new.type == old.type:
            old.replace_all_uses_with(new)
        else:
            state.lowered[old] = new
    return b.ops


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
    """Lower every op of the module that has a handler, once each, in one walk.

    No pattern driver (a conversion needs no worklist, fixpoint or rewrite listeners) and no
    casts between converted ops: a handler's `b.to_llvm(operand)` finds the llvm value that
    stands for an already lowered operand in the walk's map. The replaced ops are erased at the
    end; only their results that ops outside the table still use get a cast back to the old
    type (which `reconcile-unrealized-casts` removes once those are lowered too). Ops a handler
    emits are lowered too when the table has them."""
    state = ConversionState()
    replaced: list[Operation] = []
    pending = deque(op for op in module.walk() if type(op) in table)
    while pending:  # in walk order: a value's definition is lowered before its uses
        op = pending.popleft()
        new_ops = lower_op(op, table[type(op)], state)
        if new_ops is None:
            continue
        replaced.append(op)
        pending.extendleft(reversed([o for o in new_ops if type(o) in table]))
    for op in replaced:  # uses among replaced ops go first: they need no cast
        op.operands = ()
    for op in reversed(replaced):
        for old in op.results:
            if old.uses:
                cast = UnrealizedConversionCastOp.get([state.lowered[old]], [old.type])
                Rewriter.insert_op(cast, InsertPoint.before(op))
                old.replace_all_uses_with(cast.results[0])
        Rewriter.erase_op(op)
