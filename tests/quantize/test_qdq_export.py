"""The QDQ export is the same int8 model: onnxruntime running it agrees with our int8 build
(far closer than either is to fp32), and what it cannot export is a located UserError."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.quantize import quantize
from nnvm.quantize.model import prepare
from nnvm.quantize.qdq_export import qdq_model
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models
from nnvm.testing.onnx_models import random_inputs


def _ort(model) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def test_onnxruntime_runs_the_same_int8_transformer():
    model = onnx_models.transformer_encoder(layers=1, seq=16, hidden=32, heads=2, ffn=64)
    module, params = from_onnx(model)
    cal_inputs = [random_inputs(model, seed=100 + k) for k in range(8)]
    q_module, q_params, cal = quantize(module, params, cal_inputs, engine="reference")
    qdq = qdq_model(model, prepare(module, params), cal)
    ops = [n.op_type for n in qdq.graph.node]
    assert ops.count("MatMul") == 8 and ops.count("QuantizeLinear") >= 7 * 2
    graph, lib, p = build(q_module, params=q_params)
    ours = graph_runtime.create(graph, lib, nnvm.cpu(0))
    ours.set_input(**p)
    int8, fp32 = _ort(qdq), _ort(model)
    for seed in (1, 2, 3):
        feed = random_inputs(model, seed=seed)
        ours.run(**feed)
        got = ours.get_output(0)
        theirs = int8.run(None, feed)[0]
        float_err = np.abs(fp32.run(None, feed)[0] - theirs).max()
        assert float_err > 1e-3  # quantization is visible ...
        assert np.abs(got - theirs).max() <= 1e-3 * float_err  # ... and both made the same


@pytest.mark.parametrize("family", ["resnet", "mobilenet"])
def test_onnxruntime_runs_the_same_int8_cnn(family: str):
    """Conv + BatchNormalization pairs export as one Conv over the folded int8 weights and the
    int32 bias (the BN node dropped; depthwise convs too), the classifier Gemm as int8 too;
    with channels small enough that every int8 sum is exact in float32, onnxruntime's int8
    equals ours."""
    if family == "resnet":
        model = onnx_models.resnet_like(image=32, width=16, stages=(1, 1), num_classes=5)
    else:
        model = onnx_models.mobilenet_like(image=32, width_mult=0.5, num_classes=5)
    module, params = from_onnx(model)
    cal_inputs = [random_inputs(model, seed=100 + k) for k in range(4)]
    q_module, q_params, cal = quantize(module, params, cal_inputs, engine="reference")
    qdq = qdq_model(model, prepare(module, params), cal)
    ops = [n.op_type for n in qdq.graph.node]
    original = [n.op_type for n in model.graph.node]
    assert ops.count("BatchNormalization") == 1  # the float stem's (skip_first)
    assert ops.count("Conv") == original.count("Conv") and ops.count("Gemm") == 1
    graph, lib, p = build(q_module, params=q_params)
    ours = graph_runtime.create(graph, lib, nnvm.cpu(0))
    ours.set_input(**p)
    int8, fp32 = _ort(qdq), _ort(model)
    for seed in (1, 2):
        feed = random_inputs(model, seed=seed)
        ours.run(**feed)
        theirs = int8.run(None, feed)[0]
        float_err = np.abs(fp32.run(None, feed)[0] - theirs).max()
        assert float_err > 1e-3
        assert np.abs(ours.get_output(0) - theirs).max() <= 1e-3 * float_err


def test_an_unmatched_model_is_refused():
    model = onnx_models.resnet_like(image=16, width=4, stages=(1,), num_classes=3)
    module, params = from_onnx(model)
    cal = quantize(module, params, [random_inputs(model, seed=0)], engine="reference")[2]
    other = onnx_models.resnet_like(image=16, width=4, stages=(1, 1), num_classes=3)
    with pytest.raises(UserError, match="conv2d anchors but 6 ONNX Conv nodes"):
        qdq_model(other, prepare(module, params), cal)
