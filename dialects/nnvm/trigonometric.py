"""The trigonometric and hyperbolic functions and their inverses, elementwise on floats."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.irdl import irdl_op_definition

from nnvm.dialects.nnvm.base import NNVMOp
from nnvm.dialects.nnvm.elementwise import UnaryElementwiseOp
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr

#: te unary function -> numpy function; each becomes the op `nnvm.<function>`.
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}


class _TrigOp(UnaryElementwiseOp):
    def _function(self) -> str:
        return self.name.removeprefix("nnvm.")

    def compute(self, x: np.ndarray) -> np.ndarray:
        return FUNCTIONS[self._function()](x)

    def te_scalar(self, x: Expr) -> Expr:
        return te.unary(self._function(), x)


def _define(func: str) -> type[NNVMOp]:
    namespace = {"name": f"nnvm.{func}", "__doc__": f"{func}(x), elementwise."}
    cls = type(f"{func.capitalize()}Op", (_TrigOp,), {**namespace, "__module__": __name__})
    return irdl_op_definition(cls)


TRIGONOMETRIC_OPS: list[type[NNVMOp]] = [_define(f) for f in FUNCTIONS]
globals().update({cls.__name__: cls for cls in TRIGONOMETRIC_OPS})
