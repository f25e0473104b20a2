"""nnvm-opt on bad input: truncated, garbage and mistyped IR give located errors and exit 1,
never a traceback or an internal error, and never an output file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nnvm.registry import strip_anchors
from nnvm.tools.opt import run

VALID = """\
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %c = nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %b = nnvm.constant dense<1.0> : tensor<4x1x1xf32>
  %a = nnvm.add %c, %b : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %r = nnvm.clip %a {min = 0.0, max = 6.0} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %r : tensor<1x4x4x4xf32>
}
"""


def _run_on(tmp_path: Path, text: str, capsys, *extra: str) -> tuple[int, str, Path]:
    src = tmp_path / "in.mlir"
    src.write_text(text)
    out = tmp_path / "out.mlir"
    if out.exists():
        out.unlink()
    code = run([str(src), "-o", str(out), *extra])
    err = capsys.readouterr().err
    return code, err, out


def test_valid_input_passes(tmp_path, capsys):
    code, err, out = _run_on(tmp_path, VALID, capsys, "-p", "cse,dce")
    assert code == 0, err
    assert "nnvm.conv2d" in out.read_text()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(1, len(VALID) - 2))
def test_truncated_input_is_a_located_error(tmp_path_factory, capsys, cut):
    tmp_path = tmp_path_factory.mktemp("trunc")
    code, err, out = _run_on(tmp_path, VALID[:cut], capsys)
    assert "Traceback" not in err and "internal error" not in err
    if VALID[:cut].count("{") > VALID[:cut].count("}"):  # an open body cannot be valid
        assert code == 1
    if code == 1:
        assert "in.mlir:" in err and "error:" in err
        assert not out.exists()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(0, len(VALID)), st.text(min_size=1, max_size=6))
def test_garbage_never_crashes(tmp_path_factory, capsys, where, junk):
    tmp_path = tmp_path_factory.mktemp("junk")
    code, err, out = _run_on(tmp_path, VALID[:where] + junk + VALID[where:], capsys)
    assert code in (0, 1)
    assert "Traceback" not in err and "internal error" not in err
    if code == 1:
        assert "error:" in err and not out.exists()


@pytest.mark.parametrize(
    "old,new,message",
    [
        ("4x3x3x3xf32", "4x2x3x3xf32", "input channels"),
        ("1x4x4x4xf32", "1x4x5x4xf32", "disagrees"),
        ("strides = [2, 2]", "strides = [0, 2]", "strides"),
        ("nnvm.add", "nnvm.addd", "not registered"),
    ],
)
def test_mistyped_input_points_at_the_op(tmp_path, capsys, old, new, message):
    text = VALID.replace(old, new)
    assert text != VALID
    code, err, out = _run_on(tmp_path, text, capsys)
    assert code == 1
    assert message in err, err
    assert err.startswith(f"{tmp_path / 'in.mlir'}:"), err
    assert not out.exists()


def test_binary_garbage_file(tmp_path, capsys):
    src = tmp_path / "bin.mlir"
    src.write_bytes(bytes(range(256)))
    assert run([str(src)]) == 1
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_mlir_pipeline_anchors_are_accepted():
    assert strip_anchors("builtin.module(func.func(cse),dce)") == "cse,dce"
    assert strip_anchors("cse,dce") == "cse,dce"


def test_list_passes_and_dialects(capsys):
    assert run(["--list-passes"]) == 0
    listed = capsys.readouterr().out
    for name in ("cse", "dce", "canonicalize", "infer-shapes"):
        assert f"  {name}:" in listed
    assert run(["--show-dialects"]) == 0
    assert "nnvm" in capsys.readouterr().out


def test_console_script_exit_codes(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text(VALID[:50])
    proc = subprocess.run(
        [sys.executable, "-m", "nnvm.tools.opt", str(src)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "bad.mlir:" in proc.stderr and "Traceback" not in proc.stderr


SPLIT = """\
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// -----
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
"""


class _NoStdin:
    def read(self) -> str:
        raise AssertionError("nnvm-opt read stdin instead of the named file")


@pytest.mark.parametrize(
    "argv",
    [
        ["--split-input-file", "{src}"],
        ["{src}", "--split-input-file"],
        ["--split-input-file", "{src}", "-p", "cse"],
    ],
)
def test_bare_split_input_file_is_a_flag(tmp_path, capsys, monkeypatch, argv):
    """`--split-input-file FILE` reads FILE (mlir-opt's reading), not stdin with FILE as marker."""
    src = tmp_path / "in.mlir"
    src.write_text(SPLIT)
    monkeypatch.setattr(sys, "stdin", _NoStdin())
    assert run([a.format(src=src) for a in argv]) == 0
    out = capsys.readouterr().out
    first, second = out.split("// -----\n")
    assert "@first" in first and "@second" in second


def test_split_input_file_with_a_custom_marker(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(SPLIT.replace("// -----", "// ---"))
    assert run(["--split-input-file=// ---", str(src)]) == 0
    first, second = capsys.readouterr().out.split("// ---\n")
    assert "@first" in first and "@second" in second


def test_split_input_file_with_an_empty_marker_is_a_usage_error(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(SPLIT)
    with pytest.raises(SystemExit) as exit_:
        run(["--split-input-file=", str(src)])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "nnvm-opt: error: --split-input-file=MARKER needs a non-empty marker" in err
    assert "Traceback" not in err


def test_opt_level_pipelines_expand_into_their_passes(tmp_path, capsys):
    """-p nnvm-O3 runs (and prints, and times) each pass of the level, like an mlir-opt
    pipeline, rather than one opaque pass."""
    from nnvm.passes.pipelines import PIPELINES
    from nnvm.registry import build_pipeline

    for level, names in PIPELINES.items():
        assert [p.name for p in build_pipeline([f"nnvm-O{level}"])] == list(names)
    assert [p.name for p in build_pipeline(["cse,nnvm-O1,dce"])] == ["cse", *PIPELINES[1], "dce"]
    code, err, _ = _run_on(
        tmp_path, VALID, capsys, "-p", "nnvm-O3", "--mlir-print-ir-after-all", "--mlir-timing"
    )
    assert code == 0, err
    dumps = [line for line in err.splitlines() if "IR Dump After" in line]
    assert [d.split("(")[-1].split(")")[0] for d in dumps] == list(PIPELINES[3])
    assert "nnvm-O3" not in err
