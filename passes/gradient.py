"""gradient: reverse-mode differentiation of a graph function.

`@main` returns a scalar loss (result `loss`, 0 by default). The pass appends the backward graph
after the forward one and returns, after the original results, the gradient of the loss with
respect to each `wrt` leaf: params by name (`nnvm.param "w"`) or function arguments by name;
by default every floating-point param. The gradient results are named `<leaf>.grad`.

Each op class owns its vector-Jacobian product (`NNVMOp.vjp`, contract in
nnvm.dialects.nnvm.autodiff); this pass only walks the ops that lie between a leaf and the loss
in reverse order, hands each its results' cotangents, and sums the cotangents of values used more
than once. Only floating-point values carry cotangents: indices, predicates and integer tensors
stop the walk. Every op on a path to the loss whose class has no VJP is reported, by name, in one
error before anything is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from nnvm.dialects.nnvm import ALL_OPS
from nnvm.dialects.nnvm.autodiff import RECOMPUTE, NoGradient
from nnvm.dialects.nnvm.base import NNVMOp
from nnvm.dialects.nnvm.dtypes import is_float, numpy_dtype_of
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.support.ir import argument_names, find_function
from nnvm.support.pass_statistics import record_statistic

_OPS: dict[str, type[NNVMOp]] = {cls.name: cls for cls in ALL_OPS}


def _is_float_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and is_float(v.type.element_type)


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


class GraphBuilder:
    """Emits graph ops before `anchor` (the VJPBuilder the op classes write their products
    against; the training step's optimizers use it too)."""

    def __init__(self, block: Block, anchor: Operation):
        self.block = block
        self.anchor = anchor
        self.emitted = 0
        self._needs: Sequence[bool] = ()

    def _insert(self, op: Operation) -> Operation:
        self.block.insert_op_before(op, self.anchor)
        self.emitted += 1
        return op

    def ops(self, name: str, *operands: SSAValue, **props: object) -> Sequence[SSAValue]:
        cls = _OPS.get(name if name.startswith("nnvm.") else f"nnvm.{name}")
        if cls is None:
            raise NoGradient(f"a VJP asked for an unknown op {name!r}")
        return self._insert(cls.make(*operands, **props)).results

    def op(self, name: str, *operands: SSAValue, **props: object) -> SSAValue:
        if name in ("reshape", "broadcast_to") and _shape(operands[0]) == tuple(props["shape"]):
            return operands[0]  # a no-op: emit nothing
        return self.ops(name, *operands, **props)[0]

    def constant(self, value: object, like: SSAValue) -> SSAValue:
        dtype = numpy_dtype_of(like.type.element_type)  # type: ignore[attr-defined]
        return self._insert(ConstantOp(np.asarray(value, dtype=dtype))).results[0]

    def scalar(self, value: float, like: SSAValue) -> SSAValue:
        return self.constant(np.asarray(value), like)

    def zeros(self, like: SSAValue) -> SSAValue:
        return self.constant(np.zeros(_shape(like)), like)

    def sum_to(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        have, want = _shape(value), tuple(shape)
        if have == want:
            return value
        lead = len(have) - len(want)
        if lead < 0:
            raise NoGradient(f"cannot sum a {list(have)} cotangent to the larger {list(want)}")
        axes = list(range(lead)) + [
            lead + k for k, d in enumerate(want) if d == 1 and have[lead + k] != 1
        ]
        out = self.op("sum", value, axes=axes, keepdims=False) if axes else value
        return out if _shape(out) == want else self.op("reshape", out, shape=list(want))

    def needs(self, operand: int) -> bool:
        return self._needs[operand]


@dataclass(frozen=True)
class Gradient:
    """What `differentiate` added: the names of the gradient results, in order."""

    leaves: tuple[str, ...]
    backward_ops: int


def _leaves(fn: func.FuncOp, wrt: Sequence[str] | None) -> dict[str, SSAValue]:
    params = {op.key: op.result for op in fn.body.block.ops if isinstance(op, ParamOp)}
    args = dict(zip(argument_names(fn), fn.body.block.args, strict=True))
    if wrt is None:
        return {k: v for k, v in params.items() if _is_float_tensor(v)}
    out: dict[str, SSAValue] = {}
    for name in wrt:
        value = params.get(name, args.get(name))
        if value is None:
            known = ", ".join(sorted({*params, *args})) or "none"
            raise UserError(f"gradient: no param or argument named {name!r} (known: {known})")
        if not _is_float_tensor(value):
            raise UserError(f"gradient: {name!r} is {value.type}, not a floating-point tensor")
        out[name] = value
    return out


def _segments(
    path: list[Operation], checkpoint: int
) -> tuple[dict[Operation, int], list[list[Operation]]]:
    """The forward ops of the path in `checkpoint` runs of about equal length (0: none; -1:
    about sqrt(n) runs, the sublinear schedule). Only the last run keeps its activations."""
    forward = [op for op in reversed(path) if not isinstance(op, ParamOp)]
    n = len(forward)
    k = int(round(np.sqrt(n))) if checkpoint < 0 else checkpoint
    if k <= 1 or n < 2:
        return {}, []
    k = min(k, n)
    bounds = [round(i * n / k) for i in range(k + 1)]
    segments = [forward[bounds[i] : bounds[i + 1]] for i in range(k)]
    return {op: j for j, seg in enumerate(segments) for op in seg}, segments


def _recompute(g: GraphBuilder, segment: list[Operation]) -> dict[Operation, Operation]:
    """Copies of a segment's ops, emitted at the backward pass's current point, reading the
    kept values before the segment and each other's results."""
    mapper: dict[SSAValue, SSAValue] = {}
    copies: dict[Operation, Operation] = {}
    for op in segment:
        copy = op.clone(value_mapper=mapper)
        copy.attributes[RECOMPUTE] = UnitAttr()
        g._insert(copy)
        for old, new in zip(op.results, copy.results, strict=True):
            mapper[old] = new
            new.name_hint = old.name_hint and f"{old.name_hint}_re"
        copies[op] = copy
    return copies


def differentiate(
    module: ModuleOp,
    wrt: Sequence[str] | None = None,
    loss: int = 0,
    function: str = "main",
    checkpoint: int = 0,
) -> Gradient:
    """Append d(loss)/d(leaf) for each leaf to `function`'s results (see the module doc).

    `checkpoint` > 1 splits the forward ops on the path into that many segments (-1: about
    sqrt(n)); the backward pass then recomputes each segment from the values kept at its
    start instead of keeping its activations (Chen et al. 2016: O(sqrt n) activation memory for
    one extra forward pass)."""
    fn = find_function(module, function)
    block = fn.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise UserError(f"gradient: @{function} does not end in func.return")
    if not 0 <= loss < len(ret.operands):
        raise UserError(f"gradient: @{function} has no result #{loss} to differentiate")
    target = ret.operands[loss]
    if not _is_float_tensor(target) or int(np.prod(_shape(target))) != 1:
        raise UserError(
            f"gradient: the loss (result #{loss}) must be a floating-point scalar, got {target.type}"
        )
    leaves = _leaves(fn, wrt)
    forward = [op for op in block.ops if op is not ret]

    # values that depend on a leaf (only floats carry cotangents)
    live: set[SSAValue] = set(leaves.values())
    for op in forward:
        if any(o in live for o in op.operands):
            live.update(r for r in op.results if _is_float_tensor(r))
    # ... and that the loss depends on
    reach: set[SSAValue] = {target} if target in live else set()
    path: list[Operation] = []
    for op in reversed(forward):
        if any(r in reach for r in op.results):
            path.append(op)
            reach.update(o for o in op.operands if o in live)
    lacking = [
        op
        for op in reversed(path)
        if not isinstance(op, ParamOp) and not (isinstance(op, NNVMOp) and op.has_gradient())
    ]
    if lacking:
        raise DiagnosticError(
            lacking[0],
            "gradient: no vector-Jacobian product for "
            + ", ".join(sorted({op.name for op in lacking}))
            + " (on the path from the differentiated leaves to the loss)",
        )

    g = GraphBuilder(block, ret)
    cotangent: dict[SSAValue, SSAValue] = {target: g.constant(np.ones(_shape(target)), target)}
    segment_of, segments = _segments(path, checkpoint)
    recomputed: dict[Operation, Operation] = {}
    for op in path:
        if isinstance(op, ParamOp):
            continue
        assert isinstance(op, NNVMOp)
        j = segment_of.get(op)
        if j is not None and j < len(segments) - 1 and op not in recomputed:
            recomputed.update(_recompute(g, segments[j]))
        acting = recomputed.get(op, op)  # the VJP reads the recomputed values
        grads = [cotangent.get(r) or g.zeros(r) for r in op.results]
        g._needs = [o in reach for o in op.operands]
        try:
            outs = acting.vjp(g, grads)  # type: ignore[attr-defined]
        except NoGradient as err:
            raise DiagnosticError(op, f"gradient: {err}") from None
        if len(outs) != len(op.operands):
            raise AssertionError(
                f"{op.name}.vjp returned {len(outs)} cotangents for {len(op.operands)} operands"
            )
        for operand, d, needed in zip(op.operands, outs, g._needs, strict=True):
            if d is None or not needed:
                continue
            if d.type != operand.type:
                raise AssertionError(
                    f"{op.name}.vjp gave a {d.type} cotangent for a {operand.type} operand"
                )
            prev = cotangent.get(operand)
            cotangent[operand] = d if prev is None else g.op("add", prev, d)

    grads = [cotangent.get(v) or g.zeros(v) for v in leaves.values()]
    new_ret = func.ReturnOp(*ret.operands, *grads)
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    names = [f"{name}.grad" for name in leaves]
    old_attrs = list(fn.res_attrs.data) if fn.res_attrs is not None else None
    if old_attrs is not None or names:
        base = old_attrs or [DictionaryAttr({}) for _ in ret.operands]
        fn.res_attrs = ArrayAttr(
            [*base, *(DictionaryAttr({"nnvm.name": StringAttr(n)}) for n in names)]
        )
    fn.function_type = func.FunctionType.from_lists(
        fn.function_type.inputs.data, [v.type for v in new_ret.operands]
    )
    record_statistic(module, "gradient", "backward-ops", g.emitted, "ops the backward pass added")
    return Gradient(tuple(names), g.emitted)


@dataclass(frozen=True)
class GradientPass(ModulePass):
    """Append the loss's gradients to @main's results (see the module doc)."""

    name = "gradient"

    wrt: str = ""
    """Comma-separated param or argument names; empty: every floating-point param."""
    loss: int = 0
    """Which result of @main is the loss."""
    checkpoint: int = 0
    """Recompute the forward pass in this many segments during backward (-1: about sqrt(n);
    0: keep every activation)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        wrt = [w.strip() for w in self.wrt.split(",") if w.strip()] or None
        differentiate(op, wrt, self.loss, checkpoint=self.checkpoint)
