"""quantize-int8 end to end: a small conv net and an MLP (onnx.helper, imported by the
frontend) quantized, built for the CPU, bit-exact against a numpy int8 reference of the same
arithmetic and within quantization error of fp32; both requantizers; bad input."""

from __future__ import annotations

import numpy as np
import pytest
from int8_numpy import Int8Numpy
from onnx import TensorProto, helper, numpy_helper

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.passes.quantize_calibration import Calibration
from nnvm.passes.quantize_int8 import quantize_module
from nnvm.quantize import accuracy_report, quantize, write_report
from nnvm.quantize.model import prepare
from nnvm.reference import run_reference
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models


def _weights(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return {
        "w1": w(8, 3, 3, 3),
        "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "w2": w(16, 8, 3, 3),
        "b2": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "w3": w(10, 64),
        "b3": (rng.standard_normal(10) * 0.1).astype(np.float32),
    }


WEIGHTS = _weights()


def conv_net():
    """conv3x3+bias straight into conv3x3/2+bias (a linear bottleneck, as MobileNet has), relu,
    maxpool 2, flatten, gemm: exact float ops between the anchors, so the int8 reference can be
    bit-exact."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node(
            "Conv", ["c1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1] * 4, strides=[2, 2]
        ),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in WEIGHTS.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv_net_int8(ref: Int8Numpy, x: np.ndarray) -> np.ndarray:
    w = WEIGHTS
    h = ref.conv2d(x, w["w1"], w["b1"], "conv2d:0", pad=1)
    h = np.maximum(ref.conv2d(h, w["w2"], w["b2"], "conv2d:1", stride=2, pad=1), 0)
    h = h.reshape(1, 16, 2, 2, 2, 2).max(axis=(3, 5)).reshape(1, 64)
    return ref.dense(h, w["w3"], w["b3"], "dense:0")


MLP = onnx_models.mlp(sizes=(16, 32, 32, 10), seed=4)


def mlp_int8(ref: Int8Numpy, x: np.ndarray, skip_first: bool) -> np.ndarray:
    p = {i.name: numpy_helper.to_array(i) for i in MLP.graph.initializer}
    for k in range(3):
        w, b = p[f"fc{k}.weight"], p[f"fc{k}.bias"]
        if k == 0 and skip_first:
            x = (x @ w.T + b).astype(np.float32)  # the float layer: compared with a tolerance
        else:
            x = ref.dense(x, w, b, f"dense:{k}")
        x = np.maximum(x, 0) if k < 2 else x
    return x


def _feeds(name: str, shape, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)]


def _cpu(module, params):
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)

    def run(feed):
        m.run(**feed)
        return np.array(m.get_output(0))

    return run


@pytest.mark.parametrize("requant", ["multiplier", "float", "shift"])
def test_conv_net_is_bit_exact_with_the_int8_reference(requant: str) -> None:
    module, params = from_onnx(conv_net())
    qm, qp, cal = quantize(
        module, params, _feeds("x", (1, 3, 8, 8), 16, 0), requant=requant, skip_first=False
    )
    names = [op.name for op in qm.walk()]
    assert names.count("nnvm.conv2d") == 2 and names.count("nnvm.dense") == 1
    assert all(v.dtype == np.int8 for k, v in qp.items() if k.endswith(".weight"))
    if requant == "shift":
        assert not any(k.endswith(".multiplier") for k in qp)
    ref = Int8Numpy(cal, "percentile", requant, last="dense:0")
    run = _cpu(qm, qp)
    tests = _feeds("x", (1, 3, 8, 8), 6, 1)
    for feed in tests:
        want = conv_net_int8(ref, feed["x"])
        np.testing.assert_array_equal(run(feed), want)
        np.testing.assert_array_equal(run_reference(qm, qp, feed)[0], want)
    report = accuracy_report(module, params, qm, qp, tests, engine="reference")
    assert report["outputs"][0]["cosine_min"] > 0.99


@pytest.mark.parametrize("requant", ["multiplier", "float", "shift"])
def test_mlp_quantized_for_the_cpu(requant: str, tmp_path) -> None:
    module, params = from_onnx(MLP)
    qm, qp, cal = quantize(module, params, _feeds("input", (1, 16), 32, 0), requant=requant)
    assert sum(op.name == "nnvm.dense" for op in qm.walk()) == 3
    assert sum(v.dtype == np.int8 for v in qp.values()) == 2  # skip_first: layer 0 stays float
    ref = Int8Numpy(cal, "percentile", requant, last="dense:2")
    run = _cpu(qm, qp)
    tests = _feeds("input", (1, 16), 20, 1)
    exact = 0
    for feed in tests:
        got = run(feed)
        # the float first layer may round differently in its last bit (CPU vs numpy sums),
        # which can move an int8 input of the next layer by one step: nearly always exact
        want = mlp_int8(ref, feed["input"], skip_first=True)
        np.testing.assert_allclose(got, want, rtol=0, atol=0.05 * np.abs(want).max())
        exact += np.array_equal(got, want)
    assert exact >= len(tests) - 2
    report = accuracy_report(module, params, qm, qp, tests, engine="cpu")
    out = report["outputs"][0]
    assert out["cosine_min"] > 0.99 and out["top1_agreement"] >= 0.9
    assert 1 <= out["top1_classes"] <= 10
    assert out["centered"]["cosine_mean"] > 0.9
    write_report(report, tmp_path / "report.json")
    assert '"cosine_mean"' in (tmp_path / "report.json").read_text()


def test_mlp_all_layers_int8_is_bit_exact_on_the_reference_executor() -> None:
    module, params = from_onnx(MLP)
    qm, qp, cal = quantize(
        module, params, _feeds("input", (1, 16), 8, 0), method="kl", skip_first=False
    )
    ref = Int8Numpy(cal, "kl", "multiplier", last="dense:2")
    for feed in _feeds("input", (1, 16), 5, 2):
        want = mlp_int8(ref, feed["input"], skip_first=False)
        np.testing.assert_array_equal(run_reference(qm, qp, feed)[0], want)


def test_quantization_refuses_bad_input() -> None:
    module, params = from_onnx(MLP)
    with pytest.raises(UserError, match="at least one input"):
        quantize(module, params, [])
    with pytest.raises(UserError, match="does not match"):
        quantize(module, params, [{"x": np.zeros((1, 16), np.float32)}])
    with pytest.raises(UserError, match="requant mode"):
        quantize(module, params, _feeds("input", (1, 16), 1, 0), requant="fixed")
    with pytest.raises(UserError, match="calibration method"):
        quantize(module, params, _feeds("input", (1, 16), 1, 0), method="mean")
    prepared = prepare(module, params)
    partial = Calibration(tensors={}, samples=1)
    with pytest.raises(UserError, match=r"no range for tensor 'dense:1/in0'.*never seen"):
        quantize_module(prepared, partial)
    other, other_params = from_onnx(conv_net())
    _, _, cal = quantize(other, other_params, _feeds("x", (1, 3, 8, 8), 1, 0))
    with pytest.raises(UserError, match="no range for tensor 'dense:1"):
        quantize(module, params, cal)


@pytest.mark.parametrize("requant", ["multiplier", "shift"])
def test_attention_matmuls_of_two_activations_quantize(requant: str) -> None:
    """BERT-style: the projections (dense) and both attention matmuls (activation x
    activation, per-tensor scales on each side) go int8; softmax and layer norm stay float."""
    model = onnx_models.transformer_encoder(layers=1, seq=8, hidden=16, heads=2, ffn=32)
    module, params = from_onnx(model)
    feeds = [onnx_models.random_inputs(model, seed=k) for k in range(8)]
    qm, qp, cal = quantize(module, params, feeds, requant=requant)
    assert {"matmul:0/in1", "matmul:1/in1"} <= set(cal.tensors)
    kinds = [op.name for op in qm.walk()]
    assert kinds.count("nnvm.softmax") == 1 and kinds.count("nnvm.layer_norm") == 2
    assert kinds.count("nnvm.bit_shift") == 7  # 5 of the 6 dense (skip_first) + 2 matmuls
    tests = [onnx_models.random_inputs(model, seed=100 + k) for k in range(4)]
    report = accuracy_report(module, params, qm, qp, tests, engine="reference")
    assert report["outputs"][0]["cosine_min"] > 0.99


def test_wide_sums_accumulate_in_float64_and_stay_exact() -> None:
    """Weights of one magnitude over K = 1100: 127 * sum|wq| passes 2^24, so the dense sums in
    float64; still bit-exact with the integer reference."""
    rng = np.random.default_rng(5)
    w = np.where(rng.random((4, 1100)) < 0.5, -0.01, 0.01).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)],
        "wide",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1100])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module, params = from_onnx(model)
    feeds = [{"x": np.sign(f["x"]) * 0.5} for f in _feeds("x", (1, 1100), 4, 0)]
    qm, qp, cal = quantize(module, params, feeds, method="minmax", skip_first=False)
    (dense,) = [op for op in qm.walk() if op.name == "nnvm.dense"]
    assert "f64" in str(dense.results[0].type)
    ref, run = Int8Numpy(cal, "minmax", "multiplier", last="dense:0"), _cpu(qm, qp)
    for feed in feeds:
        np.testing.assert_array_equal(run(feed), ref.dense(feed["x"], w, None, "dense:0"))


def test_depthwise_convs_quantize_per_channel() -> None:
    """MobileNet-style: depthwise and pointwise convs, linear bottlenecks feeding the next conv
    and residual adds; shift requantization stays within quantization error."""
    model = onnx_models.mobilenet_like()
    module, params = from_onnx(model)
    feeds = [onnx_models.random_inputs(model, seed=k) for k in range(6)]
    qm, qp, cal = quantize(module, params, feeds, requant="shift")
    grouped = [op for op in qm.walk() if op.name == "nnvm.conv2d" and op.attr("groups") > 1]
    # each depthwise weight is an int8 param cast to the accumulator type
    assert grouped and all(
        str(op.operands[1].op.operands[0].type).endswith("xi8>") for op in grouped
    )
    assert sum(v.dtype == np.int8 for v in qp.values()) == len(cal.signatures) - 1
    tests = [onnx_models.random_inputs(model, seed=100 + k) for k in range(4)]
    report = accuracy_report(module, params, qm, qp, tests, engine="reference")
    assert report["outputs"][0]["cosine_min"] > 0.99
