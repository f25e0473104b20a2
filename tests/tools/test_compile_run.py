"""nnvm-compile --run on models with symbolic dims and non-float inputs: inputs of the compiled
shapes and the model's dtypes (token ids inside the vocabulary), --input files, a clear error
for a symbolic dim left unset, and the relative-error comparison against onnxruntime."""

from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnvm.tools.compile import _index_bound, _make_inputs, _relative_error, _tolerance, main

VOCAB = 50


def conv_net(batch="N") -> onnx.ModelProto:
    """A small conv net whose batch dim is symbolic."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.w"),
        numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "conv.b"),
        numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "fc.w"),
        numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "fc.b"),
    ]
    nodes = [
        helper.make_node("Conv", ["data", "conv.w", "conv.b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "convnet",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 5])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def tiny_lm(vocab: int = VOCAB, hidden: int = 16) -> onnx.ModelProto:
    """Embedding (Gather) + MatMul + Softmax over int64 input_ids[batch, seq], masked by a bool
    attention_mask[batch, seq]; a token id outside the vocabulary fails in onnxruntime."""
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(rng.standard_normal((vocab, hidden)).astype(np.float32), "emb"),
        numpy_helper.from_array(rng.standard_normal((hidden, hidden)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
    ]
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.INT64),
        helper.make_node("Gather", ["emb", "ids"], ["x"]),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Softmax", ["h"], ["s"], axis=-1),
        helper.make_node("Unsqueeze", ["attention_mask", "axes"], ["m"]),
        helper.make_node("Where", ["m", "s", "zero"], ["probs"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tinylm",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.BOOL, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", "seq", hidden])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _compile(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.compile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def _save(tmp_path, name: str, model: onnx.ModelProto) -> str:
    (tmp_path / name).write_bytes(model.SerializeToString())
    return name


def _output_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("output ")]


def test_dynamic_batch_vision_model_runs_with_shape(tmp_path):
    model = _save(tmp_path, "conv.onnx", conv_net())
    proc = _compile(
        model, "-o", "out", "--shape", "data=4,3,8,8", "--run", "--repeat", "1", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = _output_lines(proc.stdout)
    assert line.startswith("output 0 'logits': [4, 5] float32 max relative error ")
    assert line.endswith("vs onnxruntime: OK")
    rel = float(re.search(r"max relative error (\S+)", line).group(1))
    assert rel < 1e-4


def test_int64_transformer_runs_with_one_shape_and_the_same_threads(tmp_path):
    """--shape input_ids binds batch and seq, which attention_mask shares: no more flags."""
    model = _save(tmp_path, "lm.onnx", tiny_lm())
    proc = _compile(
        model,
        "-o",
        "out",
        "--shape",
        "input_ids=2,7",
        "--run",
        "--repeat",
        "1",
        "--threads",
        "1",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 thread(s)" in proc.stdout
    (line,) = _output_lines(proc.stdout)
    assert line.startswith("output 0 'probs': [2, 7, 16] float32 max relative error ")
    assert line.endswith("vs onnxruntime: OK")


def test_input_files_give_values_and_shapes(tmp_path):
    model = _save(tmp_path, "lm.onnx", tiny_lm())
    ids = np.arange(15, dtype=np.int64).reshape(3, 5) % VOCAB
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "mask.npy", np.ones((3, 5), bool))
    proc = _compile(
        model,
        "-o",
        "out",
        "--input",
        "input_ids=ids.npy",
        "--input",
        "attention_mask=mask.npy",
        "--run",
        "--repeat",
        "1",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = _output_lines(proc.stdout)
    assert "[3, 5, 16]" in line and line.endswith("OK")


def test_symbolic_dim_without_shape_is_a_clear_error(tmp_path):
    model = _save(tmp_path, "conv.onnx", conv_net(batch="batch"))
    proc = _compile(model, "-o", "out", "--run", cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "error: input 'data' has a symbolic dimension 'batch' (axis 0); "
        "pass --shape data=1,3,8,8" in proc.stderr
    )
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input", "input_ids", "--run"], "error: --input expects NAME=FILE.npy"),
        (["--input", "input_ids=missing.npy", "--run"], "missing.npy: error: no such input file"),
        (["--input", "input_ids=junk.npy", "--run"], "junk.npy: error: not a readable .npy array"),
        (["--input", "input_ids=ids.npy"], "error: --input gives inputs for --run"),
        (["--input", "nope=ids.npy", "--run"], "error: --input nope: the model has no input"),
        (
            ["--input", "input_ids=ids.npy", "--shape", "input_ids=2,3", "--run"],
            "error: --input input_ids: the file holds shape [2, 4], the model was compiled for "
            "[2, 3]",
        ),
        (
            ["--input", "input_ids=floats.npy", "--run"],
            "error: --input input_ids: the file holds float32, the model takes int64",
        ),
    ],
)
def test_bad_input_files(tmp_path, monkeypatch, capsys, args, message):
    """Caught before the build (in process: the same main() the console script runs)."""
    model = _save(tmp_path, "lm.onnx", tiny_lm())
    np.save(tmp_path / "ids.npy", np.zeros((2, 4), np.int64))
    np.save(tmp_path / "floats.npy", np.zeros((2, 4), np.float32))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    monkeypatch.chdir(tmp_path)
    code = main([model, "-o", "out", *args])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert message in captured.err
    assert "internal error" not in captured.err
    assert "graph passes" not in captured.err  # no build was started
    assert not (tmp_path / "out").exists()


def test_token_ids_stay_inside_the_vocabulary():
    model = tiny_lm(vocab=7)
    assert _index_bound(model, "input_ids") == 7  # through the Cast to the Gather
    assert _index_bound(model, "attention_mask") is None
    graph = SimpleNamespace(
        inputs=[
            {"name": "input_ids", "shape": [4, 64], "dtype": "int64"},
            {"name": "attention_mask", "shape": [4, 64], "dtype": "bool"},
        ]
    )
    ours, theirs = _make_inputs(model, graph, {})
    ids, mask = theirs["input_ids"], theirs["attention_mask"]
    assert ids.dtype == np.int64 and ids.shape == (4, 64)
    assert ids.min() >= 0 and ids.max() < 7 and len(np.unique(ids)) > 1
    assert mask.dtype == np.bool_ and mask.any() and not mask.all()
    assert ours["input_ids"] is ids


def test_floats_follow_the_model_dtype_and_shape():
    graph = SimpleNamespace(inputs=[{"name": "data", "shape": [2, 3, 8, 8], "dtype": "float32"}])
    _, theirs = _make_inputs(conv_net(), graph, {})
    assert theirs["data"].dtype == np.float32 and theirs["data"].shape == (2, 3, 8, 8)
    assert theirs["data"].std() > 0.5


def test_relative_error_is_relative_to_the_largest_expected_value():
    want = np.array([100.0, 1.0, -2.0], np.float32)
    rel, scale = _relative_error(want + np.array([0, 0.5, 0], np.float32), want)
    assert scale == 100.0 and rel == pytest.approx(0.005)
    assert rel > _tolerance(np.dtype(np.float32))  # MISMATCH
    nan = np.array([np.nan, 1.0])
    assert _relative_error(nan, nan)[0] == 0.0
    assert _relative_error(np.array([np.nan, 1.0]), np.array([0.0, 1.0]))[0] == np.inf
    assert _tolerance(np.dtype(np.int64)) == 0.0
