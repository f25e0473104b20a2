"""integer-products: the int8 products quantize-int8 leaves in float become integer dense and
conv2d ops, which CPUs with byte dot products (x86 VNNI's vpdpbusd) run directly.

quantize-int8 writes each quantized dense or conv2d as an exact float computation,

    acc = cast<i32>(op(cast<fA>(xq), cast<fA>(wq)))             xq, wq int8; fA f32 or f64

which any target runs. This pass turns it into integer arithmetic with the same result:

    xu  = cast<ui8>(cast<i16>(xq) + 128)                        x + 128 as unsigned bytes
    acc = op(xu, wq) - 128 * sum(wq over each output's inputs)  int32 accumulation

Byte dot-product instructions multiply unsigned bytes by signed ones, so the activations are
offset by 128 and each output's accumulation starts 128 * (its weights' sum) lower (oneDNN's
compensation; fold-constants computes it from the weight). A conv pads with 128 (pad_value),
the byte that stands for 0, so the compensation holds at the image's edges too. The offset
fuses into the kernel that quantizes x, the compensation into the op's epilogue. Only ops
with a constant weight are rewritten (a matmul of two activations has no constant sum);
convs with groups keep the float form.
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
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.elementwise import CastOp
from nnvm.dialects.nnvm.nn import DenseOp
from nnvm.dialects.nnvm.reduce import ReduceSumOp
from nnvm.dialects.nnvm.sources import ConstantOp
from nnvm.dialects.nnvm.transform import ReshapeOp
from nnvm.passes.graph_utils import is_constant_like, rebuild
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
class IntegerProducts(RewritePattern):
    """cast<i32>(op(cast<fA>(xq), cast<fA>(wq))) with wq constant -> op(xu, wq) - comp, for
    op a dense or an ungrouped NCHW conv2d."""

    stats: dict[str, int]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter) -> None:
        if op.results[0].type.element_type != IntegerType(32):  # type: ignore[attr-defined]
            return
        product = op.operands[0].owner
        if isinstance(product, DenseOp):
            if product.attr("weight_lanes"):
                return
            kind, reduced, shape_tail = "dense", [1], []
        elif isinstance(product, Conv2DOp) and product.is_plain_nchw():
            kind, reduced, shape_tail = "conv2d", [1, 2, 3], [1, 1]
        else:
            return
        if not product.results[0].has_one_use():
            return
        if not all(is_static(v.type) for v in product.operands):
            return
        xq, wq = (_int8_source(v) for v in product.operands)
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
        padding = {"pad_value": ACTIVATION_OFFSET} if kind == "conv2d" else {}
        acc = add(rebuild(product, [xu, wq], **padding), "u8s8")
        w32 = add(CastOp.make(wq, to="int32"), "w_i32")
        wsum = add(ReduceSumOp.make(w32, axes=reduced), "wsum")
        if shape_tail:  # [O] -> [O, 1, 1]: broadcast along NCHW's channels
            o = product.operands[1].type.get_shape()[0]  # type: ignore[attr-defined]
            wsum = add(ReshapeOp.make(wsum, shape=[o, *shape_tail]), "wsum_c11")
        scale = add(ConstantOp(np.array(ACTIVATION_OFFSET, np.int32)), "offset_i32")
        comp = add(MulOp.make(wsum, scale), "compensation")
        add(SubOp.make(acc, comp), "")
        rewriter.replace(op, new)
        rewriter.erase(product)
        self.stats[kind] += 1


@dataclass(frozen=True)
class IntegerProductsPass(ModulePass):
    """Exact-float int8 dense and conv2d ops (quantize-int8's form) -> integer ops over
    unsigned activations and int8 weights, with the compensation of the unsigned offset."""

    name = "integer-products"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = {"dense": 0, "conv2d": 0}
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier([IntegerProducts(stats)], dce_enabled=True)
        )
        walker.rewrite_module(op)
        record_statistic(
            op, self.name, "dense", stats["dense"], "int8 dense ops computed in integers"
        )
        record_statistic(
            op, self.name, "conv2d", stats["conv2d"], "int8 conv2d ops computed in integers"
        )
