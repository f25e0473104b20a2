"""Frontends: models from training frameworks into the graph dialect."""

from nnvm.frontend.onnx import from_onnx

__all__ = ["from_onnx"]
