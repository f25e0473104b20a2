"""The ONNX frontend: `from_onnx(model, shape=None, dtype="float32") -> (module, params)`."""

from nnvm.frontend.onnx.coverage import op_support
from nnvm.frontend.onnx.importer import MissingShapeError, OnnxImportError, from_onnx, load_model


def supported_ops() -> list[str]:
    """ONNX op types (default domain) the importer converts, by a converter of its own or
    through the op's ONNX function body (`op_support()` says which and at what opsets)."""
    return [row.op_type for row in op_support()]


__all__ = [
    "MissingShapeError",
    "OnnxImportError",
    "from_onnx",
    "load_model",
    "op_support",
    "supported_ops",
]
