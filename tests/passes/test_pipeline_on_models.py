"""The opt-level pipelines on the frontend's models: results unchanged (reference executor
before and after, and against onnxruntime), batch norms gone at O3, kernels and planned memory
reported."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from nnvm.frontend import from_onnx
from nnvm.passes.pipelines import pipeline_passes
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.support.param_store import attach_params, params_of
from nnvm.support.pass_statistics import statistics_of
from nnvm.testing import onnx_models

MODELS = {
    "resnet": onnx_models.resnet_like,
    "mobilenet": onnx_models.mobilenet_like,
    "transformer": onnx_models.transformer_encoder,
    "lstm": onnx_models.lstm_model,
    "mlp": onnx_models.mlp,
}


def optimize(model, level: int):
    module, params = from_onnx(model)
    attach_params(module, params)
    ctx = make_context()
    for p in pipeline_passes(level):
        p.apply(ctx, module)
        module.verify()
    return module, params_of(module)


def _image_model(name: str, nodes, inits, shape: list[int]):
    """An opset-18 model of `nodes` over float input "x" of `shape`, output "out"."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _build_matches_onnxruntime(model, x: np.ndarray, atol: float) -> None:
    """build() of the model at O3 gives onnxruntime's output on input `x`."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.runtime import graph_runtime

    module, params = from_onnx(model)
    g, lib, p = build(module, params=params)
    m = graph_runtime.create(g, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(x=x)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_pipeline_keeps_results(name: str, level: int) -> None:
    model = MODELS[name]()
    inputs = onnx_models.random_inputs(model, seed=1)
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, inputs)
    module, params = optimize(model, level)
    got = run_reference(module, params, inputs)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)
    names = [op.name for op in module.walk()]
    if level == 3:
        assert "nnvm.batch_norm" not in names
    assert any(n == "func.call" for n in names)


def report(module) -> dict[str, int]:
    stats = statistics_of(module)
    return {
        "kernels": stats["fuse"]["kernels"].value,
        "groups": stats["fuse"]["groups"].value,
        "planned": stats["plan-memory"]["planned-bytes"].value,
        "naive": stats["plan-memory"]["naive-bytes"].value,
    }


def test_o3_on_small_resnet_folds_batch_norm_into_kernels() -> None:
    module, _ = optimize(MODELS["resnet"](), 3)
    r = report(module)
    assert r["planned"] < r["naive"]
    assert r["kernels"] <= r["groups"]


@pytest.mark.slow
def test_o3_on_resnet18(capsys) -> None:
    model = onnx_models.resnet_like(image=224, width=64, stages=(2, 2, 2, 2), num_classes=1000)
    inputs = onnx_models.random_inputs(model, seed=0)
    module0, params0 = from_onnx(model)
    before = run_reference(module0, params0, inputs)
    module, params = optimize(model, 3)
    after = run_reference(module, params, inputs)
    np.testing.assert_allclose(after[0], before[0], rtol=1e-3, atol=1e-3)
    assert "nnvm.batch_norm" not in [op.name for op in module.walk()]
    r = report(module)
    with capsys.disabled():
        print(
            f"\nResNet-18 at O3: {r['groups']} kernel calls, {r['kernels']} distinct kernels, "
            f"arena {r['planned'] / 2**20:.1f} MiB vs naive {r['naive'] / 2**20:.1f} MiB"
        )
    assert r["planned"] < r["naive"] / 2


def test_squeeze_excite_stays_blocked_and_matches_onnxruntime() -> None:
    """conv -> ReduceMean over H, W (keepdims) -> 1x1 conv -> sigmoid -> mul: the mean reduces
    the blocked tensor (no transform of the whole activation back to NCHW), and the build's
    output equals onnxruntime's."""
    from onnx import helper, numpy_helper

    from nnvm.dialects.nnvm.reduce import ReduceMeanOp

    rng = np.random.default_rng(3)
    inits = [
        numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
        for n, s in (("w", (32, 16, 3, 3)), ("w1", (8, 32, 1, 1)), ("w2", (32, 8, 1, 1)))
    ]
    inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["y", "axes"], ["m"], keepdims=1),
        helper.make_node("Conv", ["m", "w1"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["s2"]),
        helper.make_node("Sigmoid", ["s2"], ["g"]),
        helper.make_node("Mul", ["y", "g"], ["out"]),
    ]
    model = _image_model("se", nodes, inits, [1, 16, 10, 10])
    module, _ = optimize(model, 3)
    means = [op for op in module.walk() if isinstance(op, ReduceMeanOp)]
    assert means and all(len(op.results[0].type.get_shape()) == 5 for op in means)
    _build_matches_onnxruntime(model, rng.standard_normal((1, 16, 10, 10), np.float32), 1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_split_resize_concat_stay_blocked_and_match_onnxruntime(mode: str) -> None:
    """A C2f-style chunk along C, a residual add of one piece, the concat, and a 2x upsample
    (scale 1 along C) in NCHW<b>c (no whole-tensor transforms between the convs), with the
    build's output equal to onnxruntime's."""
    from onnx import helper, numpy_helper

    from nnvm.dialects.nnvm.resize import ResizeOp
    from nnvm.dialects.nnvm.transform import SplitOp

    rng = np.random.default_rng(5)
    inits = [
        numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
        for n, s in (("w", (32, 8, 3, 3)), ("w2", (16, 48, 1, 1)))
    ]
    inits.append(numpy_helper.from_array(np.array([16, 16], np.int64), "parts"))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    resize = {"mode": mode}
    if mode == "nearest":
        resize.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Split", ["y", "parts"], ["a", "b"], axis=1),
        helper.make_node("Add", ["b", "b"], ["s"]),
        helper.make_node("Concat", ["a", "b", "s"], ["c"], axis=1),
        helper.make_node("Resize", ["c", "", "scales"], ["u"], **resize),
        helper.make_node("Conv", ["u", "w2"], ["out"]),
    ]
    model = _image_model("c2f", nodes, inits, [1, 8, 7, 9])
    module, _ = optimize(model, 3)
    moved = [op for op in module.walk() if isinstance(op, SplitOp | ResizeOp)]
    assert moved and all(len(op.operands[0].type.get_shape()) == 5 for op in moved)
    _build_matches_onnxruntime(model, rng.standard_normal((1, 8, 7, 9), np.float32), 1e-4)
