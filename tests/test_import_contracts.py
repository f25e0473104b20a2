"""The import rules of docs/design.md as import-linter contracts (pyproject.toml): checked on a
flat install of the package (import-linter reads one folder per package, and our rooms map
into nnvm from four folders), so a wrong-way import fails the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORED = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", "Output", ".venv", "examples", "bench"
)


def test_rooms_import_down_the_pipeline(tmp_path: Path) -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is missing: install the test extra (import-linter)")
    site, source = tmp_path / "site", tmp_path / "source"
    # a copy, so setuptools' build/ folder is not left in the checkout
    shutil.copytree(ROOT, source, ignore=IGNORED)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run(
        [lint, str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
