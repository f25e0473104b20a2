"""integer-dense: the int8 products quantize-int8 leaves in float become integer dense ops that
CPUs with byte dot products (x86 VNNI's vpdpbusd) run directly.

quantize-int8 writes each quantized dense as an exact float computation,

    acc = cast<i32>(dense(cast<fA>(xq), cast<fA>(wq)))          xq, wq int8; fA f32 or f64

which any target runs. This pass turns it into integer arithmetic with the same result:

    xu  = cast<ui8>(cast<i16>(xq) + 128)                        x + 128 as unsigned bytes
    acc = dense(xu, wq) - 128 * sum_k wq[n, k]                  int32 accumulation

Byte dot-product instructions multiply unsigned bytes by signed ones, so the activations are
offset by 128 and each output's accumulation starts 128 * (its weights' sum) lower (oneDNN's
compensation; fold-constants computes it from the weight). The offset fuses into the kernel
that quantizes x, the compensation into the dense's epilogue. Only dense with a constant
weight is rewritten (a matmul of two activations has no constant sum to subtract).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnvm.dialects.nnvm.base import is_static
from nnvm.dialects.nnvm.binary import AddOp, MulOp, SubOp
from nnvm.dialects.nnvm.elementwise import CastOp
from nnvm.dialects.nnvm.nn import DenseOp
from nnvm.dialects.nnvm.reduce import ReduceSumOp
from nnvm.dialects.nnvm.sources import ConstantOp
from nnvm.passes.graph_utils import is_constant_like
from nnvm.support.pass_statistics import record_statistic

ACTIVATION_OFFSET = 128
"""What makes a signed byte an unsigned one: x + 128 in [1, 255] for x in [-127, 127]."""


def _int8_source(v: SSAValue) -> SSAValue | None:
    """x when v = cast<float>(x) with x int8 (the exact float copy quantize-int8 makes)."""
    op = v.owner
    if not isinstance(op, CastOp):
        return None
    x = op.operands[0]
    return x if x.type.element_type == IntegerType(8) else None  # type: ignore[attr-defined]


@dataclass
class IntegerDense(RewritePattern):
    """cast<i32>(dense(cast<fA>(xq), cast<fA>(wq))) with wq constant -> dense(xu, wq) - comp."""

    stats: dict[str, int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter) -> None:
        if op.results[0].type.element_type != IntegerType(32):  # type: ignore[attr-defined]
            return
        dense = op.operands[0].owner
        if not isinstance(dense, DenseOp) or dense.attr("weight_lanes"):
            return
        if not dense.results[0].has_one_use() or not all(is_static(v.type) for v in dense.operands):
            return
        xq, wq = (_int8_source(v) for v in dense.operands)
        if xq is None or wq is None or not is_constant_like(wq):
            return
        new: list[Operation] = []
        base = op.results[0].name_hint or "acc"

        def add(o: Operation, hint: str) -> SSAValue:
            new.append(o)
            o.results[0].name_hint = f"{base}_{hint}" if hint else base
            return o.results[0]

        i16 = add(CastOp.make(xq, to="int16"), "in_i16")
        offset = add(ConstantOp(np.array(ACTIVATION_OFFSET, np.int16)), "offset")
        xu = add(CastOp.make(add(AddOp.make(i16, offset), "in_offset"), to="uint8"), "in_u8")
        acc = add(DenseOp.make(xu, wq), "u8s8")
        wsum = add(ReduceSumOp.make(add(CastOp.make(wq, to="int32"), "w_i32"), axes=[1]), "wsum")
        scale = add(ConstantOp(np.array(ACTIVATION_OFFSET, np.int32)), "offset_i32")
        comp = add(MulOp.make(wsum, scale), "compensation")
        add(SubOp.make(acc, comp), "")
        rewriter.replace(op, new)
        rewriter.erase(dense)
        self.stats["dense"] += 1


@dataclass(frozen=True)
class IntegerDensePass(ModulePass):
    """Exact-float int8 dense ops (quantize-int8's form) -> integer dense over unsigned
    activations and int8 weights, with the compensation of the unsigned offset."""

    name = "integer-dense"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = {"dense": 0}
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier([IntegerDense(stats)], dce_enabled=True)
        )
        walker.rewrite_module(op)
        record_statistic(
            op, self.name, "dense", stats["dense"], "int8 dense ops computed in integers"
        )
