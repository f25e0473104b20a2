"""Regression tests for what the ONNX mutation fuzzer found (nnvm/testing/fuzz_onnx.py): models
onnxruntime refuses as invalid that we imported and ran, each rebuilt from its mutation."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnvm.frontend import from_onnx
from nnvm.support.errors import UserError


def _model(node, x_shape, y_shape, inits=(), opset=17, y_type=TensorProto.FLOAT):
    graph = helper.make_graph(
        [node],
        "finding",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", y_type, y_shape)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _refused(model, match: str) -> None:
    with pytest.raises(UserError, match=match):
        from_onnx(model)


def test_a_flag_attribute_other_than_0_or_1_is_refused() -> None:
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=-2)
    model = _model(node, [3, 5], [3], [("axes", np.array([1], np.int64))], opset=13)
    _refused(model, r"ReduceSum.*keepdims must be 0 or 1, got -2")


@pytest.mark.parametrize(
    "axes, match",
    [
        (np.array([[1]], np.int64), r"must be 1-D, got shape \[1, 1\]"),
        (np.array([99], np.int64), "axis 99 is out of range for rank 2"),
        (np.array([1, -1], np.int64), "name an axis twice"),
    ],
)
def test_bad_reduction_axes_are_refused(axes, match) -> None:
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    _refused(_model(node, [3, 5], [3], [("axes", axes)], opset=13), match)


def test_slice_starts_must_be_1d() -> None:
    node = helper.make_node("Slice", ["x", "starts", "ends"], ["y"])
    inits = [("starts", np.array([[1]], np.int64)), ("ends", np.array([3], np.int64))]
    _refused(_model(node, [4, 5], [2, 5], inits), r"must be 1-D")


def test_gemm_bias_must_broadcast_to_the_output_one_way() -> None:
    """[4, 1] + [1, 4] broadcasts both ways to [4, 4]; Gemm's C must broadcast to [1, 4]."""
    node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1)
    inits = [("w", np.ones((4, 3), np.float32)), ("c", np.ones((4, 1), np.float32))]
    _refused(_model(node, [1, 3], [1, 4], inits), r"bias C \[4, 1\] does not broadcast")


def test_an_opset_newer_than_onnx_knows_is_refused() -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    _refused(_model(node, [2], [2], opset=99), "imports opset 99 of the default ONNX domain")


def test_a_repeated_attribute_is_refused() -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    node.attribute.append(helper.make_attribute("axis", 0))
    _refused(_model(node, [2, 3], [2, 3]), "invalid ONNX model: .*axis.* appeared multiple times")


def test_a_name_defined_twice_is_refused() -> None:
    a = helper.make_node("Relu", ["x"], ["y"])
    b = helper.make_node("Neg", ["x"], ["y"])
    graph = helper.make_graph(
        [a, b],
        "twice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _refused(model, "y")


def test_a_declared_output_type_its_node_cannot_produce_is_refused() -> None:
    """onnxruntime refuses this (Relu of float declared double); we ran it and returned float."""
    node = helper.make_node("Relu", ["x"], ["y"])
    _refused(_model(node, [2], [2], y_type=TensorProto.DOUBLE), "invalid ONNX model")


def test_a_wrong_declared_output_shape_is_a_hint_not_an_error() -> None:
    """onnxruntime warns and runs; so do we (the importer infers shapes itself)."""
    node = helper.make_node("Relu", ["x"], ["y"])
    module, _ = from_onnx(_model(node, [2, 3], [7]))
    assert "tensor<2x3xf32>" in str(module)


def test_a_non_utf8_attribute_name_is_refused() -> None:
    node = helper.make_node("Relu", ["x"], ["y"], zzzz=1)
    blob = _model(node, [2], [2]).SerializeToString()
    _refused(blob.replace(b"zzzz", b"\xff\xfe\xfd\xfc"), "an attribute name of graph node #0")


@pytest.mark.parametrize("xs, ws", [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((2, 3), (3, 0))])
def test_empty_matmuls_build_and_run(xs, ws) -> None:
    """A matmul with no rows, no columns or an empty reduction (the register-blocked schedule
    divided by its zero-row tile)."""
    import nnvm
    from nnvm.compiler import build
    from nnvm.runtime import graph_runtime

    w = np.ones(ws, np.float32)
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    module, params = from_onnx(_model(node, list(xs), None, [("w", w)]))
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    x = np.ones(xs, np.float32)
    m.run(x=x)
    np.testing.assert_array_equal(m.get_output(0), x @ w)


def test_lstm_without_hidden_size_is_refused() -> None:
    from nnvm.testing import onnx_models

    model = onnx_models.lstm_model(seq=2, input_size=3, hidden=4, num_classes=2)
    lstm = next(n for n in model.graph.node if n.op_type == "LSTM")
    keep = [a for a in lstm.attribute if a.name != "hidden_size"]
    del lstm.attribute[:]
    lstm.attribute.extend(keep)
    _refused(model, "hidden_size None must be given")


def test_an_undefined_output_element_type_is_refused() -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    _refused(_model(node, [2], [2], y_type=TensorProto.UNDEFINED), "element type 0")


def test_shape_merge_conflicts_alone_do_not_refuse_a_model() -> None:
    """torch's dynamo exporter writes rotary embeddings whose Concat onnx's strict inference
    cannot merge (a LLaMA export: 'Inferred=1 Declared=0'); onnxruntime runs it, and shapes
    are hints to us. Any other inference error still refuses the model."""
    from nnvm.frontend.onnx.importer import _only_shape_merges

    merge = (
        "[ShapeInferenceError] Inference error(s): (op_type:Concat, node name: node_cat_1): "
        "[ShapeInferenceError] Can't merge shape info. Both inferred and declared dimension "
        "have values but they differ. Inferred=1 Declared=0 Dimension=0 "
    )
    assert _only_shape_merges(merge + merge.split("Inference error(s): ")[1])
    typed = (
        "[TypeInferenceError] Inference error(s): (op_type:Add, node name: n): "
        "[TypeInferenceError] Input types differ"
    )
    assert not _only_shape_merges(merge + typed.split("Inference error(s): ")[1])
    assert not _only_shape_merges("something else entirely")
