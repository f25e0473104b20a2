"""Test helper: pip-install a copy of a source tree into a private site folder (no build/ left in
the checkout, nothing installed into the environment the suite runs in)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

IGNORED = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", "Output", ".venv", "examples", "bench"
)


def install_copy(source: Path, workdir: Path) -> Path:
    """Copy `source` under `workdir`, pip-install it (no deps, no build isolation) into
    `workdir/site`, and return that folder, for PYTHONPATH."""
    copy, site = workdir / "source" / source.name, workdir / "site"
    shutil.copytree(source, copy, ignore=IGNORED)
    proc = subprocess.run(
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
            str(copy),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return site
