"""The ONNX frontend: `from_onnx(model, shape=None, dtype="float32") -> (module, params)`."""

from nnvm.frontend.onnx.importer import MissingShapeError, OnnxImportError, from_onnx, load_model
from nnvm.frontend.onnx.registry import CONVERTERS


def supported_ops() -> list[str]:
    """ONNX op types (default domain) the importer converts."""
    return sorted(CONVERTERS)


__all__ = ["MissingShapeError", "OnnxImportError", "from_onnx", "load_model", "supported_ops"]
