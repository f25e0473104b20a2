"""One-node ONNX models for import-onnx-signal.test: python signal_models.py OUT_PREFIX writes
OUT_PREFIX.<name>.onnx for each."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(node, x_shape, consts, opset, weights=None):
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
    inits += [
        numpy_helper.from_array(np.ones(s, np.float32), k) for k, s in (weights or {}).items()
    ]
    graph = helper.make_graph(
        [node],
        node.op_type.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


i64 = np.int64
MODELS = {
    "col2im-tiles": model(
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 2]),
        [1, 12, 12],
        {"image": np.array([6, 8], i64), "block": np.array([2, 2], i64)},
        18,
    ),
    "col2im-overlap": model(
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"], pads=[1, 1, 1, 1]),
        [1, 18, 12],
        {"image": np.array([3, 4], i64), "block": np.array([3, 3], i64)},
        18,
    ),
    "dft": model(
        helper.make_node("DFT", ["x", "", "axis"], ["y"]),
        [2, 8, 5, 2],
        {"axis": np.array(1, i64)},
        20,
    ),
    "stft": model(
        helper.make_node("STFT", ["x", "step", "", "length"], ["y"]),
        [1, 40, 1],
        {"step": np.array(8, i64), "length": np.array(16, i64)},
        17,
    ),
    "conv3d-temporal": model(
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 0, 0, 1, 0, 0]),
        [1, 4, 6, 5, 7],
        {},
        17,
        weights={"w": (8, 4, 3, 1, 1)},
    ),
}

if __name__ == "__main__":
    for name, m in MODELS.items():
        onnx.save(m, f"{sys.argv[1]}.{name}.onnx")
