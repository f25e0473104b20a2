"""IR helpers every room uses: finding a module's functions and naming their arguments."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnvm.support.errors import UserError


def find_function(module: ModuleOp, name: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise UserError(f"module has no function @{name}")


def argument_names(fn: func.FuncOp) -> list[str]:
    """Input names: the `nnvm.name` arg attribute when the frontend set one, else arg<k>."""
    names = []
    arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else None
    for k, arg in enumerate(fn.body.block.args):
        name = None
        if arg_attrs is not None:
            entry = arg_attrs[k].data.get("nnvm.name")
            if entry is not None:
                name = entry.data  # type: ignore[attr-defined]
        names.append(name or arg.name_hint or f"arg{k}")
    return names
