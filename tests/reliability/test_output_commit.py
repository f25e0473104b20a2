"""Outputs are committed whole (the reliability issue, defect 9): nnvm-compile builds into a fresh
folder swapped in with one rename, so a killed or failed compile leaves the previous build
intact; -o naming a file is a clear error; nnvm-translate never overwrites its input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from nnvm.testing import onnx_models
from nnvm.tools.common import commit_folder


def _compile(model: Path, out: Path, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "nnvm.tools.compile", str(model), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _consistent(out: Path) -> str:
    """The model hash of a whole build folder (graph, params and library agree), else fail.
    (The library is read, not loaded: dlopen would hand back the first library of that path.)"""
    names = sorted(p.name for p in out.iterdir())
    assert names == ["graph.json", "libmodel.so", "model.h", "model.params", "nnvm_runtime.h"], (
        names
    )
    graph_hash = json.loads((out / "graph.json").read_text())["model_hash"]
    assert graph_hash.encode() in (out / "libmodel.so").read_bytes()
    assert graph_hash.encode() in (out / "model.params").read_bytes()[:64]
    return graph_hash


def test_killed_compile_leaves_the_previous_build(tmp_path: Path) -> None:
    env = {**os.environ, "NNVM_CACHE_DIR": "off"}
    old_model, new_model = tmp_path / "old.onnx", tmp_path / "new.onnx"
    onnx.save(onnx_models.mlp(sizes=(64, 32, 10)), old_model)
    onnx.save(onnx_models.mlp(sizes=(64, 48, 48, 10)), new_model)
    out = tmp_path / "out"
    assert _compile(old_model, out, env).wait(timeout=300) == 0
    _consistent(out)
    for delay in (0.3, 1.0, 2.0, 3.5):
        proc = _compile(new_model, out, env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        _consistent(out)  # the old build or the new one, whole
    assert _compile(new_model, out, env).wait(timeout=300) == 0
    _consistent(out)


def test_failed_commit_keeps_the_previous_folder(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    commit_folder(out, {"a": b"old", "b": b"old"})

    class Boom(dict):
        def items(self):
            yield "a", b"new"
            raise OSError(28, "No space left on device")

    from nnvm.support.errors import UserError

    with pytest.raises(UserError, match="No space left"):
        commit_folder(out, Boom())
    assert (out / "a").read_bytes() == b"old" and (out / "b").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no temporary folders left"
    commit_folder(out, {"c": b"new"})
    assert sorted(p.name for p in out.iterdir()) == ["c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_compile_to_a_file_is_a_user_error(tmp_path: Path) -> None:
    model, target = tmp_path / "m.onnx", tmp_path / "file.txt"
    onnx.save(onnx_models.mlp(), model)
    target.write_text("keep me")
    proc = _compile(model, target)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "is not a folder" in err and "internal error" not in err
    assert target.read_text() == "keep me"


def test_translate_never_overwrites_its_input(tmp_path: Path) -> None:
    model = tmp_path / "m.onnx"
    onnx.save(onnx_models.mlp(), model)
    before = model.read_bytes()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nnvm.tools.translate",
            "--import-onnx",
            str(model),
            "-o",
            str(model),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "refusing to overwrite the input" in proc.stderr
    assert model.read_bytes() == before
