"""`multiply-by-reciprocal`: `x / c` -> `x * (1 / c)` for a float constant c (scalars, splats,
dense vectors and vector.broadcasts of a scalar constant).

A division is the one vector instruction the core does not pipeline: with AVX-512 a 16-lane
`vdivps` occupies the divider for about 8 cycles, a multiply half a cycle. Exports divide by
constants everywhere: GELU's `x / sqrt(2)` ahead of its erf, attention's `q k^T / sqrt(d)`,
normalizations by a fixed count. The reciprocal is folded here, once, in the element type, so
the result is rounded twice (1 / c, then the product): at most 1.5 ulp from the quotient, and
exact where c is a power of two. This is what LLVM's `arcp` flag licenses; onnxruntime's GELU
multiplies by 1 / sqrt(2) the same way.

Left alone: a divisor that is zero, infinite, NaN or subnormal, or whose reciprocal is not a
finite normal number (the product could overflow or lose bits the quotient keeps).

ConvNeXt-T's first MLP projection (3136 x 96 . 96 x 384 + GELU; the MatMul and bias alone take
1.53 ms), whose GELU epilogue divided twice per vector (x / sqrt(2) and erf's 1 / |x|): 2.24 ->
2.12 ms alone, 2.03 with erf's 16-lane form (convert-math-to-llvm).
"""

from __future__ import annotations

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, ModuleOp, VectorType
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.dtypes import is_float, numpy_dtype_of
from nnvm.passes.fold_reciprocal_multiply import erase_if_unused, float_constants


def reciprocals(values: list[float], element: Attribute) -> list[float] | None:
    """1 / v for each v, rounded to `element`'s precision; None unless every v and 1 / v is a
    finite normal number there."""
    if not is_float(element):
        return None
    dtype = numpy_dtype_of(element).type
    v = np.asarray(values, dtype=dtype)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = (dtype(1) / v).astype(dtype)
    smallest = np.finfo(dtype).tiny
    for a in (v, r):
        if not (np.isfinite(a).all() and (np.abs(a) >= smallest).all()):
            return None
    return [float(x) for x in r]


class MultiplyByReciprocal(RewritePattern):
    """divf(x, c) -> mulf(x, 1 / c) for a constant c whose reciprocal is a normal float."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivfOp, rewriter: PatternRewriter) -> None:
        values = float_constants(op.rhs)
        t = op.result.type
        element = t.element_type if isinstance(t, VectorType) else t
        inverse = None if values is None else reciprocals(values, element)
        if inverse is None:
            return
        if isinstance(t, VectorType):
            if len(inverse) == 1:  # a scalar, or a broadcast of one
                inverse = inverse * t.element_count()
            elif not isinstance(op.rhs.owner, arith.ConstantOp):
                return  # a broadcast of a vector
            attr = DenseIntOrFPElementsAttr.from_list(t, inverse)
        else:
            attr = FloatAttr(inverse[0], element)
        constant = arith.ConstantOp(attr, t)
        product = arith.MulfOp(op.lhs, constant.result, flags=op.fastmath)
        divisor = op.rhs
        rewriter.replace(op, [constant, product], [product.result])
        erase_if_unused(divisor, rewriter)


class MultiplyByReciprocalPass(ModulePass):
    """`multiply-by-reciprocal`: a float divided by a constant is multiplied by the constant's
    reciprocal (see the module docstring)."""

    name = "multiply-by-reciprocal"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MultiplyByReciprocal(), apply_recursively=False).rewrite_module(op)
