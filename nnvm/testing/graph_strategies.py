"""Hypothesis strategies for random, well-typed graph-level programs (needs the `test` extra).

A drawn program is a module with `func.func @main` over small static shapes, the params it
names with seeded random values, and matching random inputs: enough for property tests of the
printer/parser and for checking that passes preserve what the reference executor computes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

from nnvm.dialects.nnvm.binary import (
    AddOp,
    DivOp,
    GreaterOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    SubOp,
    WhereOp,
)
from nnvm.dialects.nnvm.concat_split import ConcatOp
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.elementwise import (
    ClipOp,
    ErfOp,
    ExpOp,
    LeakyReluOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
)
from nnvm.dialects.nnvm.nn import BatchNormOp, BiasAddOp, DenseOp, MatmulOp, SoftmaxOp
from nnvm.dialects.nnvm.passthrough import DropoutOp
from nnvm.dialects.nnvm.permute import TransposeOp
from nnvm.dialects.nnvm.pooling import GlobalAvgPool2DOp, MaxPool2DOp
from nnvm.dialects.nnvm.reduce import ReduceMaxOp, ReduceMeanOp, ReduceSumOp
from nnvm.dialects.nnvm.reshape import ReshapeOp
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp

UNARY = [ReluOp, SigmoidOp, TanhOp, ErfOp, ExpOp]
BINARY = [AddOp, SubOp, MulOp, MaximumOp, MinimumOp]

finite = st.floats(-4, 4, allow_nan=False, width=32)


@dataclass
class Program:
    module: ModuleOp
    params: dict[str, np.ndarray]
    inputs: list[np.ndarray]


class _Builder:
    def __init__(self, draw, seed: int):
        self.draw = draw
        self.rng = np.random.default_rng(seed)
        self.params: dict[str, np.ndarray] = {}
        self.block: Block | None = None
        self.values: list[SSAValue] = []

    def add(self, op):
        assert self.block is not None
        self.block.add_op(op)
        self.values.extend(r for r in op.results if r.type.element_type == f32)
        return op

    def param(self, shape, low=-1.0, high=1.0, prefix="p") -> SSAValue:
        name = f"{prefix}{len(self.params)}"
        self.params[name] = self.rng.uniform(low, high, size=shape).astype(np.float32)
        op = ParamOp(name, TensorType(f32, list(shape)))
        assert self.block is not None
        self.block.add_op(op)
        return op.result

    def scalar(self, value: float) -> SSAValue:
        """A 0-d constant (not offered as an operand to later steps)."""
        op = ConstantOp(np.asarray(value, dtype=np.float32).reshape(()))
        assert self.block is not None
        self.block.add_op(op)
        return op.result

    def partner_shape(self, shape) -> tuple[int, ...]:
        keep = self.draw(st.integers(0, len(shape)))
        suffix = list(shape[len(shape) - keep :])
        return tuple(d if self.draw(st.booleans()) else 1 for d in suffix)


def _step(b: _Builder, x: SSAValue, kind: str) -> None:
    draw = b.draw
    shape = tuple(x.type.get_shape())
    if kind == "unary":
        b.add(draw(st.sampled_from(UNARY)).make(x))
    elif kind == "clip":
        lo = draw(finite)
        b.add(ClipOp.make(x, min=lo, max=lo + draw(st.floats(0, 4, width=32))))
    elif kind == "leaky":
        b.add(LeakyReluOp.make(x, alpha=draw(st.floats(0, 1, width=32))))
    elif kind == "binary":
        y = b.param(b.partner_shape(shape))
        lhs, rhs = (x, y) if draw(st.booleans()) else (y, x)
        b.add(draw(st.sampled_from(BINARY)).make(lhs, rhs))
    elif kind == "div":
        y = b.param(b.partner_shape(shape), 0.5, 2.0)
        b.add(DivOp.make(x, y))
    elif kind == "where":
        y = b.param(b.partner_shape(shape))
        cond = b.add(GreaterOp.make(x, y)).result
        b.add(WhereOp.make(cond, x, y))
    elif kind == "residual":
        other = draw(st.sampled_from([v for v in b.values if v.type == x.type]))
        b.add(AddOp.make(x, other))
    elif kind == "const":
        value = np.asarray(draw(finite), dtype=np.float32).reshape((1,) * len(shape))
        c = b.add(ConstantOp(value)).result
        b.add(MulOp.make(x, c))
    elif kind == "dropout":
        b.add(DropoutOp.make(x))
    elif kind == "reduce" and len(shape) >= 2:
        # the last axis; or an image's H and W (a squeeze-excite mean), N, or C
        choices = [[len(shape) - 1]] + ([[2, 3], [3, 2], [0], [1]] if len(shape) == 4 else [])
        axes = draw(st.sampled_from(choices))
        op = draw(st.sampled_from([ReduceSumOp, ReduceMeanOp, ReduceMaxOp]))
        b.add(op.make(x, axes=axes, keepdims=True))
    elif kind == "softmax":
        b.add(SoftmaxOp.make(x, axis=-1))
    elif kind == "gelu":  # x read twice: a diamond for fusion
        half, one, root2 = (b.scalar(v) for v in (0.5, 1.0, np.sqrt(2.0)))
        e = b.add(ErfOp.make(b.add(DivOp.make(x, root2)).result)).result
        q = b.add(MulOp.make(x, b.add(AddOp.make(e, one)).result)).result
        b.add(MulOp.make(q, half))
    elif kind == "matmul" and len(shape) >= 2:
        n = draw(st.sampled_from([1, 3, 16, 33]))
        b.add(MatmulOp.make(x, b.param((shape[-1], n))))
    elif kind == "transpose" and len(shape) >= 2:
        perm = list(range(len(shape)))
        perm[-2], perm[-1] = perm[-1], perm[-2]
        b.add(TransposeOp.make(x, perm=perm))
    elif kind == "flatten_dense" and len(shape) == 3:  # ONNX MatMul of 3-D rows by a weight
        rows = b.add(ReshapeOp.make(x, shape=[shape[0] * shape[1], shape[2]])).result
        units = draw(st.integers(1, 5))
        y = b.add(DenseOp.make(rows, b.param((units, shape[2])))).result
        b.add(ReshapeOp.make(y, shape=[shape[0], shape[1], units]))
    elif len(shape) == 4:
        _step4(b, x, kind, shape)
    elif len(shape) == 2 and kind == "dense":
        units = draw(st.integers(1, 5))
        w = b.param((units, shape[1]))
        y = b.add(DenseOp.make(x, w)).result
        b.add(BiasAddOp.make(y, b.param((units,)), axis=1))


def _step4(b: _Builder, x: SSAValue, kind: str, shape: tuple[int, ...]) -> None:
    draw = b.draw
    n, c, h, w = shape
    if kind == "conv":
        kh, kw = draw(st.integers(1, min(h, 3))), draw(st.integers(1, min(w, 3)))
        groups = draw(st.sampled_from([1, c]))
        out_c = groups * draw(st.integers(1, 2)) if groups > 1 else draw(st.integers(1, 8))
        wt = b.param((out_c, c // groups, kh, kw))
        pad = [kh // 2, kw // 2, kh // 2, kw // 2]
        y = b.add(Conv2DOp.make(x, wt, padding=pad, groups=groups)).result
        if draw(st.booleans()):
            y = b.add(AddOp.make(y, b.param((out_c, 1, 1)))).result
        if draw(st.booleans()):
            y = b.add(MulOp.make(y, b.param((out_c, 1, 1), 0.5, 1.5))).result
        if draw(st.booleans()):
            b.add(ReluOp.make(y))
    elif kind == "batch_norm":
        gamma, beta = b.param((c,), 0.5, 1.5), b.param((c,))
        mean, var = b.param((c,)), b.param((c,), 0.5, 2.0)
        b.add(BatchNormOp.make(x, gamma, beta, mean, var, axis=1, epsilon=1e-5))
    elif kind == "pool" and h >= 2 and w >= 2:
        b.add(MaxPool2DOp.make(x, pool_size=[2, 2], strides=[2, 2]))
    elif kind == "global_pool":
        b.add(GlobalAvgPool2DOp.make(x))
    elif kind == "concat":
        b.add(ConcatOp.make(x, b.param(shape), axis=1))
    elif kind == "flatten":
        b.add(ReshapeOp.make(x, shape=[n, c * h * w]))


STEP_KINDS = [
    "unary",
    "clip",
    "leaky",
    "binary",
    "div",
    "where",
    "residual",
    "const",
    "dropout",
    "reduce",
    "softmax",
    "conv",
    "batch_norm",
    "pool",
    "global_pool",
    "concat",
    "flatten",
    "dense",
    "gelu",
    "matmul",
    "transpose",
    "flatten_dense",
]


@st.composite
def programs(draw, max_steps: int = 8, image_inputs: bool | None = None) -> Program:
    """A random graph program: 1-2 inputs, up to `max_steps` op steps, 1-2 outputs."""
    b = _Builder(draw, draw(st.integers(0, 2**31 - 1)))
    image = draw(st.booleans()) if image_inputs is None else image_inputs
    if image:
        shapes = [(1, draw(st.integers(1, 8)), draw(st.integers(2, 6)), draw(st.integers(2, 6)))]
    else:
        shapes = [tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))]
    if draw(st.booleans()):
        shapes.append(shapes[0])
    arg_types = [TensorType(f32, list(s)) for s in shapes]
    b.block = Block(arg_types=arg_types)
    b.values = list(b.block.args)
    for _ in range(draw(st.integers(1, max_steps))):
        x = draw(st.sampled_from(b.values))
        _step(b, x, draw(st.sampled_from(STEP_KINDS)))
    candidates = [v for v in b.values if not isinstance(v.owner, ParamOp | ConstantOp)]
    outs = draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True))
    b.block.add_op(func.ReturnOp(*outs))
    fn = func.FuncOp("main", (arg_types, [o.type for o in outs]), Region(b.block))
    inputs = [b.rng.uniform(-2, 2, size=s).astype(np.float32) for s in shapes]
    return Program(ModuleOp([fn]), b.params, inputs)
