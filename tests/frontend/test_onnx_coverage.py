"""The ONNX ops that default exports of torchvision / transformers models use, checked
differentially on random inputs: onnxruntime, the numpy reference executor (from_onnx) and
machine code (build() + graph runtime) must agree. Also: function inlining (the standard's
function bodies and a model's own functions) and `nnvm-translate --list-onnx-ops`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from nnvm.frontend.onnx import OnnxImportError, from_onnx
from nnvm.frontend.onnx_backend import NNVMBackend, NNVMCompiledBackend
from nnvm.reference import run_reference

_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
}


def _model(nodes, inputs: dict[str, np.ndarray], outputs: list[str], opset: int = 21, **kw):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape) for k, v in inputs.items()],
        [onnx.ValueInfoProto(name=o) for o in outputs],  # types left to inference
        initializer=kw.pop("initializer", []),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)


def _ort(model, inputs):
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def _check(model, inputs, compiled: bool = True, rtol: float = 1e-4, atol: float = 1e-5):
    """Reference executor and (optionally) compiled code against onnxruntime."""
    want = _ort(model, inputs)
    backends = [NNVMBackend] + ([NNVMCompiledBackend] if compiled else [])
    for backend in backends:
        got = backend.prepare(model).run([inputs[k] for k in inputs])
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (backend.__name__, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=backend.__name__)


RNG = np.random.default_rng(0)


def test_gather_elements_negative_indices_and_a_smaller_index_box() -> None:
    data = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    idx = RNG.integers(-5, 5, (3, 7, 2)).astype(np.int64)
    node = helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1)
    _check(_model([node], {"d": data, "i": idx}, ["y"]), {"d": data, "i": idx})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_reductions(reduction: str) -> None:
    data = RNG.standard_normal((4, 6)).astype(np.float32)
    if reduction == "none":  # duplicates have no defined order without a reduction
        idx = np.stack([RNG.permutation(6)[:3] - 6 * (k % 2) for k in range(4)]).astype(np.int64)
    else:
        idx = RNG.integers(-6, 6, (4, 3)).astype(np.int64)
    upd = RNG.standard_normal((4, 3)).astype(np.float32)
    node = helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1, reduction=reduction)
    feeds = {"d": data, "i": idx, "u": upd}
    _check(_model([node], feeds, ["y"], opset=18), feeds)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd_slices(reduction: str) -> None:
    data = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    if reduction == "none":
        idx = np.array([[[0, 1], [4, 2]], [[2, 3], [-1, 0]]], np.int64)
    else:
        idx = RNG.integers(0, 3, (2, 3, 2)).astype(np.int64)
    upd = RNG.standard_normal((*idx.shape[:-1], 3)).astype(np.float32)
    node = helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction)
    feeds = {"d": data, "i": idx, "u": upd}
    _check(_model([node], feeds, ["y"], opset=18), feeds)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 4),
    n=st.integers(1, 12),
    data=st.data(),
    largest=st.booleans(),
)
def test_top_k_with_ties_matches_onnxruntime(rows: int, n: int, data, largest: bool) -> None:
    """Reference executor only (a property test: many shapes); ties from a small value range."""
    k = data.draw(st.integers(0, n))
    x = np.asarray(
        data.draw(st.lists(st.integers(-3, 3), min_size=rows * n, max_size=rows * n)), np.float32
    ).reshape(rows, n)
    kk = np.array([k], np.int64)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=int(largest))
    model = _model([node], {"x": x}, ["v", "i"], initializer=[helper.make_tensor("k", 7, [1], kk)])
    _check(model, {"x": x}, compiled=False)


def test_top_k_compiled() -> None:
    x = np.round(RNG.standard_normal((3, 40)) * 2).astype(np.float32)  # ties
    k = helper.make_tensor("k", TensorProto.INT64, [1], [7])
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)
    _check(_model([node], {"x": x}, ["v", "i"], initializer=[k]), {"x": x})


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 7, 8)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk", [(2, 3, 4), (1, 4, 5)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("...i,...i->...", [(2, 1, 4), (2, 3, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("bij,bkj->bik", [(1, 3, 4), (2, 5, 4)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_reference(equation: str, shapes) -> None:
    feeds = {f"x{k}": RNG.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(feeds), ["y"], equation=equation)
    _check(_model([node], feeds, ["y"]), feeds, compiled=False)


def test_einsum_compiled() -> None:
    """Several equations in one model, compiled once."""
    feeds, nodes, outs = {}, [], []
    for k, (eq, shapes) in enumerate(EINSUM[:10]):
        names = []
        for j, s in enumerate(shapes):
            feeds[f"x{k}_{j}"] = RNG.standard_normal(s).astype(np.float32)
            names.append(f"x{k}_{j}")
        nodes.append(helper.make_node("Einsum", names, [f"y{k}"], equation=eq))
        outs.append(f"y{k}")
    _check(_model(nodes, feeds, outs), feeds, rtol=1e-4, atol=1e-4)


def test_einsum_errors_name_the_index() -> None:
    feeds = {"a": np.zeros((3, 4), np.float32), "b": np.zeros((5, 6), np.float32)}
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")
    with pytest.raises(Exception, match="extents 4 and 5|Incompatible"):
        from_onnx(_model([node], feeds, ["y"]))


def test_rnn_bidirectional_relu_and_a_one_hot() -> None:
    x = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    w = (RNG.standard_normal((2, 4, 3)) * 0.5).astype(np.float32)
    r = (RNG.standard_normal((2, 4, 4)) * 0.5).astype(np.float32)
    b = RNG.standard_normal((2, 8)).astype(np.float32)
    inits = [helper.make_tensor(n, TensorProto.FLOAT, v.shape, v.ravel()) for n, v in
             (("w", w), ("r", r), ("b", b))]  # fmt: skip
    rnn = helper.make_node(
        "RNN", ["x", "w", "r", "b"], ["y", "h"], hidden_size=4, direction="bidirectional",
        activations=["Relu", "Tanh"],
    )  # fmt: skip
    ids = np.array([[0, 3, -1], [9, 2, 1]], np.int64)
    depth = helper.make_tensor("depth", TensorProto.INT64, [], [4])
    values = helper.make_tensor("values", TensorProto.FLOAT, [2], [-1.0, 2.0])
    onehot = helper.make_node("OneHot", ["ids", "depth", "values"], ["o"], axis=1)
    model = _model(
        [rnn, onehot], {"x": x, "ids": ids}, ["y", "h", "o"], initializer=[*inits, depth, values]
    )
    _check(model, {"x": x, "ids": ids})


def test_quantized_matmul_per_axis_dequantize_and_bit_shift() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 255, (3, 8)).astype(np.uint8)
    b = rng.integers(-128, 127, (8, 5)).astype(np.int8)
    bu = rng.integers(0, 255, (8, 5)).astype(np.uint8)
    scalars = [
        helper.make_tensor("a_s", TensorProto.FLOAT, [], [0.02]),
        helper.make_tensor("a_z", TensorProto.UINT8, [], [120]),
        helper.make_tensor("b_s", TensorProto.FLOAT, [], [0.05]),
        helper.make_tensor("b_z", TensorProto.INT8, [], [3]),
        helper.make_tensor("bu_z", TensorProto.UINT8, [], [131]),
        helper.make_tensor("y_s", TensorProto.FLOAT, [], [0.3]),
        helper.make_tensor("y_z", TensorProto.UINT8, [], [128]),
        helper.make_tensor("c_s", TensorProto.FLOAT, [5], [0.1, 0.2, 0.3, 0.4, 0.5]),
        helper.make_tensor("sh", TensorProto.INT8, [], [2]),
    ]
    uu = helper.make_node(
        "QLinearMatMul", ["a", "a_s", "a_z", "bu", "b_s", "bu_z", "y_s", "y_z"], ["q"]
    )
    us = helper.make_node(
        "QLinearMatMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"], ["qs"]
    )
    deq = helper.make_node("DequantizeLinear", ["b", "c_s"], ["deq"], axis=1)
    model = _model([uu, deq], {"a": a, "bu": bu, "b": b}, ["q", "deq"], initializer=scalars)
    _check(model, {"a": a, "bu": bu, "b": b})
    # uint8 x int8 against the exact integer formula (onnxruntime's AVX2 u8s8 kernel saturates
    # intermediate pair sums, so it is no oracle here)
    signed = _model([us], {"a": a, "b": b}, ["qs"], initializer=scalars)
    acc = (a.astype(np.int64) - 120) @ (b.astype(np.int64) - 3)
    exact = np.clip(
        np.round(acc * np.float32(0.02) * np.float32(0.05) / np.float32(0.3)) + 128, 0, 255
    )
    # ORT implements BitShift for unsigned types only: compare the signed shift with numpy
    shift = _model(
        [helper.make_node("BitShift", ["b", "sh"], ["shl"], direction="LEFT")], {"b": b}, ["shl"],
        opset=28, initializer=scalars[-1:],
    )  # fmt: skip
    for backend in (NNVMBackend, NNVMCompiledBackend):
        (got,) = backend.prepare(signed).run([a, b])
        np.testing.assert_array_equal(got, exact.astype(np.uint8))
        (got,) = backend.prepare(shift).run([b])
        np.testing.assert_array_equal(got, np.left_shift(b, 2))


def test_antialiased_downsampling_matches_onnxruntime() -> None:
    """Linear and cubic, with and without exclude_outside, odd scales, in one model."""
    x = RNG.standard_normal((1, 2, 17, 13)).astype(np.float32)
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 2, 5, 4])
    nodes = [
        helper.make_node(
            "Resize",
            ["x", "", "", "sizes"],
            [f"y{k}"],
            mode=mode,
            antialias=1,
            exclude_outside=excl,
        )  # fmt: skip
        for k, (mode, excl) in enumerate([("linear", 0), ("linear", 1), ("cubic", 0), ("cubic", 1)])
    ]
    model = _model(nodes, {"x": x}, [f"y{k}" for k in range(4)], opset=19, initializer=[sizes])
    _check(model, {"x": x})


def test_grid_sample_every_mode_and_padding_matches_onnxruntime() -> None:
    """Grids reaching past the input (so every padding mode matters), one model, compiled once."""
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = RNG.uniform(-1.6, 1.6, (2, 4, 7, 2)).astype(np.float32)
    nodes, outs = [], []
    for mode in ("linear", "nearest", "cubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (0, 1):
                outs.append(f"y_{mode}_{padding}_{align}")
                nodes.append(
                    helper.make_node(
                        "GridSample",
                        ["x", "grid"],
                        [outs[-1]],
                        mode=mode,
                        padding_mode=padding,
                        align_corners=align,
                    )  # fmt: skip
                )
    model = _model(nodes, {"x": x, "grid": grid}, outs, opset=20)
    _check(model, {"x": x, "grid": grid}, rtol=1e-4, atol=1e-4)


def test_standard_function_bodies_are_inlined() -> None:
    """RMSNormalization, Mish and GroupNormalization have no converters: their ONNX function
    bodies import; the IR holds the ops they are made of."""
    x = RNG.standard_normal((2, 4, 3, 3)).astype(np.float32)
    scale = helper.make_tensor("s", TensorProto.FLOAT, [3], [1.0, 0.5, 2.0])
    gscale = helper.make_tensor("gs", TensorProto.FLOAT, [4], [1.0, 0.5, 2.0, 1.5])
    gbias = helper.make_tensor("gb", TensorProto.FLOAT, [4], [0.0, 0.1, -0.2, 0.3])
    nodes = [
        helper.make_node("RMSNormalization", ["x", "s"], ["r"], axis=-1, epsilon=1e-3),
        helper.make_node("Mish", ["x"], ["m"]),
        helper.make_node("GroupNormalization", ["x", "gs", "gb"], ["g"], num_groups=2),
    ]
    model = _model(nodes, {"x": x}, ["r", "m", "g"], opset=23, initializer=[scale, gscale, gbias])
    _check(model, {"x": x})
    module, _ = from_onnx(model)
    text = str(module)
    assert "nnvm.tanh" in text and "nnvm.sqrt" in text


def _local_function_model(depth: int = 1):
    """`y = local.Scaled(x, alpha=3)` where Scaled(x) = x * alpha + Inner(x), Inner = Relu."""
    inner = helper.make_function(
        "local", "Inner", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 18)],
    )  # fmt: skip
    alpha = helper.make_node("Constant", [], ["k"])
    ref = onnx.AttributeProto()
    ref.name, ref.ref_attr_name, ref.type = "value_float", "alpha", onnx.AttributeProto.FLOAT
    alpha.attribute.append(ref)
    body = [
        alpha,
        helper.make_node("Mul", ["x", "k"], ["t"]),
        helper.make_node("Inner", ["x"], ["u"], domain="local"),
        helper.make_node("Add", ["t", "u"], ["y"]),
    ]
    scaled = helper.make_function(
        "local", "Scaled", ["x"], ["y"], body,
        [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)], ["alpha"],
    )  # fmt: skip
    call = helper.make_node("Scaled", ["in"], ["out"], domain="local", alpha=3.0)
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    graph = helper.make_graph(
        [call], "g", [helper.make_tensor_value_info("in", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 5])],
    )  # fmt: skip
    model = helper.make_model(
        graph, functions=[inner, scaled],
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
    )  # fmt: skip
    return model, x


def test_a_models_own_functions_are_inlined_with_attribute_references() -> None:
    model, x = _local_function_model()
    _check(model, {"in": x})
    module, params = from_onnx(model)
    (got,) = run_reference(module, params, {"in": x})
    np.testing.assert_allclose(got, 3 * x + np.maximum(x, 0), rtol=1e-6)


def test_a_recursive_function_is_reported_not_followed_forever() -> None:
    body = [helper.make_node("Loopy", ["a"], ["b"], domain="local")]
    loopy = helper.make_function("local", "Loopy", ["a"], ["b"], body, [])
    graph = helper.make_graph(
        [helper.make_node("Loopy", ["x"], ["y"], domain="local")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(
        graph, functions=[loopy],
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
    )  # fmt: skip
    with pytest.raises(OnnxImportError, match="nest deeper than"):
        from_onnx(model)


def test_value_dependent_shapes_need_known_inputs() -> None:
    x = np.array([[0, 1], [2, 0]], np.float32)
    node = helper.make_node("NonZero", ["x"], ["y"])
    model = _model([node], {"x": x}, ["y"])
    with pytest.raises(OnnxImportError, match="must be known at import time"):
        from_onnx(model)
    module, params = from_onnx(model, known_inputs={"x": x})
    (got,) = run_reference(module, params, {})
    np.testing.assert_array_equal(got, np.array(np.nonzero(x)))


def test_list_onnx_ops_prints_converters_and_functions() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "nnvm.tools.translate", "--list-onnx-ops"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:-1]}
    assert rows["GatherElements"][1] == "converter"
    assert rows["RMSNormalization"][1] == "function"
    assert rows["Upsample"][0].endswith("-9")  # deprecated at opset 10
    assert "SequenceMap" not in rows
