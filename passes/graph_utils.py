"""Small predicates shared by the graph passes (fold-scale-axis, alter-layout, fold-constants).

They answer questions about the dataflow around a value without changing anything, so every
pass that asks "can this be precomputed?" gets the same answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.traits import ConstantLike

from nnvm.dialects.nnvm.base import NNVMOp, attribute_from_python
from nnvm.dialects.nnvm.sources import ParamOp


def is_source(op: Operation) -> bool:
    """A param or an inline constant: an op whose value is known at compile time."""
    return isinstance(op, ParamOp) or op.has_trait(ConstantLike, value_if_unregistered=False)


def is_constant_like(value: SSAValue, cache: dict[SSAValue, bool] | None = None) -> bool:
    """True when `value` is computed only from `nnvm.param`/`nnvm.constant` values through graph
    ops (transitively), so fold-constants can precompute it; block arguments and ops that are
    not graph ops (calls, other dialects) make it runtime data.

    `cache` may be shared between calls of one pass to keep repeated queries linear."""
    memo: dict[SSAValue, bool] = {} if cache is None else cache
    stack: list[SSAValue] = [value]
    while stack:
        v = stack[-1]
        if v in memo:
            stack.pop()
            continue
        if not isinstance(v, OpResult):
            memo[v] = False
            stack.pop()
            continue
        op = v.op
        if is_source(op):
            memo[v] = True
            stack.pop()
            continue
        if not isinstance(op, NNVMOp) or not op.operands or op.regions:
            memo[v] = False
            stack.pop()
            continue
        pending = [o for o in op.operands if o not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[v] = all(memo[o] for o in op.operands)
        stack.pop()
    return memo[value]


def single_use(value: SSAValue) -> bool:
    """The value feeds exactly one operand slot, so rewriting its producer changes no one else."""
    return value.has_one_use()


def erase_if_dead(op: Operation, rewriter: PatternRewriter | None = None) -> None:
    """Erase `op` once a rewrite has left its results unused (it is a pure graph op); inside a
    pattern pass the rewriter, so the walker forgets the op too."""
    if op.parent is None or any(r.uses for r in op.results):
        return
    if rewriter is not None:
        rewriter.erase(op)
    else:
        op.detach()
        op.erase()


def rebuild(op: NNVMOp, operands: Sequence[SSAValue], **overrides: Any) -> NNVMOp:
    """A copy of `op` (same class, properties, attributes and location) on new operands, with
    some properties replaced (Python values or attributes) and result types inferred afresh:
    how a pass moves an op to new inputs, e.g. blocked ones, without knowing its properties."""
    op_def = type(op).get_irdl_definition()
    properties = dict(op.properties)
    for key, value in overrides.items():
        prop = op_def.properties.get(key)
        if prop is None:
            raise TypeError(f"{op.name} has no property {key!r}")
        properties[key] = attribute_from_python(value, prop.default_value)
    probe = type(op).create(operands=list(operands), result_types=[], properties=properties)
    types = probe.infer_result_types([o.type for o in operands])  # type: ignore[arg-type]
    probe.drop_all_references()
    new = type(op).create(
        operands=list(operands),
        result_types=types,
        properties=properties,
        attributes=dict(op.attributes),
    )
    new.location = op.location
    return new
