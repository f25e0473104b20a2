"""What int8 quantization anchors on (conv2d, dense, matmul and the bias after them), the names
of the tensors it observes, and the Calibration record (per-tensor ranges, JSON) that links them.

Tensor names are positional, `conv2d:3/in0` or `dense:0/out` (the k-th op of that kind in @main,
its quantized input or its output after a folded bias), so they survive printing and parsing;
the record also keeps each anchor's signature to refuse a calibration made for another graph."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.nnvm.base import NNVMOp, is_static, normalize_axis, shape_of
from nnvm.dialects.nnvm.binary import AddOp
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.nn import BiasAddOp, DenseOp, MatmulOp
from nnvm.passes.fold_scale_axis import channel_extent
from nnvm.passes.graph_utils import is_constant_like
from nnvm.support.errors import UserError

METHODS = ("minmax", "percentile", "kl")


@dataclass
class Anchor:
    """One quantizable op: activations to quantize, an optional constant weight (per channel
    along `weight_axis`), an optional constant bias, and the value it yields."""

    key: str
    op: NNVMOp
    activation_slots: list[int]
    weight: SSAValue | None
    weight_axis: int
    bias_op: NNVMOp | None
    bias: SSAValue | None
    output: SSAValue

    @property
    def activations(self) -> list[SSAValue]:
        """The op's activation operands now (an earlier anchor's rewrite may have replaced the
        value that feeds it)."""
        return [self.op.operands[k] for k in self.activation_slots]

    def tensors(self) -> dict[str, SSAValue]:
        """The observed tensors by name: each quantized input, then the output."""
        named = {f"{self.key}/in{k}": v for k, v in enumerate(self.activations)}
        named[f"{self.key}/out"] = self.output
        return named

    def signature(self) -> str:
        types = ", ".join(str(o.type) for o in self.op.operands)
        return f"{self.op.name}({types})"


def _float32(value: SSAValue) -> bool:
    try:
        return is_static(value.type) and numpy_dtype_of(value.type.element_type).name == "float32"  # type: ignore[attr-defined]
    except TypeError:
        return False


def _bias_after(out: SSAValue, axis: int, cache: dict) -> tuple[NNVMOp | None, SSAValue | None]:
    """The constant per-channel bias added right after `out` (bias_add, or add of a constant
    that varies along `axis` alone), when `out` has no other use."""
    if not out.has_one_use():
        return None, None
    user = next(iter(out.uses)).operation
    rank = len(shape_of(out))
    if isinstance(user, BiasAddOp) and user.operands[0] is out:
        if normalize_axis(user.attr("axis"), rank) == axis and is_constant_like(
            user.operands[1], cache
        ):
            return user, user.operands[1]
        return None, None
    if isinstance(user, AddOp) and shape_of(user.result) == shape_of(out):
        other = user.rhs if user.lhs is out else user.lhs
        if other is out or not is_constant_like(other, cache):
            return None, None
        if channel_extent(shape_of(other), shape_of(out), axis) is not None:
            return user, other
    return None, None


def _anchor(op: Operation, key: str, cache: dict) -> Anchor | None:
    if not isinstance(op, Conv2DOp | DenseOp | MatmulOp):
        return None
    if not all(_float32(v) for v in (*op.operands, *op.results)):
        return None
    out = op.results[0]
    rank = len(shape_of(out))
    if isinstance(op, Conv2DOp):
        if op.attr("data_layout") != "NCHW" or op.attr("kernel_layout") != "OIHW":
            return None
        if op.attr("out_layout") not in ("", "NCHW"):
            return None
        weight = op.operands[1]
        if not is_constant_like(weight, cache):
            return None
        acts, w_axis, c_axis = [0], 0, 1
    elif isinstance(op, DenseOp):
        weight = op.operands[1]
        if not is_constant_like(weight, cache):
            return None
        acts, w_axis, c_axis = [0], 0, rank - 1
    else:
        lhs, rhs = op.operands
        if op.attr("rhs_panel") or is_constant_like(lhs, cache):
            return None
        if is_constant_like(rhs, cache):
            if len(shape_of(rhs)) != 2 or rank < 2:
                return None
            acts, weight, w_axis, c_axis = [0], rhs, 1, rank - 1
        else:
            acts, weight, w_axis, c_axis = [0, 1], None, 0, -1
    bias_op, bias = _bias_after(out, c_axis, cache) if weight is not None else (None, None)
    output = bias_op.results[0] if bias_op is not None else out
    return Anchor(key, op, acts, weight, w_axis, bias_op, bias, output)


def find_anchors(module: Operation) -> list[Anchor]:
    """The quantizable ops of @main in program order, with their positional keys."""
    main = next(
        (o for o in module.walk() if isinstance(o, func.FuncOp) and o.sym_name.data == "main"),
        None,
    )
    if main is None:
        raise UserError("quantization needs a @main function")
    counts: dict[str, int] = {}
    cache: dict = {}
    found = []
    for op in main.body.block.ops:
        kind = op.name.removeprefix("nnvm.")
        a = _anchor(op, f"{kind}:{counts.get(kind, 0)}", cache)
        if isinstance(op, Conv2DOp | DenseOp | MatmulOp):
            counts[kind] = counts.get(kind, 0) + 1
        if a is not None:
            found.append(a)
    return found


@dataclass
class TensorRange:
    """A tensor's observed range: exact min and max, and the |x| thresholds that the percentile
    and KL methods chose from its histogram."""

    min: float
    max: float
    percentile: float
    kl: float

    def threshold(self, method: str) -> float:
        """The symmetric clipping threshold (>= 0) a method picks."""
        if method == "minmax":
            return max(abs(self.min), abs(self.max))
        if method == "percentile":
            return self.percentile
        if method == "kl":
            return self.kl
        raise UserError(f"unknown calibration method {method!r}; use one of {list(METHODS)}")


@dataclass
class Calibration:
    """Per-tensor ranges of one graph (keys as find_anchors names them) and the anchors'
    signatures; `samples` inputs were run, `percentile` is the percentile's value."""

    tensors: dict[str, TensorRange] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    samples: int = 0
    percentile: float = 99.99

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str = "calibration") -> Calibration:
        try:
            raw = json.loads(text)
            tensors = {k: TensorRange(**v) for k, v in raw["tensors"].items()}
            cal = cls(tensors, dict(raw["signatures"]), int(raw["samples"]))
            cal.percentile = float(raw.get("percentile", cal.percentile))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise UserError(f"{where}: not a calibration record ({err})") from None
        for k, r in cal.tensors.items():
            values = (r.min, r.max, r.percentile, r.kl)
            if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
                raise UserError(f"{where}: tensor {k!r} has a non-finite range")
        return cal

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise UserError(f"cannot read calibration {path}: {err.strerror}") from None
        return cls.from_json(text, str(path))

    def check(self, anchors: list[Anchor]) -> None:
        """Every observed tensor of `anchors` has a range, and the signatures agree."""
        for a in anchors:
            want = self.signatures.get(a.key)
            if want is not None and want != a.signature():
                raise UserError(
                    f"calibration was made for another graph: {a.key} is {a.signature()} here, "
                    f"{want} there"
                )
            for name in a.tensors():
                if name not in self.tensors:
                    raise UserError(
                        f"calibration has no range for tensor {name!r} ({a.signature()}): "
                        "the tensor was never seen; calibrate this graph"
                    )

    def range_of(self, name: str, method: str) -> float:
        return self.tensors[name].threshold(method)


def anchor_tensors(anchors: list[Anchor]) -> Mapping[str, SSAValue]:
    """All observed tensors of `anchors`, by name."""
    out: dict[str, SSAValue] = {}
    for a in anchors:
        out.update(a.tensors())
    return out
