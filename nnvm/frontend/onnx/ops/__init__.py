"""ONNX op converters, one module per family; importing this package registers them all."""

from nnvm.frontend.onnx.ops import composite, control, einsum, elementwise, nn, quantize, tensor

__all__ = ["composite", "control", "einsum", "elementwise", "nn", "quantize", "tensor"]
