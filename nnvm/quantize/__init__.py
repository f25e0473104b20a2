"""int8 quantization: calibration, quantized graphs, accuracy reports (issue 16)."""

from nnvm.passes.quantize_calibration import Calibration, TensorRange
from nnvm.quantize.calibrate import calibrate
from nnvm.quantize.model import quantize
from nnvm.quantize.report import accuracy_report, write_report

__all__ = [
    "Calibration",
    "TensorRange",
    "accuracy_report",
    "calibrate",
    "quantize",
    "write_report",
]
