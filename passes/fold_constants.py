"""fold-constants: evaluate at compile time every computation that depends only on params and
constants, and keep its result in the params store.

This is how transformed weights (a batch-norm scale folded into a conv weight, a kernel moved to
a blocked layout) are precomputed before fusion: the rewriting passes express the weight
arithmetic as ordinary graph ops, and this pass runs them once, through each op's own numpy
`evaluate`. A folded value with few elements becomes an inline `nnvm.constant`; a larger one a
new `nnvm.param` whose name says where it came from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.nnvm.base import EvalContext, NNVMOp
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.passes.graph_utils import is_constant_like, is_source
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.param_store import params_of
from nnvm.support.pass_statistics import record_statistic


def _short_name(op: Operation) -> str:
    return op.name.split(".", 1)[-1]


def _root_param_name(value: SSAValue, seen: set[SSAValue] | None = None) -> str | None:
    """The first param upstream of a value: names a folded weight after the weight it came from."""
    seen = set() if seen is None else seen
    if value in seen:
        return None
    seen.add(value)
    op = value.owner
    if isinstance(op, ParamOp):
        return op.key
    if isinstance(op, Operation):
        for operand in op.operands:
            name = _root_param_name(operand, seen)
            if name is not None:
                return name
    return None


def _unique(name: str, taken: dict[str, np.ndarray]) -> str:
    if name not in taken:
        return name
    k = 1
    while f"{name}.{k}" in taken:
        k += 1
    return f"{name}.{k}"


class _SameComputation:
    """Constant ops by what they compute: the op, its properties, attributes and result
    types, and its operands by the same key (a param by its name), so two packings of one
    weight match."""

    def __init__(self) -> None:
        self._keys: dict[SSAValue, object] = {}
        self._first: dict[object, Operation] = {}
        self._homes: dict[Operation, list[SSAValue]] = {}

    def _key(self, v: SSAValue) -> object:
        if v in self._keys:
            return self._keys[v]
        op = v.owner
        if isinstance(op, ParamOp):
            return ("param", op.key)
        return ("value", id(v))  # an inline constant, or a value not folded here

    def find(self, node: Operation) -> Operation | None:
        """An earlier op that computes what `node` does, else None (and `node` is recorded)."""
        key = (
            node.name,
            tuple(sorted((k, str(a)) for k, a in node.properties.items())),
            tuple(sorted((k, str(a)) for k, a in node.attributes.items())),
            tuple(str(r.type) for r in node.results),
            tuple(self._key(o) for o in node.operands),
        )
        first = self._first.setdefault(key, node)
        for k, res in enumerate(node.results):
            self._keys[res] = (key, k)
        return None if first is node else first

    def housed(self, node: Operation, values: list[SSAValue]) -> None:
        """`node`'s results now live in `values` (new params or constants)."""
        self._homes[node] = values

    def homes(self, earlier: Operation | None) -> list[SSAValue] | None:
        return None if earlier is None else self._homes.get(earlier)


def remove_dead_constant_ops(fn: func.FuncOp) -> None:
    """Erase the folded subgraphs: compile-time ops nobody uses any more (in reverse, so
    whole chains go)."""
    memo: dict[SSAValue, bool] = {}
    for op in reversed(list(fn.body.block.ops)):
        if (
            isinstance(op, NNVMOp)
            and op.results
            and all(not r.uses for r in op.results)
            and all(is_constant_like(r, memo) for r in op.results)
        ):
            Rewriter.erase_op(op)


def prune_params(module: ModuleOp) -> int:
    """Drop params the module no longer names; returns how many were dropped."""
    store = params_of(module)
    used = {op.key for op in module.walk() if isinstance(op, ParamOp)}
    stale = [k for k in store if k not in used]
    for k in stale:
        del store[k]
    return len(stale)


@dataclass(frozen=True)
class FoldConstantsPass(ModulePass):
    """Precompute everything that depends only on params and constants into the params store."""

    name = "fold-constants"

    inline_limit: int = 16
    """Folded values with at most this many elements stay inline as nnvm.constant."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        store = params_of(op)
        folded = created = 0
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            memo: dict[SSAValue, bool] = {}
            values: dict[SSAValue, np.ndarray] = {}
            eval_ctx = EvalContext(params=store)
            # the same op on the same params (a weight shared by several layers, packed for
            # each of its uses) is evaluated once and its result has one home
            same = _SameComputation()
            for node in list(fn.body.block.ops):
                if not isinstance(node, NNVMOp) or is_source(node) or not node.results:
                    continue
                if not all(is_constant_like(r, memo) for r in node.results):
                    continue
                earlier = same.find(node)
                if earlier is not None:
                    outs = [values[r] for r in earlier.results]
                else:
                    try:
                        outs = node.evaluate(
                            [self._value(o, values, eval_ctx) for o in node.operands], eval_ctx
                        )
                    except DiagnosticError:
                        raise
                    except Exception as err:
                        raise DiagnosticError(
                            node, f"cannot fold {node.name} at compile time: {err}"
                        ) from None
                    folded += 1
                for res, out in zip(node.results, outs, strict=True):
                    values[res] = out
                # Only values that leave the constant subgraph need a home of their own.
                if not any(
                    self._escapes(use.operation, memo) for r in node.results for use in r.uses
                ):
                    continue
                homes = same.homes(earlier)
                if homes is not None:  # the earlier one's param (it comes first: it dominates)
                    for res, home in zip(node.results, homes, strict=True):
                        res.replace_all_uses_with(home)
                    continue
                replacements: list[SSAValue] = []
                new_ops: list[Operation] = []
                for res, out in zip(node.results, outs, strict=True):
                    out = np.asarray(out, order="C")  # (ascontiguousarray makes 0-d 1-d)
                    if out.size <= self.inline_limit:
                        new = ConstantOp(out)
                    else:
                        root = _root_param_name(res) or "const"
                        key = _unique(f"{root}.{_short_name(node)}", store)
                        store[key] = out
                        new = ParamOp(key, res.type)  # type: ignore[arg-type]
                        created += 1
                    if new.results[0].type != res.type:
                        raise DiagnosticError(
                            node,
                            f"{node.name} evaluated to {out.dtype}{list(out.shape)}, "
                            f"but its type is {res.type}",
                        )
                    new_ops.append(new)
                    replacements.append(new.results[0])
                Rewriter.insert_op(new_ops, InsertPoint.before(node))
                same.housed(node, replacements)
                for res, new_value in zip(node.results, replacements, strict=True):
                    res.replace_all_uses_with(new_value)
            remove_dead_constant_ops(fn)
        dropped = prune_params(op)
        record_statistic(op, self.name, "folded-ops", folded, "ops evaluated at compile time")
        record_statistic(op, self.name, "new-params", created, "params created from folded values")
        record_statistic(op, self.name, "dropped-params", dropped, "params no longer used")

    @staticmethod
    def _escapes(user: Operation, memo: dict[SSAValue, bool]) -> bool:
        """A use outside the constant subgraph (runtime compute, a call, a return)."""
        if isinstance(user, NNVMOp) and user.results:
            return not all(is_constant_like(r, memo) for r in user.results)
        return True

    @staticmethod
    def _value(v: SSAValue, values: dict[SSAValue, np.ndarray], ctx: EvalContext) -> np.ndarray:
        if v not in values:
            owner = v.owner
            assert isinstance(owner, ParamOp | ConstantOp)
            values[v] = owner.evaluate([], ctx)[0]
        return values[v]
