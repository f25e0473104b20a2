"""--quantize / --calibration of nnvm-compile and nnvm-tune: each calibration source (inputs
in a .npz with or without a sample axis, a saved calibration, random:N), the errors for input
files that do not fit the model, and a quantized build run from the command line."""

from __future__ import annotations

from argparse import Namespace

import numpy as np
import onnx
import pytest
from onnx import helper

from nnvm.frontend import from_onnx
from nnvm.support.errors import UserError
from nnvm.testing.onnx_models import single_op
from nnvm.tools.compile import main as compile_main
from nnvm.tools.quantize_options import quantize_from_args

SHAPE = (1, 3, 8, 8)


def conv_model() -> onnx.ModelProto:
    return single_op(
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
        list(SHAPE),
        {"w": (4, 3, 3, 3)},
    )


@pytest.fixture(scope="module")
def graph():
    return from_onnx(conv_model())


def options(**kw) -> Namespace:
    base = dict(quantize="multiplier", calibration=None, calibration_method="minmax",
                quantize_first=True)  # fmt: skip
    return Namespace(**{**base, **kw})


def test_without_quantize_nothing_changes(graph):
    assert quantize_from_args(*graph, options(quantize=None)) is None
    with pytest.raises(UserError, match="pass --quantize too"):
        quantize_from_args(*graph, options(quantize=None, calibration="random:1"))
    with pytest.raises(UserError, match="needs --calibration"):
        quantize_from_args(*graph, options())


def _ranges(q) -> dict:
    return {k: v for k, v in q.params.items() if v.dtype == np.int8}


def test_npz_with_and_without_a_sample_axis(graph, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, *SHAPE)).astype(np.float32)
    np.savez(tmp_path / "many.npz", x=x)
    q = quantize_from_args(*graph, options(calibration=str(tmp_path / "many.npz")))
    assert "3 samples" in q.summary and "many.npz" in q.summary
    assert _ranges(q), "no int8 weights: nothing was quantized"
    np.savez(tmp_path / "one.npz", x=x[0])
    one = quantize_from_args(*graph, options(calibration=str(tmp_path / "one.npz")))
    assert "1 sample)" in one.summary
    # the activation range is what the samples show: three samples reach further than one
    # (minmax), so the two graphs' scales differ
    from nnvm.support.ir_text import ir_text

    assert ir_text(q.module) != ir_text(one.module)


def test_saved_calibration_and_random(graph, tmp_path):
    from nnvm.quantize import quantize

    module, params = graph
    _, _, cal = quantize(module, params, [{"x": np.ones(SHAPE, np.float32)}], method="minmax")
    cal.save(tmp_path / "cal.json")
    q = quantize_from_args(*graph, options(calibration=str(tmp_path / "cal.json")))
    assert "cal.json" in q.summary
    r = quantize_from_args(*graph, options(calibration="random:2"))
    assert "2 random inputs" in r.summary


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"y": np.zeros(SHAPE, np.float32)}, "missing x; unknown y"),
        ({"x": np.zeros((2, 3, 8, 9), np.float32)}, r"shape \[2, 3, 8, 9\]"),
    ],
)
def test_npz_that_does_not_fit(graph, tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(UserError, match=message) as err:
        quantize_from_args(*graph, options(calibration=str(tmp_path / "bad.npz")))
    assert err.value.location == str(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "text, message",
    [
        ("random:0", "count N >= 1"),
        ("random:many", "count N >= 1"),
        ("/nonexistent/cal.npz", "no such calibration file"),
    ],
)
def test_bad_calibration_names(graph, text, message):
    with pytest.raises(UserError, match=message):
        quantize_from_args(*graph, options(calibration=text))


def test_other_suffix_and_unreadable_npz(graph, tmp_path):
    (tmp_path / "c.txt").write_text("1 2 3")
    with pytest.raises(UserError, match="a .npz of inputs or a saved .json"):
        quantize_from_args(*graph, options(calibration=str(tmp_path / "c.txt")))
    (tmp_path / "c.npz").write_bytes(b"not a zip")
    with pytest.raises(UserError, match="not a readable .npz"):
        quantize_from_args(*graph, options(calibration=str(tmp_path / "c.npz")))


def test_random_refuses_integer_inputs():
    model = single_op(helper.make_node("Cast", ["x"], ["y"], to=1), [2, 3], {})
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.INT64
    module, params = from_onnx(model)
    with pytest.raises(UserError, match="give inputs in a .npz"):
        quantize_from_args(module, params, options(calibration="random:1"))


def test_nnvm_compile_runs_a_quantized_build(tmp_path, capsys):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    rc = compile_main([str(path), "-o", str(tmp_path / "out"), "--quantize", "multiplier",
                       "--calibration", "random:4", "--quantize-first", "--run"])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "quantized to int8 (multiplier requantization" in out
    assert "int8 vs float, cosine similarity 0.9" in out
    assert (tmp_path / "out" / "libmodel.so").is_file()


def test_nnvm_compile_quantize_errors_exit_1(tmp_path, capsys):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), path)
    rc = compile_main([str(path), "-o", str(tmp_path / "out"), "--quantize", "shift"])
    assert rc == 1
    assert "needs --calibration" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
