"""int8 quantization: calibration, quantized graphs, accuracy reports (issue 16)."""
