"""One builder function per graph op, generated from the op classes (not written per op):
`sym.conv2d(x, w, strides=[2, 2])`, `sym.relu(x)`, `sym.split(x, sizes=[2, 2])[1]`.

Each takes the op's operands as symbols (numbers become scalars of the partner's dtype), its
properties as keyword arguments, and an optional `name`. Arity and property names are checked
when the symbol is made; values and shapes when the module is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nnvm.dialects.nnvm import ALL_OPS
from nnvm.dialects.nnvm.base import NNVMOp
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.symbol.symbol import Symbol, SymbolError, _fresh, _Node, as_symbol

OP_CLASSES: dict[str, type[NNVMOp]] = {
    cls.name: cls for cls in ALL_OPS if cls not in (ParamOp, ConstantOp)
}


def _arity(cls: type[NNVMOp]) -> tuple[int, bool]:
    """(fixed operand count, whether a variadic operand takes any number more)."""
    defs = cls.get_irdl_definition().operands
    variadic = any(type(d).__name__ != "OperandDef" for _, d in defs)
    return len(defs) - (1 if variadic else 0), variadic


def _num_results(cls: type[NNVMOp], props: dict[str, Any]) -> int:
    defs = cls.get_irdl_definition().results
    if any(type(d).__name__ != "ResultDef" for _, d in defs):
        sizes = props.get("sizes")
        if sizes is None:
            raise SymbolError(f"{cls.name} needs `sizes` to know how many outputs it has")
        return len(sizes)
    return len(defs)


def make_op(
    op_name: str, inputs: Sequence[object], props: dict[str, Any], name: str | None
) -> Symbol:
    cls = OP_CLASSES[op_name]
    short = op_name.removeprefix("nnvm.")
    label = name or _fresh(short)
    fixed, variadic = _arity(cls)
    if len(inputs) != fixed and not (variadic and len(inputs) >= max(fixed, 1)):
        want = f"at least {max(fixed, 1)}" if variadic else str(fixed)
        raise SymbolError(f"symbol {label} ({op_name}) takes {want} inputs, got {len(inputs)}")
    known = cls.get_irdl_definition().properties
    for key in props:
        if key not in known:
            raise SymbolError(
                f"symbol {label} ({op_name}) has no attribute {key!r}; it has "
                + (", ".join(sorted(known)) or "none")
            )
    syms = [as_symbol(i) for i in inputs]
    for s in syms:
        if s._node.kind == "grad":
            raise SymbolError(f"symbol {label}: a gradient symbol can only be an output")
    node = _Node("op", label, op=cls, inputs=syms, props=dict(props))
    node.num_outputs = _num_results(cls, props)
    return Symbol(node)


def _builder(op_name: str) -> Callable[..., Symbol]:
    cls = OP_CLASSES[op_name]

    def build(*inputs: object, name: str | None = None, **props: Any) -> Symbol:
        return make_op(op_name, inputs, props, name)

    short = op_name.removeprefix("nnvm.")
    build.__name__ = build.__qualname__ = short
    props = ", ".join(cls.get_irdl_definition().properties) or "none"
    build.__doc__ = f"`{op_name}` as a symbol. Attributes: {props}.\n\n{cls.__doc__ or ''}"
    return build


BUILDERS: dict[str, Callable[..., Symbol]] = {
    name.removeprefix("nnvm."): _builder(name) for name in OP_CLASSES
}
