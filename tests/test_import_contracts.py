"""The import rules of docs/design.md as import-linter contracts (pyproject.toml): checked on a
flat install of the package (import-linter reads one folder per package, and our rooms map
into nnvm from four folders), so a wrong-way import fails the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pip_site import install_copy

ROOT = Path(__file__).resolve().parents[1]


def test_rooms_import_down_the_pipeline(tmp_path: Path) -> None:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is missing: install the test extra (import-linter)")
    site = install_copy(ROOT, tmp_path)
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
