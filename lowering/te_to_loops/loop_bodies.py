"""The statement at the bottom of a loop nest: the formula's value stored to the stage's buffer,
or a reduction's accumulator initialised or updated (a sum of products as fused multiply-adds)."""

from __future__ import annotations

from xdsl.dialects import math as xmath
from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te import exprs
from nnvm.dialects.te.stage_tree import IterVar
from nnvm.lowering.te_to_loops.emitter import Nest, Scope, Val
from nnvm.lowering.te_to_loops.formulas import FormulaEval
from nnvm.lowering.te_to_loops.index_math import known_multiple
from nnvm.lowering.te_to_loops.vectorize import VectorEmitter


def real_indices(gen: VectorEmitter, nest: Nest, vals: dict[IterVar, Val]) -> list[Val]:
    """The tensor indices of the stage's spatial axes (a region computed at a consumer's loop
    starts at its offsets)."""
    real = []
    for d, v in enumerate(nest.stage.spatial_root):
        x, off = vals[v], nest.offsets[d]
        real.append(x if off is None else gen.iadd(x, Val(off, mult=known_multiple(off))))
    return real


def buffer_indices(
    gen: VectorEmitter, nest: Nest, vals: dict[IterVar, Val]
) -> tuple[list[Val], list[Val]]:
    """(real indices of the spatial axes, indices into the stage's buffer)."""
    real = real_indices(gen, nest, vals)
    buf = [
        r if voff is None else gen.isub(r, Val(voff, mult=known_multiple(voff)))
        for r, voff in zip(real, nest.view.offsets, strict=True)
    ]
    return real, buf


def emit_init(gen: VectorEmitter, nest: Nest, vals: dict[IterVar, Val]) -> None:
    """Set the accumulator to the reduction's identity."""
    _, buf = buffer_indices(gen, nest, vals)
    kind = nest.compute.reduce_kind
    assert kind is not None
    ident = gen.add1(exprs.constant(exprs.identity_value(kind, nest.elt), nest.elt))
    gen.store(nest.view.buffer, buf, Val(ident))


def emit_update(gen: VectorEmitter, nest: Nest, scope: Scope, vals: dict[IterVar, Val]) -> None:
    """Store the formula's value, or combine it into the accumulator."""
    real, buf = buffer_indices(gen, nest, vals)
    args = real + [vals[v] for v in nest.stage.reduce_root]
    formula = FormulaEval(gen, nest.compute, args, scope)
    kind = nest.compute.reduce_kind
    factors = formula.product_factors() if kind == "sum" else None
    if factors is not None:
        # acc + a * b as one fused multiply-add: LLVM does not contract fmul + fadd
        acc = gen.load(nest.view.buffer, buf)
        value = gen.data_op(_fma, [*factors, acc])
        gen.store(nest.view.buffer, buf, value)
        return
    value = formula.result()
    if kind is not None:
        acc = gen.load(nest.view.buffer, buf)
        value = gen.data_op(lambda a, b: exprs.combine(kind, a, b), [acc, value])
    gen.store(nest.view.buffer, buf, value)


def _fma(a: SSAValue, b: SSAValue, c: SSAValue) -> Operation:
    """a * b + c, on vectors or scalars."""
    if isinstance(a.type, VectorType):
        return vector.FMAOp(a, b, c)
    return xmath.FmaOp(a, b, c)
