"""from_onnx against onnxruntime, op family by op family, plus what the importer promises about
the graph it builds (folded shape arithmetic, params) and about its errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.frontend.onnx import MissingShapeError, OnnxImportError, from_onnx, supported_ops
from nnvm.frontend.onnx_backend import NNVMBackend
from nnvm.reference import run_reference
from nnvm.support.errors import UserError

RTOL, ATOL = 1e-3, 1e-5
RNG = np.random.default_rng(0)


def _dtype_code(array: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(array.dtype)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, _dtype_code(a), a.shape) for n, a in inputs.items()],
        [onnx.ValueInfoProto(name=n) for n in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(
    op_type: str,
    inputs: dict[str, np.ndarray],
    attrs: dict[str, Any] | None = None,
    initializers: dict[str, np.ndarray] | None = None,
    n_out: int = 1,
    opset: int = 17,
    node_inputs: Sequence[str] | None = None,
    atol: float = ATOL,
) -> onnx.ModelProto:
    """One node, run by onnxruntime and by from_onnx + the reference executor."""
    outs = [f"out{k}" for k in range(n_out)]
    names = list(node_inputs) if node_inputs is not None else [*inputs, *(initializers or {})]
    node = helper.make_node(op_type, names, outs, **(attrs or {}))
    model = make_model([node], inputs, outs, initializers, opset)
    want = ort_run(model, inputs)
    module, params = from_onnx(model)
    module.verify()
    got = run_reference(module, params, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
    return model


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def i64(values: Sequence[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# -- elementwise ---------------------------------------------------------------------------------

UNARY = [
    "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Neg", "Abs", "Floor", "Ceil", "Round",
    "HardSwish", "Softplus", "IsNaN", "Identity",
]  # fmt: skip


@pytest.mark.parametrize("op", UNARY)
def test_unary(op: str) -> None:
    check(op, {"x": f32(2, 3, 4)})


@pytest.mark.parametrize("op", ["Log", "Sqrt", "Reciprocal"])
def test_unary_positive(op: str) -> None:
    check(op, {"x": np.abs(f32(3, 5)) + 0.1})


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("LeakyRelu", {"alpha": 0.2}),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
        ("Elu", {"alpha": 0.7}),
        ("Gelu", {}),
        ("Gelu", {"approximate": "tanh"}),
    ],
)
def test_activations_with_attributes(op: str, attrs: dict[str, Any]) -> None:
    check(op, {"x": f32(4, 6)}, attrs, opset=20 if op == "Gelu" else 17)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Sum", "Mean"])
def test_broadcast_arithmetic(op: str) -> None:
    a = np.abs(f32(2, 3, 4)) + 0.5 if op == "Pow" else f32(2, 3, 4)
    check(op, {"a": a, "b": f32(3, 1)})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "GreaterOrEqual", "LessOrEqual"])
def test_comparisons(op: str) -> None:
    a = RNG.integers(0, 3, (3, 4)).astype(np.float32)
    check(op, {"a": a, "b": RNG.integers(0, 3, (4,)).astype(np.float32)})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic(op: str) -> None:
    check(op, {"a": RNG.random((3, 4)) > 0.5, "b": RNG.random((3, 4)) > 0.5})


def test_not_and_where() -> None:
    check("Not", {"a": RNG.random((5,)) > 0.5})
    check("Where", {"c": RNG.random((2, 3)) > 0.5, "x": f32(2, 3), "y": f32(3)})


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod: int) -> None:
    a = RNG.integers(-20, 20, (10,)).astype(np.int32)
    b = RNG.integers(1, 6, (10,)).astype(np.int32) * np.where(RNG.random(10) > 0.5, 1, -1).astype(
        np.int32
    )
    check("Mod", {"a": a, "b": b}, {"fmod": fmod})


@pytest.mark.parametrize(
    "to", [TensorProto.INT32, TensorProto.FLOAT16, TensorProto.BOOL, TensorProto.DOUBLE]
)
def test_cast(to: int) -> None:
    check("Cast", {"x": f32(3, 4) * 4}, {"to": to})


def test_clip_inputs_attributes_and_run_time_bounds() -> None:
    x = f32(4, 5) * 8
    check(
        "Clip",
        {"x": x},
        initializers={"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)},
    )
    check("Clip", {"x": x}, {"min": -1.0, "max": 2.0}, opset=6)
    check(
        "Clip", {"x": x, "lo": np.array(-0.5, np.float32)}, node_inputs=["x", "lo"]
    )  # run-time bound
    model = make_model(
        [helper.make_node("Clip", ["x", "", "hi"], ["y"])], {"x": x}, ["y"], {"hi": np.float32(1)}
    )
    module, _ = from_onnx(model)
    assert "nnvm.clip" in str(module)


def test_prelu_and_cast_like() -> None:
    check("PRelu", {"x": f32(2, 3, 4, 4)}, initializers={"slope": np.abs(f32(3, 1, 1))})
    check("CastLike", {"x": f32(5), "like": np.zeros(1, np.float64)})


# -- nn --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, x_shape, w_shape",
    [
        ({"pads": [1, 1, 1, 1], "strides": [2, 2]}, (1, 3, 9, 9), (4, 3, 3, 3)),
        ({"auto_pad": "SAME_UPPER"}, (2, 4, 8, 7), (6, 4, 3, 3)),
        ({"dilations": [2, 1], "pads": [2, 1, 2, 1]}, (2, 4, 8, 7), (6, 4, 3, 3)),
        ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 2, 6, 6), (2, 2, 2, 2)),
        ({"group": 4, "pads": [0, 1, 2, 1]}, (1, 8, 6, 6), (8, 2, 3, 3)),
        ({"pads": [1, 2], "strides": [2]}, (1, 3, 10), (5, 3, 3)),  # 1-D
        (
            {"pads": [1, 0, 1, 1, 0, 1], "strides": [2, 1, 1]},
            (1, 2, 5, 6, 5),
            (3, 2, 3, 2, 2),
        ),  # 3-D
        # 3-D with one pixel in height and width: one 2-D conv over [N, C, D, H*W]
        ({"pads": [1, 0, 0, 1, 0, 0], "strides": [2, 1, 1]}, (2, 4, 7, 3, 5), (6, 4, 3, 1, 1)),
        ({"dilations": [2, 1, 1], "group": 2}, (1, 4, 9, 2, 3), (6, 2, 3, 1, 1)),
        ({}, (1, 3, 4, 5, 6), (2, 3, 1, 1, 1)),
        ({"strides": [1, 2, 2]}, (1, 3, 4, 5, 6), (2, 3, 2, 1, 1)),  # spatial stride: by taps
    ],
)
def test_conv(attrs: dict[str, Any], x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> None:
    check("Conv", {"x": f32(*x_shape)}, attrs, {"w": f32(*w_shape), "b": f32(w_shape[0])})


def test_conv_transpose() -> None:
    check(
        "ConvTranspose",
        {"x": f32(1, 4, 5, 5)},
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1], "group": 2},
        {"w": f32(4, 3, 3, 3), "b": f32(6)},
    )


@settings(max_examples=60, deadline=None)
@given(
    kernel=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    out_pad=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    groups=st.sampled_from([1, 2]),
    one_d=st.booleans(),
    bias=st.booleans(),
    size=st.integers(1, 6),
)
def test_conv_transpose_every_phase_layout(
    kernel, strides, pads, out_pad, groups, one_d, bias, size
) -> None:
    """Strided transposed convs are one ordinary conv per output phase (sub-kernels of the
    flipped weight, interleaved); kernels below the stride, crops and the rest insert zeros.
    Both against onnxruntime, 1-D and 2-D, any padding, output padding below the stride."""
    rank = 1 if one_d else 2
    kernel, strides, out_pad = kernel[:rank], strides[:rank], out_pad[:rank]
    pads = pads[:rank] + pads[2 : 2 + rank]
    out_pad = [min(p, s - 1) for p, s in zip(out_pad, strides, strict=True)]
    outs = [
        s * (size - 1) + p + k - pads[a] - pads[rank + a]
        for a, (k, s, p) in enumerate(zip(kernel, strides, out_pad, strict=True))
    ]
    assume(all(o >= 1 for o in outs))
    initializers = {"w": f32(2 * groups, 3, *kernel)}
    if bias:
        initializers["b"] = f32(3 * groups)
    attrs = {
        "strides": list(strides), "pads": list(pads), "output_padding": list(out_pad),
        "group": groups, "kernel_shape": list(kernel),
    }  # fmt: skip
    check("ConvTranspose", {"x": f32(1, 2 * groups, *[size] * rank)}, attrs, initializers)


@settings(max_examples=40, deadline=None)
@given(
    block=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(*[st.integers(0, 2)] * 4),
    image=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    channels=st.integers(1, 3),
)
def test_col2im(block, strides, dilations, pads, image, channels) -> None:
    """Col2Im (torch's nn.Fold, MobileViTv2's patches back to an image) against onnxruntime:
    overlapping blocks summed, strides, dilations, pads, rows no block reaches."""
    spans = [image[a] + pads[a] + pads[2 + a] - dilations[a] * (block[a] - 1) - 1 for a in range(2)]
    assume(min(spans) >= 0)
    length = (spans[0] // strides[0] + 1) * (spans[1] // strides[1] + 1)
    attrs = {"strides": list(strides), "dilations": list(dilations), "pads": list(pads)}
    inputs = {"x": f32(2, channels * block[0] * block[1], length)}
    shapes = {"image": i64(image), "block": i64(block)}
    check("Col2Im", inputs, attrs, shapes, opset=18)


@settings(max_examples=40, deadline=None)
@given(
    signal=st.tuples(st.integers(1, 9), st.integers(1, 6)),
    axis=st.sampled_from([1, 2, -2, -3]),
    complex_in=st.booleans(),
    inverse=st.booleans(),
    onesided=st.booleans(),
    length=st.one_of(st.none(), st.integers(1, 12)),
    opset=st.sampled_from([17, 20]),
)
def test_dft(signal, axis, complex_in, inverse, onesided, length, opset) -> None:
    """DFT (FNet's token mixing) against onnxruntime: either signal axis, real or complex
    input, forward or inverse, one-sided, a dft_length that pads or truncates; the axis an
    attribute at opset 17, an input from 20."""
    assume(not (onesided and (inverse or complex_in)))  # irfft: the suite's node tests
    if opset == 17:
        assume(axis > 0)
    x = f32(2, *signal, 2 if complex_in else 1)
    inputs, names, attrs, inits = {"x": x}, ["x"], {"inverse": int(inverse)}, {}
    attrs["onesided"] = int(onesided)
    if length is not None:
        inits["length"] = np.asarray(length, np.int64)
    names.append("length" if length is not None else "")
    if opset >= 20:
        inits["axis"] = np.asarray(axis, np.int64)
        names.append("axis")
    else:
        attrs["axis"] = axis
    # sums of up to 2 x 12 products of normal samples: onnxruntime's FFT rounds to ~3e-6
    check("DFT", inputs, attrs, inits, opset=opset, node_inputs=names, atol=1e-4)


@settings(max_examples=30, deadline=None)
@given(
    samples=st.integers(4, 40),
    step=st.integers(1, 6),
    length=st.integers(2, 12),
    window=st.sampled_from(["none", "hann", "length only"]),
    complex_in=st.booleans(),
    onesided=st.booleans(),
)
def test_stft(samples, step, length, window, complex_in, onesided) -> None:
    """STFT (an audio model's in-graph spectrogram) against onnxruntime: frames by a gather,
    one GEMM with the window folded into the DFT matrix."""
    assume(length <= samples and not (onesided and complex_in))
    x = f32(2, samples, 2 if complex_in else 1)
    inits = {"step": np.asarray(step, np.int64)}
    names = ["x", "step", "", ""]
    if window == "hann":
        inits["window"] = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)).astype(
            np.float32
        )
        names[2] = "window"
    if window != "hann" or length % 2:
        inits["length"] = np.asarray(length, np.int64)
        names[3] = "length"
    # as for DFT: onnxruntime's FFT rounds to ~3e-6 (2.4e-6 where the exact value is 0)
    attrs = {"onesided": int(onesided)}
    check("STFT", {"x": x}, attrs, inits, opset=17, node_inputs=names, atol=1e-4)


@settings(max_examples=80, deadline=None)
@given(
    op=st.sampled_from(["DFT", "STFT", "Col2Im"]),
    ints=st.lists(st.integers(-2, 9), min_size=12, max_size=12),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 24), st.integers(1, 3)),
)
def test_fourier_and_col2im_bad_values_are_user_errors(op, ints, sizes) -> None:
    """Axes, lengths, steps, blocks, strides, dilations and pads anywhere in [-2, 9]: the
    import succeeds or refuses with a UserError (a clear message, exit 1), never another
    exception (a zero block or stride was a ZeroDivisionError)."""
    batch, length, parts = sizes
    inits: dict[str, np.ndarray] = {}
    attrs: dict[str, Any] = {}
    if op == "DFT":
        names = ["x", "len", "axis"]
        inits = {"len": np.asarray(ints[0], np.int64), "axis": np.asarray(ints[1], np.int64)}
        attrs = {"inverse": ints[2] % 2, "onesided": ints[3] % 2}
        x_shape, opset = [batch, length, parts], 20
    elif op == "STFT":
        names = ["x", "step", "", "frame"]
        inits = {"step": np.asarray(ints[0], np.int64), "frame": np.asarray(ints[1], np.int64)}
        x_shape, opset = [batch, length, parts], 17
    else:
        names = ["x", "image", "block"]
        inits = {"image": np.asarray(ints[0:2], np.int64), "block": np.asarray(ints[2:4], np.int64)}
        attrs = {"strides": ints[4:6], "dilations": ints[6:8], "pads": ints[8:12]}
        x_shape, opset = [batch, length, parts * 4], 18
    node = helper.make_node(op, names, ["y"], **attrs)
    model = make_model([node], {"x": f32(*x_shape)}, ["y"], inits, opset)
    try:
        from_onnx(model)
    except UserError:
        pass


def test_col2im_of_tiling_blocks_is_a_transpose() -> None:
    """Blocks that tile the image (stride = block): a reshape and a transpose, no conv."""
    attrs = {"strides": [2, 2]}
    model = check(
        "Col2Im",
        {"x": f32(1, 12, 12)},
        attrs,
        {"image": i64([6, 8]), "block": i64([2, 2])},
        opset=18,
    )
    module, _ = from_onnx(model)
    names = {op.name for op in module.walk()}
    assert "nnvm.transpose" in names and "nnvm.conv2d" not in names, names


def test_conv_transpose_stride_2_runs_one_conv_per_phase() -> None:
    """A UNet's 4x4 stride-2 upsampling: four 2x2 convs over the input, no zero insertion."""
    model = check(
        "ConvTranspose",
        {"x": f32(1, 4, 6, 6)},
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "kernel_shape": [4, 4]},
        {"w": f32(4, 3, 4, 4), "b": f32(3)},
    )
    module, _ = from_onnx(model)
    convs = [op for op in module.walk() if op.name == "nnvm.conv2d"]
    assert len(convs) == 4 and not [op for op in module.walk() if op.name == "nnvm.pad"]
    assert {tuple(c.operands[1].type.get_shape()[2:]) for c in convs} == {(2, 2)}


@pytest.mark.parametrize(
    "attrs, b_shape",
    [({}, (4, 5)), ({"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, (5, 4))],
)
def test_gemm(attrs: dict[str, Any], b_shape: tuple[int, ...]) -> None:
    a = f32(3, 4) if not attrs else f32(4, 3)
    check("Gemm", {"a": a}, attrs, {"b": f32(*b_shape), "c": f32(5)})
    check("Gemm", {"a": a, "b": f32(*b_shape)}, attrs)  # both operands at run time


@pytest.mark.parametrize(
    "a_shape, b_shape", [((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 3))]
)
def test_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    check("MatMul", {"a": f32(*a_shape)}, initializers={"b": f32(*b_shape)})
    check("MatMul", {"a": f32(*a_shape), "b": f32(*b_shape)})


@pytest.mark.parametrize(
    "op, attrs, shape",
    [
        (
            "MaxPool",
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
            (1, 3, 9, 9),
        ),
        ("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1, "dilations": [2, 1]}, (1, 2, 7, 8)),
        ("MaxPool", {"kernel_shape": [3], "auto_pad": "SAME_UPPER"}, (2, 3, 10)),
        ("MaxPool", {"kernel_shape": [2, 3, 2], "pads": [1, 1, 0, 0, 1, 1]}, (1, 2, 5, 6, 5)),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (1, 3, 7, 7)),
        (
            "AveragePool",
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
            (1, 3, 7, 7),
        ),
        (
            "AveragePool",
            {"kernel_shape": [2, 3, 3], "pads": [1, 1, 0, 0, 1, 1], "strides": [1, 2, 2]},
            (1, 2, 4, 6, 7),
        ),
        (
            "AveragePool",
            {
                "kernel_shape": [3, 2, 2],
                "pads": [1, 0, 1, 1, 1, 0],
                "ceil_mode": 1,
                "count_include_pad": 1,
            },
            (1, 2, 5, 5, 6),
        ),
    ],
)
def test_pooling(op: str, attrs: dict[str, Any], shape: tuple[int, ...]) -> None:
    check(op, {"x": f32(*shape)}, attrs)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [2, 3], "ceil_mode": 1, "dilations": [2, 1], "storage_order": 1},
    ],
)
def test_max_pool_indices(attrs: dict[str, Any]) -> None:
    check("MaxPool", {"x": f32(2, 3, 7, 8)}, attrs, n_out=2)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 2, 6)])
def test_global_pooling(op: str, shape: tuple[int, ...]) -> None:
    check(op, {"x": f32(*shape)})


def test_batch_norm_inference_and_training() -> None:
    params = {"s": f32(3), "b": f32(3), "m": f32(3), "v": np.abs(f32(3)) + 0.5}
    check("BatchNormalization", {"x": f32(2, 3, 4, 5)}, {"epsilon": 1e-3}, params)
    check(
        "BatchNormalization",
        {"x": f32(2, 3, 4)},
        {"training_mode": 1, "momentum": 0.8},
        params,
        n_out=3,
        opset=15,
    )


def test_normalizations() -> None:
    check(
        "InstanceNormalization",
        {"x": f32(2, 3, 4, 5)},
        {"epsilon": 1e-4},
        {"s": f32(3), "b": f32(3)},
    )
    check("LayerNormalization", {"x": f32(2, 4, 6)}, {"axis": -1}, {"s": f32(6), "b": f32(6)})
    check("LayerNormalization", {"x": f32(2, 4, 6)}, {"axis": 1}, {"s": f32(4, 6)}, n_out=3)
    check("LRN", {"x": f32(1, 6, 3, 3)}, {"size": 3, "alpha": 1e-3, "beta": 0.6, "bias": 1.5})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset, axis", [(13, 1), (13, -1), (11, 1), (11, 0)])
def test_softmax_across_opsets(op: str, opset: int, axis: int) -> None:
    check(op, {"x": f32(2, 3, 4)}, {"axis": axis}, opset=opset)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_recurrent(op: str, direction: str) -> None:
    dirs, hidden, gates = (2 if direction == "bidirectional" else 1), 5, (4 if op == "LSTM" else 3)
    inits = {
        "w": f32(dirs, gates * hidden, 3) * 0.5,
        "r": f32(dirs, gates * hidden, hidden) * 0.5,
        "b": f32(dirs, 2 * gates * hidden) * 0.1,
    }
    n_out = 3 if op == "LSTM" else 2
    check(
        op, {"x": f32(4, 2, 3)}, {"hidden_size": hidden, "direction": direction}, inits, n_out=n_out
    )


# -- tensors and shapes --------------------------------------------------------------------------


def test_reshape_flatten_transpose() -> None:
    check("Reshape", {"x": f32(2, 3, 4)}, initializers={"s": i64([0, -1, 2])})
    check("Flatten", {"x": f32(2, 3, 4)}, {"axis": 2})
    check("Transpose", {"x": f32(2, 3, 4)}, {"perm": [2, 0, 1]})
    check("Transpose", {"x": f32(2, 3, 4)})


def test_squeeze_unsqueeze_across_opsets() -> None:
    check("Squeeze", {"x": f32(1, 3, 1, 2)}, initializers={"a": i64([2])})
    check("Squeeze", {"x": f32(1, 3, 1, 2)}, {"axes": [0]}, opset=11)
    check("Squeeze", {"x": f32(1, 3, 1, 2)})
    check("Unsqueeze", {"x": f32(3, 2)}, initializers={"a": i64([0, -1])})
    check("Unsqueeze", {"x": f32(3, 2)}, {"axes": [1]}, opset=11)


def test_concat_split_slice() -> None:
    check("Concat", {"a": f32(2, 3), "b": f32(2, 1)}, {"axis": -1})
    check("Split", {"x": f32(6, 4)}, {"axis": 0}, initializers={"s": i64([2, 4])}, n_out=2)
    check("Split", {"x": f32(7, 2)}, {"num_outputs": 3}, n_out=3, opset=18)
    check("Split", {"x": f32(6, 2)}, {"split": [1, 5]}, n_out=2, opset=11)
    check(
        "Slice",
        {"x": f32(5, 6, 7)},
        initializers={
            "st": i64([4, 1]),
            "en": i64([0, 100]),
            "ax": i64([0, -1]),
            "sp": i64([-2, 3]),
        },
    )
    check("Slice", {"x": f32(5, 6)}, {"starts": [1], "ends": [-1], "axes": [1]}, opset=9)


def test_gather_expand_tile_pad() -> None:
    check("Gather", {"x": f32(5, 4)}, {"axis": 0}, {"i": i64([[0, -1], [2, 3]])})
    check("Gather", {"x": f32(5, 4), "i": i64([3, 1])}, {"axis": 1})
    check("GatherND", {"x": f32(2, 3, 4)}, {"batch_dims": 1}, {"i": i64([[[1, 2]], [[0, 3]]])})
    check("Expand", {"x": f32(3, 1)}, initializers={"s": i64([2, 1, 4])})
    check("Tile", {"x": f32(2, 3)}, initializers={"r": i64([2, 1])})
    check("Pad", {"x": f32(3, 4)}, {"mode": "reflect"}, {"p": i64([1, 2, 1, 0])})
    check(
        "Pad",
        {"x": f32(3, 4)},
        {"mode": "constant"},
        {"p": i64([0, 1, 2, 0]), "v": np.float32(1.5)},
    )
    check("Pad", {"x": f32(3, 4)}, {"pads": [1, 0, 0, 1], "mode": "edge"}, opset=10)


@pytest.mark.parametrize(
    "op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"]
)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions(op: str, keepdims: int) -> None:
    check(op, {"x": f32(2, 3, 4)}, {"keepdims": keepdims}, {"a": i64([0, -1])}, opset=18)
    check(op, {"x": f32(2, 3, 4)}, {"keepdims": keepdims}, opset=18)  # all axes


def test_reduce_axes_attribute_before_opset_13() -> None:
    check("ReduceSum", {"x": f32(2, 3, 4)}, {"axes": [1], "keepdims": 0}, opset=11)
    check("ReduceMean", {"x": f32(2, 3, 4)}, {"axes": [2]}, opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions(op: str) -> None:
    check(op, {"x": f32(3, 4, 5)}, {"axis": 1, "keepdims": 0})


@pytest.mark.parametrize(
    "attrs, scales, sizes",
    [
        ({"mode": "nearest"}, [1, 1, 2, 2], None),
        ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7, 5]),
        ({"mode": "cubic"}, [1, 1, 0.6, 1.5], None),
    ],
)
def test_resize(attrs: dict[str, Any], scales: list[float] | None, sizes: list[int] | None) -> None:
    inits = {"roi": np.zeros(0, np.float32)}
    names = ["x", "roi"]
    if scales is not None:
        inits["scales"] = np.asarray(scales, np.float32)
        names.append("scales")
    else:
        inits["sizes"] = i64(sizes or [])
        names += ["", "sizes"]
    check("Resize", {"x": f32(1, 2, 4, 5)}, attrs, inits, node_inputs=names)


def test_constant_producers() -> None:
    x = {"x": f32(2, 3)}
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["c"], value=value),
        helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["c", "rf"], ["y"]),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Constant", [], ["k"], value_ints=[1, 2]),
    ]
    inits = {"r0": np.int64(0), "r1": np.int64(3), "r2": np.int64(1)}
    model = make_model(nodes, x, ["y", "n", "k"], inits)
    module, params = from_onnx(model)
    got = run_reference(module, params, x)
    want = ort_run(model, x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    body = list(_main(module).body.block.ops)
    assert all(isinstance(op, ConstantOp | func.ReturnOp) for op in body)


# -- what the importer builds --------------------------------------------------------------------


def _main(module: Any) -> func.FuncOp:
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return fn


def test_shape_arithmetic_folds_away() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write it: only the
    reshape survives, with a static shape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["y"]),
    ]
    inits = {"zero": np.int64(0), "axes0": i64([0]), "minus1": i64([-1])}
    model = make_model(nodes, {"x": f32(2, 3, 4)}, ["y"], inits)
    module, params = from_onnx(model)
    names = [op.name for op in _main(module).body.block.ops]
    assert names == ["nnvm.reshape", "nnvm.relu", "func.return"]
    assert "shape = [2, 12]" in str(module)
    assert params == {}


def test_initializers_become_params_only_where_compute_uses_them() -> None:
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "wt"], ["y"]),
        helper.make_node("Reshape", ["y", "shape"], ["z"]),
    ]
    inits = {"w": f32(5, 4), "shape": i64([-1]), "unused/weight:0": f32(7)}
    model = make_model(nodes, {"x": f32(3, 4)}, ["z"], inits)
    module, params = from_onnx(model)
    # The folded transposes, named after the ONNX value they come from ("wt"), then
    # transposed back into dense's [N, K] layout.
    assert set(params) == {"wt.transpose"}
    np.testing.assert_array_equal(params["wt.transpose"], inits["w"])
    params_ops = [op for op in _main(module).body.block.ops if isinstance(op, ParamOp)]
    assert [op.key for op in params_ops] == ["wt.transpose"]


def test_param_names_are_sanitized_and_unique() -> None:
    nodes = [
        helper.make_node("Add", ["x", "a b"], ["y1"]),
        helper.make_node("Add", ["y1", "a_b"], ["y"]),
    ]
    inits = {"a b": f32(8, 9), "a_b": f32(8, 9)}
    _, params = from_onnx(make_model(nodes, {"x": f32(8, 9)}, ["y"], inits))
    assert sorted(params) == ["a_b", "a_b_1"]


def test_function_signature_carries_onnx_names() -> None:
    model = make_model(
        [helper.make_node("Relu", ["input:0"], ["out/0"])], {"input:0": f32(2)}, ["out/0"]
    )
    module, _ = from_onnx(model)
    text = str(module)
    assert 'nnvm.name = "input:0"' in text and 'nnvm.name = "out/0"' in text
    (y,) = run_reference(module, {}, {"input:0": np.array([-1.0, 2.0], np.float32)})
    np.testing.assert_array_equal(y, [0.0, 2.0])


# -- errors --------------------------------------------------------------------------------------


def test_unsupported_nodes_are_all_listed_in_one_error() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("RandomUniformLike", ["a"], ["b"], name="random_node"),
        helper.make_node("Relu", ["b"], ["c"]),  # downstream of an unsupported node: not listed
        helper.make_node("Det", ["x"], ["d"], name="det_node"),
        helper.make_node("Unique", ["x4"], ["e"], name="unique_node"),
        helper.make_node("Relu", ["x"], ["f"], name="weird_attr", foo=3),
        helper.make_node("Add", ["c", "d"], ["y"]),
    ]
    scales = {"scales": np.array([1, 1, 0.5, 0.5], np.float32)}
    model = make_model(nodes, {"x": f32(2, 2), "x4": f32(1, 1, 4, 4)}, ["y", "e", "f"], scales, 18)
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    message = info.value.format()
    assert "4 unsupported items" in message
    assert "'random_node' (RandomUniformLike, opset 18): op type not supported" in message
    assert "'det_node' (Det, opset 18)" in message
    assert "'unique_node' (Unique, opset 18): Unique's output has a shape that depends" in message
    assert "'weird_attr' (Relu, opset 18): attribute foo not supported" in message
    assert len(info.value.problems) == 4


def test_other_domains_and_dtypes_are_reported() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    node = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft", name="ms")
    graph = helper.make_graph([node], "g", [x], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    with pytest.raises(OnnxImportError, match=r"(?s)BFLOAT16.*com.microsoft.Gelu") as info:
        from_onnx(model)
    assert len(info.value.problems) == 2


def test_missing_symbolic_shape_names_the_input() -> None:
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["images"], ["y"])], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    with pytest.raises(MissingShapeError, match=r"input 'images' \(\[N, 3, 8, 8\]\)") as info:
        from_onnx(model)
    assert info.value.inputs == ["images"]
    module, _ = from_onnx(model, shape={"images": (2, 3, 8, 8)})
    assert "tensor<2x3x8x8xf32>" in str(module)
    with pytest.raises(UserError, match="inconsistent"):
        from_onnx(model, shape={"images": (2, 4, 8, 8)})


def test_malformed_files(tmp_path: Any) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0fnot a protobuf")
    with pytest.raises(UserError, match="not a valid ONNX model") as info:
        from_onnx(bad)
    assert str(bad) in info.value.format()
    with pytest.raises(UserError, match="no such file"):
        from_onnx(tmp_path / "missing.onnx")
    with pytest.raises(UserError, match="not a valid ONNX model"):
        from_onnx(b"")


def test_missing_initializer_is_a_clear_error() -> None:
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], {"x": f32(2)}, ["y"]
    )
    with pytest.raises(UserError, match="node 'add' \\(Add\\) uses 'w', which no graph input"):
        from_onnx(model)


def test_inconsistent_shapes_are_a_clear_error() -> None:
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        {"x": f32(2, 3)},
        ["y"],
        {"w": f32(4, 5)},
    )
    with pytest.raises(UserError, match="node 'mm' \\(MatMul\\)"):
        from_onnx(model)


def test_backend_specializes_on_shape_inputs() -> None:
    """Reshape's shape as a graph input: imported when the value arrives, cached per value."""
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    model = make_model([node], {"x": f32(2, 6), "shape": i64([3, 4])}, ["y"])
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    assert info.value.needs_known_inputs == ["shape"]
    rep = NNVMBackend.prepare(model)
    x = f32(2, 6)
    (a,) = rep.run([x, i64([3, 4])])
    (b,) = rep.run([x, i64([4, 3])])
    (c,) = rep.run([x, i64([3, 4])])
    assert a.shape == (3, 4) and b.shape == (4, 3) and c.shape == (3, 4)
    assert len(rep._cache) == 2


def test_supported_ops_cover_the_issue_list() -> None:
    from nnvm.testing.onnx_suite import ISSUE_OPS

    assert set(ISSUE_OPS) <= set(supported_ops())


def test_control_flow_with_known_decisions_is_inlined() -> None:
    """If on a shape-derived condition takes one branch; a Loop with a known trip count is
    unrolled (carried value and scan output), leaving straight-line compute."""
    scalar = onnx.ValueInfoProto
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"])], "then", [], [scalar(name="t")]
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [scalar(name="e")]
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
            helper.make_node("Mul", ["acc_out", "two"], ["scan"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2, 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("scan", TensorProto.FLOAT, [2, 3]),
        ],
    )
    nodes = [
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Greater", ["n", "three"], ["big"]),
        helper.make_node("If", ["big"], ["branch"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trips", "", "branch"], ["acc", "scans"], body=body),
    ]
    inits = {"three": np.int64(3), "trips": np.int64(3), "two": np.float32(2)}
    x = {"x": f32(2, 3)}
    model = make_model(nodes, x, ["acc", "scans"], inits, opset=16)
    module, params = from_onnx(model)
    names = {op.name for op in _main(module).body.block.ops}
    assert "nnvm.relu" in names and "nnvm.neg" not in names
    got = run_reference(module, params, x)
    for g, w in zip(got, ort_run(model, x), strict=True):
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    assert got[1].shape == (3, 2, 3)


def test_value_info_of_an_initializer_does_not_hide_its_value():
    """onnxscript's optimizer declares value_info for the constants it folds. The checker's
    copy drops declared shapes as hints; one of a Slice's axes initializer hid its value from
    onnx's inference, which then sliced the wrong axis and refused the Mul after it (a Falcon
    export's rotary embedding). Imported, it runs as onnxruntime runs it."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 19, 10, 64)).astype(np.float32)
    scale = rng.standard_normal((1, 1, 8, 64)).astype(np.float32)
    consts = {"starts": [0], "ends": [-2], "axes": [2], "steps": [1]}
    graph = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
            helper.make_node("Mul", ["s", "scale"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 19, 8, 64])],
        initializer=[numpy_helper.from_array(scale, "scale")]
        + [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in consts.items()],
        value_info=[helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    module, params = from_onnx(model)
    (got,) = run_reference(module, params, {"x": x})
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-6)
