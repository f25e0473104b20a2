"""Shared test helpers: seeded ONNX model builders (onnx_models), the ONNX node-suite op lists
(onnx_suite) and hypothesis strategies for graphs (graph_strategies)."""
