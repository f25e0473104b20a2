"""Floating-point work of an ONNX model (2 per multiply-accumulate of Conv, Gemm, MatMul and
LSTM; elementwise ops are not counted), from ONNX shape inference: the GFLOP/s column."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import shape_inference


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    shapes: dict[str, list[int]] = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def model_flops(model: onnx.ModelProto) -> int:
    shapes = _shapes(model)
    total = 0
    for node in model.graph.node:
        if node.op_type == "Conv":
            out = shapes[node.output[0]]
            w = shapes[node.input[1]]
            total += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif node.op_type == "Gemm":
            a, out = shapes[node.input[0]], shapes[node.output[0]]
            trans_a = any(a.name == "transA" and a.i for a in node.attribute)
            k = a[0] if trans_a else a[1]
            total += 2 * int(np.prod(out)) * k
        elif node.op_type == "MatMul":
            a, out = shapes[node.input[0]], shapes[node.output[0]]
            total += 2 * int(np.prod(out)) * a[-1]
        elif node.op_type == "LSTM":
            x, w, r = (shapes[n] for n in node.input[:3])
            seq, batch, dirs = x[0], x[1], w[0]
            total += 2 * seq * batch * dirs * (w[1] * w[2] + r[1] * r[2])
    return total
