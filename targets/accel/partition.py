"""accel-partition: find the int8 layers the accelerator runs and make each one op.

nnvm.quantize (`requant="shift"`) writes every quantized conv2d / dense as a chain of graph ops:

    acc = cast<i32>(conv2d(cast<fA>(xq), cast<fA>(wq)))       xq int8, wq an int8 param
    yq  = cast<i8>(clip((acc + bias + rounding) >> shift, -128, 127))   bias optional

which is exactly what the accelerator's GEMM + ALU program computes. This pass matches that chain
backwards from the int8 cast and replaces it with one `accel.conv2d` / `accel.dense`
(graph_ops.py), when the layer fits the accelerator (`refusal`: groups 1, no dilation, a square
stride, symmetric padding of at most 15, tiles that fit the buffers); everything else, the
quantize and dequantize steps around it included, stays as it was and runs on the host. As in
TVM's BYOC partitioning, this is a graph pass the device adds to the build (AccelTarget's
`graph_passes`), run first so the chain is still whole; the fuser then keeps each accel op a
kernel of its own, which the target accepts. Statistics: offloaded, and refused with why."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.nnvm.base import shape_of
from nnvm.dialects.nnvm.binary import AddOp
from nnvm.dialects.nnvm.bitwise import BitShiftOp
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.elementwise import CastOp, ClipOp
from nnvm.dialects.nnvm.nn import DenseOp
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.support.pass_statistics import record_statistic
from nnvm.targets.accel.conv2d_program import refusal
from nnvm.targets.accel.dialect import i64_array
from nnvm.targets.accel.graph_ops import I8, I32, conv_layer
from nnvm.targets.accel.graph_ops import Conv2dOp as AccelConv2d
from nnvm.targets.accel.graph_ops import DenseOp as AccelDense
from nnvm.targets.accel.pass_options import AccelPass
from nnvm.targets.accel.tiling import Conv2dLayer


@dataclass
class Chain:
    """One matched layer: the product op, its int8 data and weight, the per-channel int32
    operands (None: no bias), the ops the accel op replaces, and the geometry."""

    product: Operation
    data: SSAValue
    weight: SSAValue
    bias: SSAValue | None
    rounding: SSAValue
    shift: SSAValue
    ops: list[Operation]
    layer: Conv2dLayer


def _only_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _owner(value: SSAValue, cls: type) -> Operation | None:
    op = value.owner
    return op if isinstance(op, cls) and _only_use(value) is not None else None


def _is_source(value: SSAValue) -> bool:
    return isinstance(value.owner, ParamOp | ConstantOp)


def _elem(value: SSAValue):
    t = value.type
    return t.element_type if isinstance(t, TensorType) else None


def _int_of(value: SSAValue, to: str, cls=CastOp) -> Operation | None:
    op = _owner(value, cls)
    return op if op is not None and op.attr("to") == to else None


def match(y: CastOp) -> Chain | str | None:
    """The chain ending at the int8 cast `y`, a reason it cannot be offloaded, or None when `y`
    ends no quantized layer."""
    if y.attr("to") != "int8":
        return None
    clip = _owner(y.operands[0], ClipOp)
    if clip is None or (clip.attr("min"), clip.attr("max")) != (-128.0, 127.0):
        return None
    shr = _owner(clip.operands[0], BitShiftOp)
    if shr is None or shr.attr("direction") != "right" or not _is_source(shr.operands[1]):
        return None
    rounded = _owner(shr.operands[0], AddOp)
    if rounded is None or not _is_source(rounded.operands[1]):
        return None
    biased = _owner(rounded.operands[0], AddOp)
    bias = None
    acc_value = rounded.operands[0]
    if biased is not None and _is_source(biased.operands[1]):
        bias, acc_value = biased.operands[1], biased.operands[0]
    acc = _int_of(acc_value, "int32")
    if acc is None:
        return None
    product = _owner(acc.operands[0], Conv2DOp) or _owner(acc.operands[0], DenseOp)
    if product is None:
        return None
    casts = [_owner(v, CastOp) for v in product.operands]
    if any(c is None for c in casts):
        return None
    data, weight = (c.operands[0] for c in casts)
    if _elem(data) != I8 or _elem(weight) != I8:
        return None
    per_channel = [shr.operands[1], rounded.operands[1], *([bias] if bias is not None else [])]
    if any(_elem(v) != I32 for v in per_channel):
        return None
    ops = [*casts, product, acc, *([biased] if bias is not None else []), rounded, shr, clip, y]
    if not isinstance(weight.owner, ParamOp):
        return "the weight is not a constant"
    layer = _layer(product)
    if isinstance(layer, str):
        return layer
    return Chain(product, data, weight, bias, rounded.operands[1], shr.operands[1], ops, layer)


def _layer(product: Operation) -> Conv2dLayer | str:
    if isinstance(product, DenseOp):
        xs, ws = shape_of(product.operands[0]), shape_of(product.operands[1])
        if len(xs) != 2:
            return f"dense over rank-{len(xs)} data"
        return Conv2dLayer.dense(xs[0], xs[1], ws[0])
    attr = product.attr
    if attr("groups") != 1:
        return f"groups={attr('groups')}"
    if tuple(attr("dilation")) != (1, 1):
        return f"dilation {list(attr('dilation'))}"
    if attr("data_layout") != "NCHW" or attr("kernel_layout") != "OIHW":
        return f"layout {attr('data_layout')}/{attr('kernel_layout')}"
    data, weight = product.operands
    return conv_layer(shape_of(data), shape_of(weight), attr("strides"), attr("padding"))


def offload(chain: Chain) -> Operation:
    """Replace the chain by its accel op; returns it."""
    y = chain.ops[-1]
    product = chain.product
    operands = [chain.data, chain.weight, [] if chain.bias is None else [chain.bias]]
    operands += [chain.rounding, chain.shift]
    if isinstance(product, Conv2DOp):
        props = {
            "strides": i64_array(product.attr("strides")),
            "padding": i64_array(product.attr("padding")),
        }
        new = AccelConv2d.build(
            operands=operands, result_types=[y.results[0].type], properties=props
        )
    else:
        new = AccelDense.build(operands=operands, result_types=[y.results[0].type])
    new.location = product.location
    Rewriter.insert_op(new, InsertPoint.before(y))
    y.results[0].replace_all_uses_with(new.results[0])
    for op in reversed(chain.ops):
        Rewriter.erase_op(op)
    return new


@dataclass(frozen=True)
class AccelPartition(AccelPass):
    """Make each quantized conv2d / dense the accelerator takes one accel op (see the module
    doc); options: config (an accel config JSON; default VTA's), virtual_threads (1 or 2: the
    tiles must fit that many buffer slots)."""

    name = "accel-partition"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cfg = self.accel_config()
        offloaded, refused = 0, {}
        for y in [o for o in op.walk() if isinstance(o, CastOp)]:
            found = match(y)
            if isinstance(found, Chain):
                found = refusal(cfg, found.layer, self.virtual_threads) or found
            if isinstance(found, str):
                refused[found] = refused.get(found, 0) + 1
            elif found is not None:
                offload(found)
                offloaded += 1
        record_statistic(op, self.name, "offloaded", offloaded, "int8 layers made accel ops")
        record_statistic(
            op, self.name, "refused", sum(refused.values()), "quantized layers left to the host"
        )
