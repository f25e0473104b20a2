"""The shared model builders (nnvm.testing.onnx_models) import and match onnxruntime on random
inputs: small sizes in the fast tier, the benchmark sizes in the full tier."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from xdsl.dialects import func

from nnvm.frontend.onnx import from_onnx
from nnvm.reference import run_reference
from nnvm.testing import onnx_models as M

RTOL, ATOL = 1e-3, 1e-4

FULL_SIZE: dict[str, dict[str, Any]] = {
    "resnet_like": {"image": 224, "width": 64, "stages": (2, 2, 2, 2), "num_classes": 1000},
    "mobilenet_like": {
        "image": 224,
        "width_mult": 1.0,
        "blocks": M.MOBILENET_V2_BLOCKS,
        "last_channels": 1280,
        "num_classes": 1000,
    },
    "transformer_encoder": {"layers": 2, "seq": 128, "hidden": 256, "heads": 4, "ffn": 1024},
    "lstm_model": {"seq": 32, "input_size": 128, "hidden": 256},
    "mlp": {"sizes": (784, 512, 512, 10)},
}


def _compare(model: onnx.ModelProto, seed: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
    feeds = M.random_inputs(model, seed)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    module, params = from_onnx(model)
    module.verify()
    got = run_reference(module, params, feeds)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    return module, params


@pytest.mark.parametrize("name", sorted(M.MODELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_small_models_match_onnxruntime(name: str, seed: int) -> None:
    builder: Callable[..., onnx.ModelProto] = M.MODELS[name]
    _compare(builder(seed=seed), seed)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(M.MODELS))
def test_full_size_models_match_onnxruntime(name: str) -> None:
    _compare(M.MODELS[name](**FULL_SIZE[name]))


def _op_names(module: Any) -> list[str]:
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return [op.name for op in fn.body.block.ops]


def test_models_carry_only_real_compute() -> None:
    """BatchNorm stays a graph op, ReLU6 becomes clip, GELU's constants are inline scalars, and
    the transformer's Shape/Gather/Concat head reshapes are folded away."""
    resnet = _op_names(from_onnx(M.resnet_like())[0])
    assert "nnvm.batch_norm" in resnet and "nnvm.max_pool2d" in resnet
    assert "nnvm.global_avg_pool2d" in resnet and "nnvm.bias_add" in resnet
    mobile, _ = from_onnx(M.mobilenet_like())
    assert "nnvm.clip" in _op_names(mobile) and "groups = " in str(mobile)
    encoder = _op_names(from_onnx(M.transformer_encoder())[0])
    assert {"nnvm.layer_norm", "nnvm.erf", "nnvm.softmax", "nnvm.matmul", "nnvm.dense"} <= set(
        encoder
    )
    assert not {"nnvm.gather", "nnvm.concat"} & set(encoder)
    assert "nnvm.lstm" in _op_names(from_onnx(M.lstm_model())[0])


def test_builders_are_seeded() -> None:
    assert M.resnet_like(seed=3).SerializeToString() == M.resnet_like(seed=3).SerializeToString()
    assert M.mlp(seed=1).SerializeToString() != M.mlp(seed=2).SerializeToString()
