"""`nnvm.symbol`: build graphs in Python, in the spirit of NNVM's symbol API.

    import nnvm.symbol as sym
    x = sym.Variable("x", shape=(1, 8))
    w = sym.Variable("w")
    y = sym.relu(sym.dense(x, w)) * 2
    module, params = y.to_module(params={"w": np.ones((4, 8), "float32")})

There is one function per graph op, generated from the op classes (`sym.conv2d`, `sym.dense`,
`sym.softmax_cross_entropy`, ...), operator overloading, `Group`, `gradient`, and
`to_module`, whose result `nnvm.compiler.build` takes.
"""

from __future__ import annotations

from collections.abc import Sequence

from nnvm.symbol.ops import BUILDERS
from nnvm.symbol.symbol import Group, Symbol, SymbolError, Variable, _Node, const

globals().update(BUILDERS)


def gradient(loss: Symbol, wrt: Sequence[Symbol | str]) -> Group:
    """The gradients of the scalar `loss` with respect to variables (params or inputs), as a
    group to put in a module's outputs (with the loss or other outputs beside them)."""
    if not isinstance(loss, Symbol) or len(loss.outputs) != 1:
        raise SymbolError("gradient: the loss must be a single symbol")
    names = []
    for w in wrt:
        name = w if isinstance(w, str) else w.name
        if not isinstance(w, str) and w._node.kind != "var":
            raise SymbolError(f"gradient: {w.name} is not a Variable")
        names.append(name)
    if not names:
        raise SymbolError("gradient: wrt names no variable")
    return Group(Symbol(_Node("grad", f"{n}.grad", inputs=[loss], props={"wrt": n})) for n in names)


def __getattr__(name: str):
    raise AttributeError(f"nnvm.symbol has no op or function {name!r}")


__all__ = ["Group", "Symbol", "SymbolError", "Variable", "const", "gradient", *BUILDERS]
