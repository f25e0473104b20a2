"""The benchmark models (issue 8), built with onnx.helper and seeded weights: full-size
versions of the frontend test models."""

from __future__ import annotations

from collections.abc import Callable

import onnx

from nnvm.testing import onnx_models

MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    "mlp": lambda: onnx_models.mlp(batch=1, sizes=(784, 512, 512, 10)),
    "resnet18": lambda: onnx_models.resnet_like(
        image=224, width=64, stages=(2, 2, 2, 2), num_classes=1000
    ),
    "mobilenetv2": lambda: onnx_models.mobilenet_like(
        image=224,
        width_mult=1.0,
        blocks=onnx_models.MOBILENET_V2_BLOCKS,
        last_channels=1280,
        num_classes=1000,
    ),
    "bert2": lambda: onnx_models.transformer_encoder(
        layers=2, seq=128, hidden=256, heads=4, ffn=1024
    ),
    "lstm": lambda: onnx_models.lstm_model(seq=32, input_size=128, hidden=256),
}
