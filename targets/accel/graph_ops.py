"""The accelerator's graph-level ops: one offloaded int8 layer each, what accel-partition
(partition.py) makes of a quantized conv2d or dense and its requantizer, and what the fuser
keeps as a kernel of its own (they are opaque to it).

    %y = accel.conv2d %x : tensor<1x64x56x56xi8>, %w : tensor<64x64x3x3xi8>
             bias %b : tensor<64x1x1xi32> rounding %r : tensor<64x1x1xi32>
             shift %s : tensor<64x1x1xi32> {strides = array<i64: 1, 1>,
             padding = array<i64: 1, 1, 1, 1>} -> tensor<1x64x56x56xi8>

computes clip(((conv2d(x, w) + bias) + rounding) >> shift, -128, 127) in int32, per output
channel (bias, which is optional, rounding and shift hold one int32 per channel, shaped
[C, 1, 1] or [C]):
nnvm.quantize's `requant="shift"` anchor, exactly. `accel.dense` is the same over x [N, K] and
w [M, K]. accel-lower-layers (lower_layers.py) turns each into an `accel.layer` holding its
program."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm.conv import conv_output_size
from nnvm.targets.accel.tiling import Conv2dLayer

I8 = IntegerType(8)
I32 = IntegerType(32)


def _tensor(value, name: str, op: str, element: Attribute, rank: int | None = None) -> list[int]:
    t = value.type
    if not isinstance(t, TensorType) or t.element_type != element:
        raise VerifyException(f"{op}: {name} must be a tensor of {element}, got {t}")
    shape = list(t.get_shape())
    if rank is not None and len(shape) != rank:
        raise VerifyException(f"{op}: {name} must have rank {rank}, got {shape}")
    return shape


def _per_channel(op: IRDLOperation, channels: int) -> None:
    for name in ("bias", "rounding", "shift"):
        if getattr(op, name) is None:
            continue
        shape = _tensor(getattr(op, name), name, op.name, I32)
        if math.prod(shape) != channels or any(d != 1 for d in shape[1:]):
            raise VerifyException(
                f"{op.name}: {name} holds one int32 per output channel ({channels}), got {shape}"
            )


class _LayerOp(IRDLOperation):
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    rounding = operand_def(TensorType)
    shift = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$data `:` type($data) `,` $weight `:` type($weight) "
        "(`bias` $bias^ `:` type($bias))? `rounding` $rounding `:` type($rounding) "
        "`shift` $shift `:` type($shift) attr-dict `->` type($result)"
    )


@irdl_op_definition
class Conv2dOp(_LayerOp):
    """`accel.conv2d`: int8 NCHW data, int8 OIHW weight (groups 1, no dilation)."""

    name = "accel.conv2d"
    strides = opt_prop_def(DenseArrayBase)
    padding = opt_prop_def(DenseArrayBase)

    def stride_pair(self) -> tuple[int, int]:
        return tuple(self.strides.get_values()) if self.strides else (1, 1)  # type: ignore[return-value]

    def pads(self) -> tuple[int, int, int, int]:
        """[top, left, bottom, right], as nnvm.conv2d has them."""
        return tuple(self.padding.get_values()) if self.padding else (0, 0, 0, 0)  # type: ignore[return-value]

    def verify_(self) -> None:
        n, c, h, w = _tensor(self.data, "data", self.name, I8, 4)
        o, i, kh, kw = _tensor(self.weight, "weight", self.name, I8, 4)
        if i != c:
            raise VerifyException(f"{self.name}: weight has {i} input channels, data {c}")
        strides, pads = self.stride_pair(), self.pads()
        if len(strides) != 2 or len(pads) != 4 or min(strides) < 1 or min(pads) < 0:
            raise VerifyException(f"{self.name}: bad strides {strides} or padding {pads}")
        _per_channel(self, o)
        want = [
            n,
            o,
            conv_output_size(h, kh, strides[0], pads[0], pads[2], 1),
            conv_output_size(w, kw, strides[1], pads[1], pads[3], 1),
        ]
        got = _tensor(self.result, "result", self.name, I8)
        if got != want:
            raise VerifyException(f"{self.name}: result must be {want}, got {got}")


@irdl_op_definition
class DenseOp(_LayerOp):
    """`accel.dense`: int8 data [N, K] times int8 weight [M, K] transposed."""

    name = "accel.dense"

    def verify_(self) -> None:
        n, k = _tensor(self.data, "data", self.name, I8, 2)
        m, k2 = _tensor(self.weight, "weight", self.name, I8, 2)
        if k2 != k:
            raise VerifyException(f"{self.name}: weight has K = {k2}, data K = {k}")
        _per_channel(self, m)
        got = _tensor(self.result, "result", self.name, I8)
        if got != [n, m]:
            raise VerifyException(f"{self.name}: result must be {[n, m]}, got {got}")


def conv_layer(data_shape, weight_shape, strides, pads) -> Conv2dLayer | str:
    """The geometry of an NCHW / OIHW conv with `strides` and `pads` ([top, left, bottom,
    right]), or why the accelerator's loops cannot express it (a stride per axis, uneven
    padding)."""
    (sh, sw), pads = strides, list(pads)
    if sh != sw:
        return f"strides {sh}x{sw} (the accelerator's loops take one stride)"
    if len(set(pads)) != 1:
        return f"padding {pads} (the accelerator pads evenly)"
    n, c, h, w = data_shape
    o, _, kh, kw = weight_shape
    return Conv2dLayer(n, c, h, w, o, kh, kw, sh, pads[0])


def layer_of(op: Conv2dOp | DenseOp) -> Conv2dLayer | str:
    """The op's layer geometry, or a reason the accelerator's loops cannot express it."""
    data, weight = op.data.type.get_shape(), op.weight.type.get_shape()
    if isinstance(op, DenseOp):
        return Conv2dLayer.dense(data[0], data[1], weight[0])
    return conv_layer(data, weight, op.stride_pair(), op.pads())
