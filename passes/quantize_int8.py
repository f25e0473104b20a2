"""quantize-int8: compute each conv2d / dense / matmul in int8 with int32 accumulation and
requantize its result to int8, from a Calibration of the float graph.

Each anchor (passes/quantize_calibration.py) becomes, in graph ops:

    xq  = cast<i8>(clip(round(x * (1/sx)), -127, 127))             per-tensor symmetric input
    acc = cast<i32>(conv2d(cast<fA>(xq), cast<fA>(wq))) + bq         wq: int8 per output channel
    yq  = requant(acc)                                               int8, output scale sy
    y   = cast<f32>(yq) * sy                                         the float graph goes on

(an anchor whose value is a graph result skips the int8 rounding: y = f32(acc) * sx * sw[c]).

requant="multiplier": clip((i64(acc) * m + 2^(n-1)) >> n) with an int32 m per channel (CPU);
requant="float": clip(round_half_even(f32(acc) * ratio)) (onnxruntime's semantics, no 64-bit
lanes; measured slower than "multiplier" on ResNet-18 so far: 12.8 vs 11.9 ms);
requant="shift": every scale is a power of two and clip((acc + 2^(n-1)) >> n) (no float,
the accelerator's ALU). fA is a float type in which the CPU's float kernels sum the int8
products exactly: float32 while 127 * sum|wq| of every output channel stays below 2^24 (else
float64), so acc is the int32 accumulation bit for bit. Everything else (pools, adds, softmax, layer norm) stays float;
skip_first keeps the first anchor float. Run after simplify-inference / fold-constants (so
batch norms sit in the weights); the weights come from the params store (--params).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.nnvm.base import EvalContext, NNVMOp, shape_of
from nnvm.dialects.nnvm.binary import AddOp, MulOp
from nnvm.dialects.nnvm.bitwise import BitShiftOp
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.dtypes import element_type_of
from nnvm.dialects.nnvm.elementwise import CastOp, ClipOp, RoundOp
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.passes import quantize_requant as rq
from nnvm.passes.graph_utils import erase_if_dead
from nnvm.passes.quantize_calibration import METHODS, Anchor, Calibration, find_anchors
from nnvm.support.errors import UserError
from nnvm.support.param_store import params_of
from nnvm.support.pass_statistics import record_statistic

REQUANT_MODES = ("multiplier", "float", "shift")


def constant_value(value: SSAValue, store: dict[str, np.ndarray]) -> np.ndarray:
    """The value of a constant-like SSA value, evaluated through the ops' own `evaluate`."""
    memo: dict[SSAValue, np.ndarray] = {}
    ctx = EvalContext(params=store)

    def walk(v: SSAValue) -> np.ndarray:
        if v in memo:
            return memo[v]
        assert isinstance(v, OpResult)
        op = v.op
        if isinstance(op, ParamOp):
            if op.key not in store:
                raise UserError(
                    f'quantize-int8 needs the weight "{op.key}": it is not in the params store '
                    "(nnvm-opt --params FILE)"
                )
            out = np.asarray(store[op.key])
        elif isinstance(op, ConstantOp):
            out = op.numpy()
        else:
            assert isinstance(op, NNVMOp)
            out = op.evaluate([walk(o) for o in op.operands], ctx)[v.index]
        memo[v] = out
        return out

    return walk(value)


class _Emitter:
    """Appends graph ops before an anchor; new params get fresh names in the store."""

    def __init__(self, before: Operation, store: dict[str, np.ndarray], prefix: str):
        self.point = InsertPoint.before(before)
        self.store = store
        self.prefix = prefix

    def op(self, new: Operation, hint: str) -> SSAValue:
        Rewriter.insert_op(new, self.point)
        new.results[0].name_hint = f"{self.prefix}_{hint}"
        return new.results[0]

    def param(self, what: str, value: np.ndarray) -> SSAValue:
        name, k = f"quant.{self.prefix}.{what}", 1
        while name in self.store:
            name, k = f"quant.{self.prefix}.{what}.{k}", k + 1
        value = np.ascontiguousarray(value)
        self.store[name] = value
        t = TensorType(element_type_of(value.dtype), value.shape)
        return self.op(ParamOp(name, t), what)

    def const(self, value: float, dtype: str, hint: str) -> SSAValue:
        return self.op(ConstantOp(np.array(value, dtype=dtype)), hint)

    def cast(self, v: SSAValue, to: str, hint: str) -> SSAValue:
        return self.op(CastOp.make(v, to=to), hint)


def _channel_shape(anchor: Anchor, channels: int) -> list[int]:
    """How a per-channel vector broadcasts against the anchor's result."""
    if isinstance(anchor.op, Conv2DOp):
        return [channels, 1, 1]
    return [channels]


def _quantize_input(e: _Emitter, x: SSAValue, scale: float, k: int) -> SSAValue:
    inv = e.const(1.0 / scale, "float32", f"inv_scale{k}")
    q = e.op(RoundOp.make(e.op(MulOp.make(x, inv), f"scaled{k}")), f"rounded{k}")
    q = e.op(ClipOp.make(q, min=-float(rq.QMAX), max=float(rq.QMAX)), f"clipped{k}")
    return e.cast(q, "int8", f"q{k}")


def _is_graph_result(value: SSAValue) -> bool:
    """Is the value returned by its function (and read by nothing else)?"""
    return bool(value.uses) and all(isinstance(u.operation, func.ReturnOp) for u in value.uses)


def _terms(anchor: Anchor) -> int:
    """How many products each output element of an activation x activation matmul sums."""
    return shape_of(anchor.op.operands[0])[-1]


def _requantize(
    e: _Emitter, acc: SSAValue, ratio: np.ndarray, vec: list[int], requant: str
) -> SSAValue:
    """acc * ratio (per channel, shaped `vec`), rounded to nearest, still unsaturated."""
    if requant == "float":
        t = e.cast(acc, "float32", "acc_f32")
        scale = e.param("requant_scale", ratio.astype(np.float32).reshape(vec))
        return e.op(RoundOp.make(e.op(MulOp.make(t, scale), "scaled")), "rounded")
    if requant == "multiplier":
        m, n = rq.fixed_point(ratio)
        t = e.cast(acc, "int64", "acc64")
        t = e.op(MulOp.make(t, e.param("multiplier", m.reshape(vec))), "scaled")
        t = e.op(AddOp.make(t, e.param("rounding", rq.rounding_half(n).reshape(vec))), "rounded")
        return e.op(
            BitShiftOp.make(t, e.param("shift", n.reshape(vec)), direction="right"), "shifted"
        )
    n = rq.power_of_two_shift(ratio)
    t = acc
    if np.any(n < 0):
        left = np.maximum(-n, 0).astype(np.int32).reshape(vec)
        t = e.op(BitShiftOp.make(t, e.param("left_shift", left), direction="left"), "widened")
    right = np.maximum(n, 0).astype(np.int32)
    half = rq.rounding_half(right).astype(np.int32).reshape(vec)
    t = e.op(AddOp.make(t, e.param("rounding", half)), "rounded")
    return e.op(
        BitShiftOp.make(t, e.param("shift", right.reshape(vec)), direction="right"), "shifted"
    )


def quantize_anchor(
    anchor: Anchor,
    cal: Calibration,
    method: str,
    requant: str,
    store: dict[str, np.ndarray],
) -> SSAValue:
    """Emit the int8 form of one anchor before it; returns the float value replacing its output."""
    pow2 = requant == "shift"
    prefix = anchor.key.replace(":", "")
    e = _Emitter(anchor.op, store, prefix)
    x_scales = [
        rq.activation_scale(cal.range_of(f"{anchor.key}/in{k}", method), pow2)
        for k in range(len(anchor.activations))
    ]
    y_scale = rq.activation_scale(cal.range_of(f"{anchor.key}/out", method), pow2)
    wq = None
    if anchor.weight is not None:
        w = constant_value(anchor.weight, store)
        w_scales = rq.weight_scales(w, anchor.weight_axis, pow2)
        wq = rq.quantize_weight(w, w_scales, anchor.weight_axis)
        acc_type = rq.accumulator_dtype(rq.product_bound(wq, anchor.weight_axis))
    else:  # a product of two activations: the second one's scale is the "weight" scale
        w_scales = np.array([x_scales[1]])
        acc_type = rq.accumulator_dtype(_terms(anchor) * rq.QMAX * rq.QMAX)
    in_scale = x_scales[0]
    pairs = enumerate(zip(anchor.activations, x_scales, strict=True))
    qs = [_quantize_input(e, x, s, k) for k, (x, s) in pairs]
    operands = [e.cast(q, acc_type, f"acc_in{k}") for k, q in enumerate(qs)]
    if wq is not None:
        operands.append(e.cast(e.param("weight", wq), acc_type, "acc_weight"))
    new = type(anchor.op).create(
        operands=operands,
        result_types=[TensorType(element_type_of(acc_type), shape_of(anchor.op.results[0]))],
        properties=dict(anchor.op.properties),
        attributes=dict(anchor.op.attributes),
    )
    new.location = anchor.op.location
    acc = e.cast(e.op(new, "acc_float"), "int32", "acc")
    channels = len(w_scales)
    vec = _channel_shape(anchor, channels) if anchor.weight is not None else []
    if anchor.bias is not None:
        b = constant_value(anchor.bias, store).astype(np.float64).reshape(-1)
        b = np.broadcast_to(b, (channels,)) if b.size == 1 else b
        bq = rq.quantize_bias(b, in_scale, w_scales)
        acc = e.op(AddOp.make(acc, e.param("bias", bq.reshape(vec))), "acc_biased")
    if _is_graph_result(anchor.output):
        # nothing int8 reads it: dequantize the int32 sums (an int8 rounding of, say, the
        # logits would cost more than all the layers before)
        scales = (in_scale * w_scales).astype(np.float32).reshape(vec)
        y = e.cast(acc, "float32", "acc_float32")
        return e.op(MulOp.make(y, e.param("acc_scale", scales)), "dequantized")
    t = _requantize(e, acc, in_scale * w_scales / y_scale, vec, requant)
    t = e.op(ClipOp.make(t, min=-128.0, max=127.0), "saturated")
    yq = e.cast(t, "int8", "out_q")
    y = e.cast(yq, "float32", "out_int")
    return e.op(MulOp.make(y, e.const(y_scale, "float32", "out_scale")), "dequantized")


def _erase_with_producers(op: Operation, erased: set[str]) -> None:
    """Erase a dead op, then whatever only it used (old float weights and biases); the names of
    erased params go into `erased`."""
    operands = list(op.operands)
    erase_if_dead(op)
    if op.parent is not None:
        return
    if isinstance(op, ParamOp):
        erased.add(op.key)
    for v in operands:
        if isinstance(v, OpResult) and v.op.parent is not None and not v.uses:
            _erase_with_producers(v.op, erased)


def quantize_module(
    module: ModuleOp,
    calibration: Calibration,
    method: str = "percentile",
    requant: str = "multiplier",
    skip_first: bool = True,
) -> int:
    """Rewrite the anchors of @main in place; their int8 weights replace the float ones in the
    params store. Returns how many were quantized."""
    if method not in METHODS:
        raise UserError(f"unknown calibration method {method!r}; use one of {list(METHODS)}")
    if requant not in REQUANT_MODES:
        raise UserError(f"unknown requant mode {requant!r}; use one of {list(REQUANT_MODES)}")
    anchors = find_anchors(module)
    if skip_first:
        anchors = anchors[1:]
    calibration.check(anchors)
    store = params_of(module)
    erased: set[str] = set()
    for a in anchors:
        y = quantize_anchor(a, calibration, method, requant, store)
        a.output.replace_all_uses_with(y)
        if a.bias_op is not None:
            _erase_with_producers(a.bias_op, erased)
        _erase_with_producers(a.op, erased)
    used = {op.key for op in module.walk() if isinstance(op, ParamOp)}
    for name in erased - used:
        store.pop(name, None)
    return len(anchors)


@dataclass(frozen=True)
class QuantizeInt8Pass(ModulePass):
    """Quantize conv2d / dense / matmul to int8 from a calibration file (nnvm.quantize writes
    one); options: method (minmax, percentile, kl), requant (multiplier, shift), skip_first."""

    name = "quantize-int8"

    calibration: str = ""
    """Path of the Calibration JSON (Calibration.save)."""
    method: str = "percentile"
    requant: str = "multiplier"
    skip_first: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.calibration:
            raise UserError("quantize-int8 needs calibration=FILE (a Calibration JSON)")
        cal = Calibration.load(self.calibration)
        count = quantize_module(op, cal, self.method, self.requant, self.skip_first)
        record_statistic(op, self.name, "quantized", count, "ops computed in int8")
