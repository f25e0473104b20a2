"""`Symbol`: a lazily built graph expression, in the spirit of NNVM's symbol API.

A symbol is one output of a node (or a `Group` of outputs). Nodes are variables, constants or one
graph op with its inputs and properties; nothing is built until a module is asked for, so a
symbol carries no shapes until `infer_shape` or `to_module` is given them. Building walks the
expression once, emitting ops with `NNVMOp.make` (the op classes' own inference), so a shape or
attribute error names the symbol and the op it came from.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnvm.dialects.nnvm.base import NNVMOp, shape_of
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.support.errors import UserError
from nnvm.support.ir import argument_names

_counter = itertools.count()


class SymbolError(UserError):
    """A symbol that cannot be built: wrong arity, a bad attribute, shapes that do not fit."""


@dataclass(eq=False)
class _Node:
    kind: str
    """'var', 'const', 'scalar' (a Python number taking its partner's dtype), 'op', 'grad'."""
    name: str
    op: type[NNVMOp] | None = None
    inputs: list[Symbol] = field(default_factory=list)
    props: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    value: Any = None
    num_outputs: int = 1


class Symbol:
    """One output (`index`) of a node; arithmetic operators build `nnvm.add`, `nnvm.mul`, ..."""

    def __init__(self, node: _Node, index: int = 0):
        self._node = node
        self._index = index

    # -- what it is ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def outputs(self) -> list[Symbol]:
        return [self]

    def __repr__(self) -> str:
        what = self._node.op.name if self._node.op else self._node.kind
        return f"<Symbol {self.name} ({what})>"

    def __iter__(self) -> Iterator[Symbol]:
        n = self._node
        if n.num_outputs == 1:
            raise TypeError(f"symbol {self.name} has one output; it is not iterable")
        return iter(Symbol(n, k) for k in range(n.num_outputs))

    def __getitem__(self, k: int) -> Symbol:
        n = self._node
        if not -n.num_outputs <= k < n.num_outputs:
            raise IndexError(f"symbol {self.name} has {n.num_outputs} outputs, not #{k}")
        return Symbol(n, k % n.num_outputs)

    def list_arguments(self) -> list[str]:
        """Variable names, in the order the graph first uses them."""
        return [n.name for n in _walk(self.outputs) if n.kind == "var"]

    def list_outputs(self) -> list[str]:
        return [
            f"{s.name}_output" if s._node.num_outputs == 1 else f"{s.name}_output{s._index}"
            for s in self.outputs
        ]

    def infer_shape(
        self, **shapes: Sequence[int]
    ) -> tuple[dict[str, tuple[int, ...]], list[tuple[int, ...]]]:
        """(argument shapes, output shapes) from the shapes of some variables (the rest need a
        shape from `Variable(shape=...)`)."""
        module, _ = self.to_module(shapes=shapes)
        fn = module.ops.first
        assert isinstance(fn, func.FuncOp)
        args: dict[str, tuple[int, ...]] = {}
        for op in fn.body.block.ops:
            if isinstance(op, ParamOp):
                args[op.key] = shape_of(op.result)
        for name, arg in zip(argument_names(fn), fn.body.block.args, strict=True):
            args[name] = shape_of(arg)
        order = self.list_arguments()
        outs = [tuple(t.get_shape()) for t in fn.function_type.outputs.data]
        return {k: args[k] for k in order if k in args}, outs

    def to_module(
        self,
        shapes: Mapping[str, Sequence[int]] | None = None,
        dtypes: Mapping[str, str] | None = None,
        params: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[ModuleOp, dict[str, np.ndarray]]:
        """The graph-level module `build()` takes, and its params: a variable with a value in
        `params` becomes `nnvm.param`, the others arguments of @main (in `list_arguments`
        order). Shapes and dtypes come from the variables, then from these mappings."""
        from nnvm.symbol.module_builder import build_module

        return build_module(self.outputs, shapes or {}, dtypes or {}, dict(params or {}))

    # -- operators ----------------------------------------------------------------------------

    def _binary(self, name: str, other: object, swap: bool = False) -> Symbol:
        from nnvm.symbol import ops

        rhs = as_symbol(other)
        a, b = (rhs, self) if swap else (self, rhs)
        return ops.make_op(name, [a, b], {}, None)

    def __add__(self, other: object) -> Symbol:
        return self._binary("nnvm.add", other)

    def __radd__(self, other: object) -> Symbol:
        return self._binary("nnvm.add", other, swap=True)

    def __sub__(self, other: object) -> Symbol:
        return self._binary("nnvm.sub", other)

    def __rsub__(self, other: object) -> Symbol:
        return self._binary("nnvm.sub", other, swap=True)

    def __mul__(self, other: object) -> Symbol:
        return self._binary("nnvm.mul", other)

    def __rmul__(self, other: object) -> Symbol:
        return self._binary("nnvm.mul", other, swap=True)

    def __truediv__(self, other: object) -> Symbol:
        return self._binary("nnvm.div", other)

    def __rtruediv__(self, other: object) -> Symbol:
        return self._binary("nnvm.div", other, swap=True)

    def __pow__(self, other: object) -> Symbol:
        return self._binary("nnvm.pow", other)

    def __matmul__(self, other: object) -> Symbol:
        return self._binary("nnvm.matmul", other)

    def __neg__(self) -> Symbol:
        from nnvm.symbol import ops

        return ops.make_op("nnvm.neg", [self], {}, None)


class Group(Symbol):
    """Several outputs as one symbol (`sym.Group([a, b])`): a module with several results."""

    def __init__(self, symbols: Iterable[Symbol]):
        flat: list[Symbol] = []
        for s in symbols:
            if not isinstance(s, Symbol):
                raise SymbolError(f"Group takes symbols, got {type(s).__name__}")
            flat.extend(s.outputs)
        if not flat:
            raise SymbolError("Group needs at least one symbol")
        self._outputs = flat
        super().__init__(flat[0]._node, flat[0]._index)

    @property
    def outputs(self) -> list[Symbol]:
        return list(self._outputs)

    @property
    def name(self) -> str:
        return "group(" + ", ".join(s.name for s in self._outputs) + ")"

    def __iter__(self) -> Iterator[Symbol]:
        return iter(self._outputs)

    def __getitem__(self, k: int) -> Symbol:
        return self._outputs[k]


def _fresh(prefix: str) -> str:
    return f"{prefix}{next(_counter)}"


def Variable(  # noqa: N802 - NNVM's spelling
    name: str, shape: Sequence[int] | None = None, dtype: str = "float32"
) -> Symbol:
    """A named graph input or param (which one is decided by `to_module(params=...)`)."""
    if not isinstance(name, str) or not name:
        raise SymbolError("a Variable needs a non-empty name")
    try:
        np.dtype(dtype)
    except TypeError:
        raise SymbolError(f"Variable {name!r}: unknown dtype {dtype!r}") from None
    dims = None if shape is None else tuple(int(d) for d in shape)
    if dims is not None and any(d < 0 for d in dims):
        raise SymbolError(f"Variable {name!r}: shape {list(dims)} has a negative extent")
    return Symbol(_Node("var", name, shape=dims, dtype=str(np.dtype(dtype))))


def const(value: object, dtype: str | None = None, name: str | None = None) -> Symbol:
    """An inline constant (an array or a number)."""
    array = np.asarray(value, dtype=dtype)
    if array.dtype == np.float64 and dtype is None:
        array = array.astype(np.float32)
    return Symbol(_Node("const", name or _fresh("const"), value=array))


def as_symbol(value: object) -> Symbol:
    """A symbol as is; a Python number as a scalar that takes its partner's dtype."""
    if isinstance(value, Symbol):
        return value
    if isinstance(value, int | float | np.number) and not isinstance(value, bool):
        return Symbol(_Node("scalar", _fresh("scalar"), value=float(value)))
    if isinstance(value, np.ndarray):
        return const(value)
    raise SymbolError(f"cannot use a {type(value).__name__} as a symbol")


def _walk(outputs: Sequence[Symbol]) -> list[_Node]:
    """Nodes in dependency order (inputs first), each once."""
    seen: set[int] = set()
    order: list[_Node] = []
    stack: list[tuple[_Node, bool]] = [(s._node, False) for s in reversed(outputs)]
    while stack:
        node, done = stack.pop()
        if done:
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
            continue
        if id(node) in seen:
            continue
        stack.append((node, True))
        stack.extend((i._node, False) for i in reversed(node.inputs) if id(i._node) not in seen)
    return order
