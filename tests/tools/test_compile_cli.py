"""nnvm-compile's handling of bad input: a located error, exit 1, no traceback, no output."""

from __future__ import annotations

import subprocess
import sys


def _compile(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.compile", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_missing_model_file(tmp_path):
    proc = _compile("nope.onnx", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert "nope.onnx: error: no such model file" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_garbage_model_file(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\x00\x01 not a protobuf \xff" * 10)
    proc = _compile("bad.onnx", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert "error:" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_bad_shape_argument(tmp_path):
    proc = _compile("--shape", "data", cwd=tmp_path)
    assert proc.returncode == 1
    assert "error: --shape expects NAME=D0,D1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_threads_sets_both_runtimes_thread_count(tmp_path):
    from nnvm.testing import onnx_models

    (tmp_path / "m.onnx").write_bytes(onnx_models.mlp(sizes=(8, 4)).SerializeToString())
    proc = _compile("m.onnx", "-o", "out", "--run", "--repeat", "1", "--threads", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 thread(s)" in proc.stdout


def test_threads_must_be_a_positive_number(tmp_path):
    for bad in ("0", "two"):
        proc = _compile("--threads", bad, cwd=tmp_path)
        assert proc.returncode == 1
        assert "--threads" in proc.stderr and "Traceback" not in proc.stderr
