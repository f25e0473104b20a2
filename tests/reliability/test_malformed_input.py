"""Regression tests for bad input that hung or crashed (the reliability issue, defects 3, 4 and
6): an unclosed string literal (xDSL's lexer backtracks exponentially on it), a crafted params
blob whose size wraps around, an attribute that fails verification while it is parsed."""

from __future__ import annotations

import ctypes
import re
import struct
import subprocess
import sys

import pytest

from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.support.params import save_params
from nnvm.testing import onnx_models


def _opt(text: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.opt", "-", "--allow-unregistered-dialect", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("tail", [40, 400])
def test_unclosed_string_is_a_located_error_not_a_hang(tail: int) -> None:
    text = '"test.op"() {a = "NCHW4c} : () -> () // ' + "x" * tail + "\n"
    proc = _opt(text)
    assert proc.returncode == 1, proc.stderr
    assert "<stdin>:1:18: error: unterminated string literal" in proc.stderr


def test_strings_with_escapes_and_comment_quotes_still_parse() -> None:
    text = '"test.op"() {a = "x\\"y // not a comment"} : () -> ()  // a " in a comment\n'
    proc = _opt(text)
    assert proc.returncode == 0, proc.stderr
    assert 'y // not a comment"' in proc.stdout


def test_attribute_failing_verification_while_parsed_is_a_user_error() -> None:
    proc = _opt('"test.op"() {a = 300 : i8} : () -> ()\n')
    assert proc.returncode == 1, proc.stderr
    assert "out of range for type i8" in proc.stderr and "internal error" not in proc.stderr


def _wrapping_blob() -> bytes:
    """One uint8 tensor of 64 x (2^58 - 1) bytes: its data would end exactly 2^64 bytes after
    the 64-byte-aligned start, so an unchecked `pos + nbytes` wraps to 0 and reparses."""
    name = b"w"
    rows, cols = 64, (1 << 58) - 1
    head = b"NNVMPRM\0" + struct.pack("<II", 1, 1000)
    tensor = struct.pack("<I", len(name)) + name + struct.pack("<II", 7, 2)
    tensor += struct.pack("<qq", rows, cols) + struct.pack("<Q", rows * cols)
    blob = head + tensor
    return blob + b"\0" * (64 - len(blob) % 64)


def test_c_params_parser_refuses_wrapping_sizes_and_negative_dims() -> None:
    module, params = from_onnx(onnx_models.mlp())
    graph, lib, p = build(module, params=params)
    blob = _wrapping_blob()
    handle = lib.lib.nnvm_create(blob, len(blob))
    assert not handle
    assert "truncated" in lib.last_error()
    negative = bytearray(blob)
    struct.pack_into("<q", negative, 16 + 4 + 1 + 8, -64)
    handle = lib.lib.nnvm_create(bytes(negative), len(negative))
    assert not handle
    assert "negative" in lib.last_error()
    good = save_params(p, graph.model_hash)
    handle = lib.lib.nnvm_create(good, len(good))
    assert handle
    lib.lib.nnvm_destroy(ctypes.c_void_p(handle))


def _clip_model(opsets):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    graph = helper.make_graph(
        [node],
        "clip",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [
            numpy_helper.from_array(np.array(0, np.float32), "lo"),
            numpy_helper.from_array(np.array(6, np.float32), "hi"),
        ],
    )
    return helper.make_model(graph, opset_imports=opsets)


def test_model_without_a_default_opset_is_refused_not_read_as_opset_1() -> None:
    from onnx import helper

    from nnvm.support.errors import UserError

    with pytest.raises(UserError, match="imports no opset of the default ONNX domain"):
        from_onnx(_clip_model([helper.make_opsetid("com.example", 1)]))


def test_node_arity_is_checked_against_the_schema() -> None:
    """Clip-6 takes one input: min/max as inputs would be ignored, so the model is refused."""
    from onnx import helper

    from nnvm.support.errors import UserError

    with pytest.raises(UserError, match="has 3 inputs; Clip-6 takes 1 to 1"):
        from_onnx(_clip_model([helper.make_opsetid("", 6)]))
    module, _ = from_onnx(_clip_model([helper.make_opsetid("", 13)]))
    assert module is not None


@pytest.mark.parametrize(
    "op, inputs, missing",
    [("TopK", ["x", ""], "#1 (K)"), ("CumSum", ["x", ""], "#1 (axis)"), ("Tile", ["x", ""], "#1")],
)
def test_an_empty_required_input_is_named(op: str, inputs: list[str], missing: str) -> None:
    """A node that leaves an input its schema requires empty (TopK without k) is refused with
    the input's name, not a TypeError from reading it; an empty optional input still imports."""
    from onnx import TensorProto, helper

    from nnvm.support.errors import UserError

    def model(node_inputs: list[str]):
        outputs = ["v", "i"] if op == "TopK" else ["y"]
        graph = helper.make_graph(
            [helper.make_node(op, node_inputs, outputs)],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])

    expected = f"input {re.escape(missing)}.* is required; the node leaves it empty"
    with pytest.raises(UserError, match=expected):
        from_onnx(model(inputs))
    clip = helper.make_graph(
        [helper.make_node("Clip", ["x", "", "hi"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor("hi", TensorProto.FLOAT, [], [1.0])],
    )
    assert from_onnx(helper.make_model(clip, opset_imports=[helper.make_opsetid("", 18)]))[0]


def test_a_crashing_pass_is_an_internal_error_with_exit_2(tmp_path) -> None:
    """A pass that raises is a bug in nnvm: reported as an internal error, exit 2 (not 1)."""
    plugin = tmp_path / "crash_plugin.py"
    plugin.write_text(
        "from dataclasses import dataclass\n"
        "from xdsl.passes import ModulePass\n"
        "from xdsl.universe import Universe\n"
        "@dataclass(frozen=True)\n"
        "class Crash(ModulePass):\n"
        "    name = 'crash'\n"
        "    def apply(self, ctx, op):\n"
        "        raise ZeroDivisionError('boom')\n"
        "UNIVERSE = Universe(all_passes={'crash': lambda: Crash})\n"
    )
    for extra in ([], ["--verify-diagnostics"]):
        proc = _opt(
            "func.func @f() {\n  func.return\n}\n",
            f"--load-pass-plugin={plugin}",
            "-p",
            "crash",
            *extra,
        )
        assert proc.returncode == 2, (extra, proc.stderr)
        assert "internal error: pass 'crash' crashed with ZeroDivisionError: boom" in proc.stderr


def test_dead_nodes_are_dropped_and_a_graph_without_outputs_is_refused() -> None:
    """Defect 6: the importer's dead-code elimination erased attached ops (an assertion)."""
    import numpy as np
    from onnx import TensorProto, helper

    from nnvm.reference import run_reference
    from nnvm.support.errors import UserError

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["unused"])]
    opset = [helper.make_opsetid("", 17)]
    module, params = from_onnx(
        helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=opset)
    )
    (out,) = run_reference(module, params, [np.array([-1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(out, [0.0, 2.0])
    assert "nnvm.neg" not in str(module)
    with pytest.raises(UserError, match="no outputs"):
        from_onnx(
            helper.make_model(helper.make_graph(nodes[:1], "g", [x], []), opset_imports=opset)
        )


def test_absurd_sizes_are_located_user_errors() -> None:
    """Defect 6: conv pads of 2^62 overflowed i64 later on; an LSTM hidden_size of 2^40 died of
    MemoryError; a graph input of 2^42 elements."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from nnvm.support.errors import UserError

    opset = [helper.make_opsetid("", 17)]
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[2**62, 0, 0, 0])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [w],
    )
    with pytest.raises(UserError, match="larger than the 1024 GiB nnvm supports"):
        from_onnx(helper.make_model(conv, opset_imports=opset))
    hidden = 2**40
    lstm = helper.make_graph(
        [helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=hidden)],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 3]),
            helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 4 * hidden, 3]),
            helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 4 * hidden, hidden]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    with pytest.raises(UserError, match="graph input 'W'"):
        from_onnx(helper.make_model(lstm, opset_imports=opset))
