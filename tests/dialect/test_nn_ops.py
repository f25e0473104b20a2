"""The nn, pooling, reduce and rnn ops of the graph dialect against onnxruntime.

Each case builds a one-op module from text, verifies it (so shape inference must agree with the
shapes onnxruntime produces), runs it with the reference executor and compares with the
equivalent one-node ONNX model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm import NNVM
from nnvm.dialects.nnvm.layout import Layout
from nnvm.dialects.nnvm.traits import OpPattern, OpPatternKind
from nnvm.reference import run_reference

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

RTOL, ATOL = 1e-3, 1e-5

_MLIR_TYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.bool_): "i1",
}


# ----------------------------------------------------------------------------------------------
# Harness
# ----------------------------------------------------------------------------------------------


def ttype(shape: Sequence[int], dtype: np.dtype | type = np.float32) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{_MLIR_TYPES[np.dtype(dtype)]}>"


def module_text(op: str, attrs: str, in_types: Sequence[str], out_types: Sequence[str]) -> str:
    args = ", ".join(f"%a{k}: {t}" for k, t in enumerate(in_types))
    operands = ", ".join(f"%a{k}" for k in range(len(in_types)))
    results = ", ".join(out_types)
    attr = f" {{{attrs}}}" if attrs else ""
    if len(out_types) == 1:
        lhs, rets = "%r", "%r"
    else:
        lhs = f"%r:{len(out_types)}"
        rets = ", ".join(f"%r#{k}" for k in range(len(out_types)))
    return (
        f"func.func @main({args}) -> ({results}) {{\n"
        f"  {lhs} = {op} {operands}{attr} : ({', '.join(in_types)}) -> ({results})\n"
        f"  func.return {rets} : {results}\n"
        "}\n"
    )


def parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(NNVM)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def run_nnvm(
    op: str, attrs: str, inputs: Sequence[np.ndarray], like: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Run one nnvm op; its declared result types are taken from `like` (shapes and dtypes)."""
    text = module_text(
        op,
        attrs,
        [ttype(x.shape, x.dtype) for x in inputs],
        [ttype(y.shape, y.dtype) for y in like],
    )
    return run_reference(parse(text), {}, list(inputs))


def run_onnx(
    op_type: str,
    inputs: Sequence[np.ndarray | None],
    n_outputs: int = 1,
    opset: int = 19,
    constants: dict[int, np.ndarray] | None = None,
    out_dtype: type | None = None,
    **attrs: object,
) -> list[np.ndarray]:
    """Run a one-node ONNX model; None inputs are omitted optional operands, `constants` are
    initializers (e.g. ReduceSum's axes). Outputs have `out_dtype` (default: the first input's)."""
    constants = constants or {}
    names, graph_inputs, feeds, inits = [], [], {}, []
    for k, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        name = f"in{k}"
        names.append(name)
        if k in constants:
            inits.append(numpy_helper.from_array(constants[k], name))
            continue
        elem = helper.np_dtype_to_tensor_dtype(x.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, x.shape))
        feeds[name] = x
    outs = [f"out{k}" for k in range(n_outputs)]
    out_elem = helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype or inputs[0].dtype))
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(o, out_elem, None) for o in outs],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def close(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)


def check(
    op: str,
    attrs: str,
    inputs: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
) -> None:
    close(run_nnvm(op, attrs, inputs, want), want)


def rand(rng: np.random.Generator, *shape: int, dtype: type = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def bad(op: str, attrs: str, in_types: Sequence[str], out_types: Sequence[str], match: str):
    with pytest.raises(VerifyException, match=match):
        parse(module_text(op, attrs, in_types, out_types))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# ----------------------------------------------------------------------------------------------
# nn.py
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("xshape", [(4, 6), (2, 3, 6), (6,)])
def test_dense(rng, xshape):
    x, w = rand(rng, *xshape), rand(rng, 5, 6)
    want = run_onnx("MatMul", [x, np.ascontiguousarray(w.T)])
    check("nnvm.dense", "", [x, w], want)


@pytest.mark.parametrize(
    "ashape,bshape,dtype",
    [
        ((3, 4), (4, 5), np.float32),
        ((4,), (4, 5), np.float32),
        ((3, 4), (4,), np.float32),
        ((4,), (4,), np.float32),
        ((2, 1, 3, 4), (5, 4, 2), np.float32),
        ((7, 3, 4), (4, 2), np.float32),
        ((3, 4), (2, 4, 5), np.int64),
        ((2, 3, 4), (2, 4, 5), np.int32),
    ],
)
def test_matmul(rng, ashape, bshape, dtype):
    a = rng.integers(-5, 5, ashape) if dtype != np.float32 else rng.standard_normal(ashape)
    b = rng.integers(-5, 5, bshape) if dtype != np.float32 else rng.standard_normal(bshape)
    a, b = a.astype(dtype), b.astype(dtype)
    check("nnvm.matmul", "", [a, b], run_onnx("MatMul", [a, b]))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("batches", [(3, 3), (1, 3), (3, 1)])
def test_batch_matmul(rng, ta, tb, batches):
    ba, bb = batches
    a = rand(rng, ba, 4, 5) if not ta else rand(rng, ba, 5, 4)
    b = rand(rng, bb, 5, 2) if not tb else rand(rng, bb, 2, 5)
    an = a.transpose(0, 2, 1) if ta else a
    bn = b.transpose(0, 2, 1) if tb else b
    want = run_onnx("MatMul", [np.ascontiguousarray(an), np.ascontiguousarray(bn)])
    attrs = ", ".join(f"{k} = true" for k, v in (("transpose_a", ta), ("transpose_b", tb)) if v)
    check("nnvm.batch_matmul", attrs, [a, b], want)


@pytest.mark.parametrize("axis", [1, -1, 0, 3])
def test_bias_add(rng, axis):
    x = rand(rng, 2, 3, 4, 5)
    b = rand(rng, x.shape[axis])
    shape = [1] * 4
    shape[axis] = b.shape[0]
    want = run_onnx("Add", [x, b.reshape(shape)])
    check("nnvm.bias_add", f"axis = {axis}" if axis != 1 else "", [x, b], want)


@pytest.mark.parametrize("op,onnx_op", [("softmax", "Softmax"), ("log_softmax", "LogSoftmax")])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(rng, op, onnx_op, axis):
    x = rand(rng, 3, 4, 5) * 10
    want = run_onnx(onnx_op, [x], axis=axis)
    check(f"nnvm.{op}", f"axis = {axis}" if axis != -1 else "", [x], want)


def test_softmax_large_values_are_stable():
    x = np.array([[1000.0, 1001.0, 1002.0]], dtype=np.float32)
    (got,) = run_nnvm("nnvm.softmax", "", [x], [x])
    assert np.all(np.isfinite(got))
    close([got], run_onnx("Softmax", [x]))


@pytest.mark.parametrize("axis", [1, 3, -1])
def test_batch_norm(rng, axis):
    x = rand(rng, 2, 3, 4, 5)
    c = x.shape[axis]
    gamma, beta, mean = rand(rng, c), rand(rng, c), rand(rng, c)
    var = rng.uniform(0.5, 2.0, c).astype(np.float32)
    # ONNX normalizes along axis 1: move our axis there and back
    xt = np.ascontiguousarray(np.moveaxis(x, axis, 1))
    (yt,) = run_onnx("BatchNormalization", [xt, gamma, beta, mean, var], epsilon=1e-3)
    want = np.ascontiguousarray(np.moveaxis(yt, 1, axis))
    attrs = (f"axis = {axis}, " if axis != 1 else "") + "epsilon = 1.0e-03"
    check("nnvm.batch_norm", attrs, [x, gamma, beta, mean, var], [want])


@pytest.mark.parametrize(
    "shape,axis,gshape",
    [((2, 3, 8), -1, (8,)), ((2, 3, 4), 1, (3, 4)), ((2, 3, 4), 1, (4,)), ((4, 6), 0, (4, 6))],
)
def test_layer_norm(rng, shape, axis, gshape):
    x, g, b = rand(rng, *shape), rand(rng, *gshape), rand(rng, *gshape)
    want = run_onnx("LayerNormalization", [x, g, b], opset=17, axis=axis, epsilon=1e-5)
    check("nnvm.layer_norm", f"axis = {axis}" if axis != -1 else "", [x, g, b], want)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 7)])
def test_instance_norm(rng, shape):
    x, g, b = rand(rng, *shape), rand(rng, shape[1]), rand(rng, shape[1])
    want = run_onnx("InstanceNormalization", [x, g, b], epsilon=1e-4)
    check("nnvm.instance_norm", "epsilon = 1.0e-04", [x, g, b], want)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn(rng, size):
    x = rand(rng, 2, 6, 3, 3)
    if size % 2:
        want = run_onnx("LRN", [x], size=size, alpha=0.01, beta=0.6, bias=2.0)
    else:
        # onnxruntime accepts odd sizes only (and onnx.reference's LRN loops over the batch axis
        # instead of channels): spell out the ONNX formula for the even ones
        lo, hi = math.floor((size - 1) / 2), math.ceil((size - 1) / 2)
        xd = x.astype(np.float64)
        sq = np.zeros_like(xd)
        for c in range(x.shape[1]):
            sq[:, c] = (xd[:, max(0, c - lo) : min(x.shape[1] - 1, c + hi) + 1] ** 2).sum(axis=1)
        want = [(xd / (2.0 + 0.01 / size * sq) ** 0.6).astype(np.float32)]
    check("nnvm.lrn", f"size = {size}, alpha = 0.01, beta = 0.6, bias = 2.0", [x], want)


def test_lrn_defaults(rng):
    x = rand(rng, 1, 7, 2, 2) * 10
    check("nnvm.lrn", "size = 5", [x], run_onnx("LRN", [x], size=5))


@pytest.mark.parametrize("sshape", [(3, 1, 1), (1,), (5,), (2, 3, 4, 5)])
def test_prelu(rng, sshape):
    x, s = rand(rng, 2, 3, 4, 5), rand(rng, *sshape)
    check("nnvm.prelu", "", [x, s], run_onnx("PRelu", [x, s]))


def test_float64_and_float16_keep_their_dtype(rng):
    x = rand(rng, 2, 5, dtype=np.float64)
    check("nnvm.softmax", "", [x], run_onnx("Softmax", [x]))
    h = rand(rng, 2, 5, dtype=np.float16)
    (got,) = run_nnvm("nnvm.softmax", "", [h], [h])
    assert got.dtype == np.float16


_KINDS = {
    OpPatternKind.OUT_ELEMWISE_FUSABLE: [
        "dense", "matmul", "batch_matmul",
        "max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d",
    ],
    OpPatternKind.BROADCAST: ["bias_add", "prelu"],
    OpPatternKind.COMM_REDUCE: ["sum", "mean", "max", "min", "prod", "argmax", "argmin"],
    OpPatternKind.OPAQUE: [
        "softmax", "log_softmax", "batch_norm", "layer_norm", "instance_norm", "lrn",
        "lstm", "gru",
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "name,kind", [(name, kind) for kind, names in _KINDS.items() for name in names]
)
def test_pattern_kinds_and_purity(name, kind):
    op = next(o for o in NNVM.operations if o.name == f"nnvm.{name}")
    trait = op.get_trait(OpPattern)
    assert trait is not None and trait.kind == kind
    assert op.has_trait(Pure)


@pytest.mark.parametrize(
    "op,attrs,ins,outs,match",
    [
        ("nnvm.dense", "", [(2, 3), (4, 5)], [(2, 4)], "K = 3"),
        ("nnvm.dense", "", [(2, 3), (3,)], [(2, 4)], "weight must be 2-D"),
        ("nnvm.dense", "", [(2, 3), (4, 3)], [(2, 5)], "disagrees"),
        ("nnvm.matmul", "", [(2, 3), (4, 5)], [(2, 5)], "contracting"),
        ("nnvm.matmul", "", [(2, 2, 3), (3, 3, 5)], [(2, 2, 5)], "do not broadcast"),
        ("nnvm.matmul", "", [(), (3,)], [()], "rank >= 1"),
        ("nnvm.batch_matmul", "", [(2, 3, 4), (4, 5)], [(2, 3, 5)], "must be 3-D"),
        ("nnvm.batch_matmul", "", [(2, 3, 4), (3, 4, 5)], [(2, 3, 5)], "batch sizes"),
        (
            "nnvm.batch_matmul",
            "transpose_b = true",
            [(2, 3, 4), (2, 4, 5)],
            [(2, 3, 5)],
            "contracting",
        ),
        ("nnvm.bias_add", "", [(2, 3, 4), (4,)], [(2, 3, 4)], r"bias must have shape \[3\]"),
        ("nnvm.bias_add", "axis = 3", [(2, 3, 4), (4,)], [(2, 3, 4)], "out of range"),
        ("nnvm.softmax", "axis = 2", [(2, 3)], [(2, 3)], "out of range"),
        ("nnvm.batch_norm", "", [(2, 3, 4)] + [(4,)] * 4, [(2, 3, 4)], r"gamma must have shape"),
        (
            "nnvm.layer_norm",
            "axis = 1",
            [(2, 3, 4), (4, 3), (4,)],
            [(2, 3, 4)],
            "does not broadcast to the normalized shape",
        ),
        ("nnvm.instance_norm", "", [(2, 3), (3,), (3,)], [(2, 3)], r"\[N, C, spatial"),
        ("nnvm.instance_norm", "", [(2, 3, 4), (4,), (3,)], [(2, 3, 4)], "gamma"),
        ("nnvm.lrn", "size = 0", [(1, 3, 2, 2)], [(1, 3, 2, 2)], "size must be >= 1"),
        ("nnvm.prelu", "", [(2, 3), (2, 2, 3)], [(2, 3)], "does not broadcast"),
        ("nnvm.prelu", "", [(2, 3), (2,)], [(2, 3)], "does not broadcast"),
    ],
)
def test_nn_shape_errors(op, attrs, ins, outs, match):
    bad(op, attrs, [ttype(s) for s in ins], [ttype(s) for s in outs], match)


def test_nn_dtype_errors():
    bad("nnvm.dense", "", [ttype((2, 3), np.int32)] * 2, [ttype((2, 2), np.int32)], "float")
    bad(
        "nnvm.matmul",
        "",
        [ttype((2, 3)), ttype((3, 2), np.float64)],
        [ttype((2, 2))],
        "share one element type",
    )
    bad("nnvm.softmax", "", [ttype((2, 3), np.int64)], [ttype((2, 3), np.int64)], "float")


# ----------------------------------------------------------------------------------------------
# pooling.py
# ----------------------------------------------------------------------------------------------

POOL_CASES = [
    # (input hw, kernel, strides, pads, dilation, ceil)
    ((6, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((7, 7), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((5, 5), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((6, 7), (2, 2), (2, 2), (1, 1, 0, 0), (1, 1), True),
    ((4, 4), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((7, 8), (3, 2), (1, 2), (1, 0, 2, 1), (2, 1), False),
    ((7, 7), (3, 3), (2, 2), (1, 1, 1, 1), (2, 2), True),
]


def _pool_attrs(kernel, strides, pads, dil, ceil) -> str:
    parts = [f"pool_size = [{kernel[0]}, {kernel[1]}]"]
    if strides != (1, 1):
        parts.append(f"strides = [{strides[0]}, {strides[1]}]")
    if pads != (0, 0, 0, 0):
        parts.append("padding = [" + ", ".join(map(str, pads)) + "]")
    if dil != (1, 1):
        parts.append(f"dilation = [{dil[0]}, {dil[1]}]")
    if ceil:
        parts.append("ceil_mode = true")
    return ", ".join(parts)


def _onnx_pool_attrs(kernel, strides, pads, dil, ceil) -> dict:
    # nnvm padding is [top, left, bottom, right] = ONNX's [h_begin, w_begin, h_end, w_end]
    return dict(
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(pads),
        dilations=list(dil),
        ceil_mode=int(ceil),
    )


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d(rng, case):
    hw, *window = case
    x = rand(rng, 2, 3, *hw)
    want = run_onnx("MaxPool", [x], **_onnx_pool_attrs(*window))
    check("nnvm.max_pool2d", _pool_attrs(*window), [x], want)


def test_max_pool2d_padding_never_wins(rng):
    x = -np.abs(rand(rng, 1, 2, 4, 4)) - 1.0
    attrs = _pool_attrs((3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False)
    (got,) = run_nnvm("nnvm.max_pool2d", attrs, [x], [x])
    assert np.all(got < 0)


def test_max_pool2d_uint8(rng):
    x = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    window = ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False)
    check(
        "nnvm.max_pool2d",
        _pool_attrs(*window),
        [x],
        run_onnx("MaxPool", [x], **_onnx_pool_attrs(*window)),
    )


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("include_pad", [False, True])
def test_avg_pool2d(rng, case, include_pad):
    hw, *window = case
    x = rand(rng, 2, 3, *hw)
    want = run_onnx(
        "AveragePool", [x], count_include_pad=int(include_pad), **_onnx_pool_attrs(*window)
    )
    attrs = _pool_attrs(*window) + (", count_include_pad = true" if include_pad else "")
    check("nnvm.avg_pool2d", attrs, [x], want)


@pytest.mark.parametrize(
    "op,onnx_op",
    [("global_avg_pool2d", "GlobalAveragePool"), ("global_max_pool2d", "GlobalMaxPool")],
)
def test_global_pools(rng, op, onnx_op):
    x = rand(rng, 2, 3, 5, 4)
    check(f"nnvm.{op}", "", [x], run_onnx(onnx_op, [x]))


@pytest.mark.parametrize(
    "op,onnx_op,attrs,onnx_attrs",
    [
        (
            "max_pool2d",
            "MaxPool",
            "pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]",
            dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        ),
        (
            "avg_pool2d",
            "AveragePool",
            "pool_size = [2, 2], strides = [2, 2]",
            dict(kernel_shape=[2, 2], strides=[2, 2]),
        ),
        ("global_avg_pool2d", "GlobalAveragePool", "", {}),
        ("global_max_pool2d", "GlobalMaxPool", "", {}),
    ],
)
@pytest.mark.parametrize("layout_text", ["NCHW8c", "NHWC", "NHWC4c"])
def test_pools_in_other_layouts(rng, op, onnx_op, attrs, onnx_attrs, layout_text):
    x = rand(rng, 2, 16, 6, 7)
    (want,) = run_onnx(onnx_op, [x], **onnx_attrs)
    layout = Layout.parse(layout_text, "NCHW")
    xb, wantb = layout.from_canonical(x), layout.from_canonical(want)
    layout_attr = f'layout = "{layout_text}"'
    full = f"{attrs}, {layout_attr}" if attrs else layout_attr
    (got,) = run_nnvm(f"nnvm.{op}", full, [xb], [wantb])
    close([layout.to_canonical(got)], [want])


@pytest.mark.parametrize(
    "op,attrs,ins,outs,match",
    [
        ("nnvm.max_pool2d", "pool_size = [2, 2]", [(1, 3, 4)], [(1, 3, 3)], "rank 3"),
        ("nnvm.max_pool2d", "pool_size = [2]", [(1, 3, 4, 4)], [(1, 3, 3, 3)], "need 2 values"),
        (
            "nnvm.max_pool2d",
            "pool_size = [2, 2], strides = [0, 1]",
            [(1, 3, 4, 4)],
            [(1, 3, 3, 3)],
            ">= 1",
        ),
        (
            "nnvm.max_pool2d",
            "pool_size = [2, 2], padding = [2, 0, 0, 0]",
            [(1, 3, 4, 4)],
            [(1, 3, 3, 3)],
            "smaller than the pool size",
        ),
        ("nnvm.max_pool2d", "pool_size = [5, 5]", [(1, 3, 4, 4)], [(1, 3, 1, 1)], "does not fit"),
        (
            "nnvm.max_pool2d",
            'pool_size = [2, 2], layout = "NCH"',
            [(1, 3, 4, 4)],
            [(1, 3, 3, 3)],
            "not a blocking of NCHW",
        ),
        (
            "nnvm.max_pool2d",
            'pool_size = [2, 2], layout = "NCHW4x"',
            [(1, 3, 4, 4, 4)],
            [(1, 3, 3, 3, 4)],
            "block of unknown axis",
        ),
        (
            "nnvm.avg_pool2d",
            'pool_size = [2, 2], layout = "NCHW8c"',
            [(1, 1, 4, 4, 4)],
            [(1, 1, 3, 3, 4)],
            "block axis 8c has extent 4",
        ),
        ("nnvm.avg_pool2d", "pool_size = [2, 2]", [(1, 3, 4, 4)], [(1, 3, 2, 2)], "disagrees"),
        ("nnvm.global_avg_pool2d", "", [(1, 3, 4)], [(1, 3, 1)], "rank 3"),
    ],
)
def test_pool_shape_errors(op, attrs, ins, outs, match):
    bad(op, attrs, [ttype(s) for s in ins], [ttype(s) for s in outs], match)


def test_avg_pool_rejects_integers():
    bad(
        "nnvm.avg_pool2d",
        "pool_size = [2, 2]",
        [ttype((1, 1, 4, 4), np.int32)],
        [ttype((1, 1, 3, 3), np.int32)],
        "element type",
    )


# ----------------------------------------------------------------------------------------------
# reduce.py
# ----------------------------------------------------------------------------------------------

_ONNX_REDUCE = {
    "sum": "ReduceSum",
    "mean": "ReduceMean",
    "max": "ReduceMax",
    "min": "ReduceMin",
    "prod": "ReduceProd",
}


@pytest.mark.parametrize("op", list(_ONNX_REDUCE))
@pytest.mark.parametrize("axes", [(1,), (0, 2), (-1,), (0, 1, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_float(rng, op, axes, keepdims):
    x = rand(rng, 3, 4, 5)
    if op == "prod":
        x = (np.sign(x) * rng.uniform(0.8, 1.2, x.shape)).astype(np.float32)
    ax = np.array(axes, dtype=np.int64)
    want = run_onnx(
        _ONNX_REDUCE[op],
        [x, ax],
        opset=18,
        constants={1: ax},
        keepdims=int(keepdims),
        noop_with_empty_axes=1,
    )
    attrs = f"axes = [{', '.join(map(str, axes))}]" + (", keepdims = true" if keepdims else "")
    check(f"nnvm.{op}", attrs, [x], want)


@pytest.mark.parametrize("op", list(_ONNX_REDUCE))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_reduce_int(rng, op, dtype):
    x = rng.integers(-9, 10, (3, 4, 5)).astype(dtype)
    if op == "prod":
        x = rng.integers(-3, 4, (3, 4, 5)).astype(dtype)
    ax = np.array([1], dtype=np.int64)
    want = run_onnx(_ONNX_REDUCE[op], [x, ax], opset=18, constants={1: ax}, keepdims=0)
    check(f"nnvm.{op}", "axes = [1]", [x], want)


@pytest.mark.parametrize("op,onnx_op", [("argmax", "ArgMax"), ("argmin", "ArgMin")])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("last", [False, True])
def test_arg_reduce(rng, op, onnx_op, axis, keepdims, last):
    x = rng.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    want = run_onnx(
        onnx_op,
        [x],
        axis=axis,
        keepdims=int(keepdims),
        select_last_index=int(last),
        out_dtype=np.int64,
    )
    parts = [f"axis = {axis}"] if axis else []
    if not keepdims:
        parts.append("keepdims = false")
    if last:
        parts.append("select_last_index = true")
    check(f"nnvm.{op}", ", ".join(parts), [x], want)


def test_argmax_int(rng):
    x = rng.integers(-50, 50, (4, 6)).astype(np.int32)
    check("nnvm.argmax", "axis = 1", [x], run_onnx("ArgMax", [x], axis=1, out_dtype=np.int64))


@pytest.mark.parametrize(
    "op,attrs,ins,outs,match",
    [
        ("nnvm.sum", "axes = [3]", [(2, 3, 4)], [(2, 3)], "out of range"),
        ("nnvm.sum", "axes = [1, -2]", [(2, 3, 4)], [(2, 4)], "repeat"),
        ("nnvm.max", "axes = [1]", [(2, 0, 4)], [(2, 4)], "extent 0"),
        ("nnvm.mean", "axes = [0]", [()], [()], "no axes"),
        ("nnvm.sum", "axes = [1]", [(2, 3, 4)], [(2, 1, 4)], "disagrees"),
        ("nnvm.argmax", "axis = 2", [(2, 3)], [(2, 1)], "out of range"),
    ],
)
def test_reduce_shape_errors(op, attrs, ins, outs, match):
    bad(op, attrs, [ttype(s) for s in ins], [ttype(s) for s in outs], match)


def test_reduce_type_errors():
    bad("nnvm.sum", "axes = [0]", [ttype((2,), np.bool_)], [ttype((), np.bool_)], "element type")
    bad("nnvm.argmax", "", [ttype((2, 3))], [ttype((1, 3))], "disagrees")  # result is i64


# ----------------------------------------------------------------------------------------------
# rnn.py
# ----------------------------------------------------------------------------------------------


def _lstm_inputs(rng, seq, batch, inp, hid, dirs, layout):
    x = rand(rng, seq, batch, inp) if layout == 0 else rand(rng, batch, seq, inp)
    w = rand(rng, dirs, 4 * hid, inp) * 0.5
    r = rand(rng, dirs, 4 * hid, hid) * 0.5
    b = rand(rng, dirs, 8 * hid) * 0.5
    state = (dirs, batch, hid) if layout == 0 else (batch, dirs, hid)
    h0, c0 = rand(rng, *state), rand(rng, *state)
    p = rand(rng, dirs, 3 * hid) * 0.5
    return [x, w, r, b, h0, c0, p]


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("extra", [{}, {"clip": 0.5}, {"input_forget": 1}])
def test_lstm(rng, direction, extra):
    dirs = 2 if direction == "bidirectional" else 1
    ins = _lstm_inputs(rng, 5, 2, 3, 4, dirs, 0)
    x, w, r, b, h0, c0, p = ins
    want = run_onnx(
        "LSTM",
        [x, w, r, b, None, h0, c0, p],
        n_outputs=3,
        hidden_size=4,
        direction=direction,
        **extra,
    )
    attrs = ["hidden_size = 4"]
    if direction != "forward":
        attrs.append(f'direction = "{direction}"')
    if "clip" in extra:
        attrs.append(f"clip = {extra['clip']}")
    if "input_forget" in extra:
        attrs.append("input_forget = true")
    check("nnvm.lstm", ", ".join(attrs), ins, want)


def test_lstm_layout_1(rng):
    ins = _lstm_inputs(rng, 4, 3, 2, 3, 2, 1)
    x, w, r, b, h0, c0, p = ins
    # onnxruntime's CPU LSTM implements layout 0 only: compare through transposes
    x0, h00, c00 = x.transpose(1, 0, 2), h0.transpose(1, 0, 2), c0.transpose(1, 0, 2)
    y, yh, yc = run_onnx(
        "LSTM",
        [x0, w, r, b, None, h00, c00, p],
        n_outputs=3,
        hidden_size=3,
        direction="bidirectional",
    )
    want = [y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)]
    want = [np.ascontiguousarray(a) for a in want]
    check("nnvm.lstm", 'hidden_size = 3, direction = "bidirectional", layout = 1', ins, want)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lbr", [0, 1])
@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_gru(rng, direction, lbr, clip):
    dirs = 2 if direction == "bidirectional" else 1
    seq, batch, inp, hid = 4, 2, 3, 5
    x = rand(rng, seq, batch, inp)
    w = rand(rng, dirs, 3 * hid, inp) * 0.5
    r = rand(rng, dirs, 3 * hid, hid) * 0.5
    b = rand(rng, dirs, 6 * hid) * 0.5
    h0 = rand(rng, dirs, batch, hid)
    want = run_onnx(
        "GRU",
        [x, w, r, b, None, h0],
        n_outputs=2,
        hidden_size=hid,
        direction=direction,
        linear_before_reset=lbr,
        **({"clip": clip} if clip else {}),
    )
    attrs = [f"hidden_size = {hid}"]
    if direction != "forward":
        attrs.append(f'direction = "{direction}"')
    if lbr:
        attrs.append("linear_before_reset = true")
    if clip:
        attrs.append(f"clip = {clip}")
    check("nnvm.gru", ", ".join(attrs), [x, w, r, b, h0], want)


def _lstm_types(seq=5, batch=2, inp=3, hid=4, dirs=1, **override):
    shapes = {
        "x": (seq, batch, inp),
        "w": (dirs, 4 * hid, inp),
        "r": (dirs, 4 * hid, hid),
        "b": (dirs, 8 * hid),
        "h0": (dirs, batch, hid),
        "c0": (dirs, batch, hid),
        "p": (dirs, 3 * hid),
    }
    shapes.update(override)
    ins = [ttype(s) for s in shapes.values()]
    outs = [ttype((seq, dirs, batch, hid)), ttype((dirs, batch, hid)), ttype((dirs, batch, hid))]
    return ins, outs


@pytest.mark.parametrize(
    "attrs,override,match",
    [
        ("hidden_size = 4", {"w": (1, 12, 3)}, r"W must have shape \[1, 16, 3\]"),
        ("hidden_size = 4", {"x": (5, 2)}, "X must be 3-D"),
        ("hidden_size = 4", {"p": (1, 16)}, r"P must have shape \[1, 12\]"),
        ("hidden_size = 4", {"h0": (2, 2, 4)}, "initial_h must have shape"),
        ('hidden_size = 4, direction = "sideways"', {}, "direction must be"),
        ("hidden_size = 4, layout = 2", {}, "layout must be 0 or 1"),
        ("hidden_size = 0", {}, "hidden_size must be >= 1"),
        ("hidden_size = 4, clip = -1.0", {}, "clip must be >= 0"),
    ],
)
def test_lstm_errors(attrs, override, match):
    ins, outs = _lstm_types(**override)
    bad("nnvm.lstm", attrs, ins, outs, match)


def test_lstm_bidirectional_result_types():
    ins, _ = _lstm_types(dirs=2)
    outs = [ttype((5, 2, 2, 4)), ttype((2, 2, 4)), ttype((2, 2, 4))]
    text = module_text("nnvm.lstm", 'hidden_size = 4, direction = "bidirectional"', ins, outs)
    parse(text)
    ins1, outs1 = _lstm_types()
    bad(
        "nnvm.lstm",
        'hidden_size = 4, direction = "bidirectional"',
        ins1,
        outs1,
        "W must have shape",
    )
