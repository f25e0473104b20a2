"""nnvm publishes its dialects and passes as an xDSL Universe: stock xdsl-opt parses nnvm IR and
runs nnvm passes; nnvm-opt in turn sees every installed universe (xDSL's own included)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from nnvm.registry import pass_factories

FUSE_INPUT = Path(__file__).resolve().parents[2] / "filecheck" / "passes" / "fuse.mlir"


def test_xdsl_opt_runs_nnvm_passes() -> None:
    xdsl_opt = shutil.which("xdsl-opt")
    if xdsl_opt is None:
        pytest.fail("xdsl-opt is missing: it comes with the xdsl dependency")
    proc = subprocess.run(
        [xdsl_opt, str(FUSE_INPUT), "-p", "fuse"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "func.func private @fused_" in proc.stdout and "nnvm.conv2d" in proc.stdout


def test_nnvm_sees_every_universe() -> None:
    names = pass_factories()
    for name in ("fuse", "lower-te-to-loops", "convert-to-llvm", "convert-parallel-to-threads"):
        assert name in names
    assert "convert-linalg-to-loops" in names or "canonicalize" in names
