"""Benchmarks: nnvm against onnxruntime (python -m bench)."""
