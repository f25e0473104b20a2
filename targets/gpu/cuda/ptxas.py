"""ptxas, where one is installed (PATH, or the `nvidia-cuda-nvcc` wheel): compiles PTX to check it
the way the CUDA driver's JIT will, and reports each kernel's registers and shared memory."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from nnvm.support.errors import UserError


@cache
def find_ptxas() -> str | None:
    """The ptxas binary: $NNVM_PTXAS, PATH, then the nvidia-cuda-nvcc wheel; None if none."""
    env = os.environ.get("NNVM_PTXAS")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("ptxas")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        for candidate in sorted(Path(root).glob("*/bin/ptxas")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


@dataclass(frozen=True)
class KernelResources:
    name: str
    registers: int
    shared_bytes: int
    spill_bytes: int


def run_ptxas(ptx: str, arch: str = "sm_90") -> list[KernelResources]:
    """Assemble `ptx` for `arch`; a UserError with ptxas's messages when it refuses."""
    ptxas = find_ptxas()
    if ptxas is None:
        raise UserError("ptxas is not installed (PATH or pip install nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory(prefix="nnvm-ptxas-") as tmp:
        src = Path(tmp) / "kernels.ptx"
        src.write_text(ptx)
        cmd = [ptxas, f"-arch={arch}", "-v", "-o", str(Path(tmp) / "kernels.cubin"), str(src)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise UserError(f"ptxas -arch={arch} rejected the PTX:\n{r.stderr.strip()}")
    return parse_resources(r.stderr)


def parse_resources(log: str) -> list[KernelResources]:
    """Per-kernel lines of `ptxas -v` (Compiling entry function 'k' ... Used N registers)."""
    out: list[KernelResources] = []
    name: str | None = None
    spill = 0
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            name, spill = m.group(1), 0
        elif m := re.search(r"(\d+) bytes spill stores", line):
            spill = int(m.group(1))
        elif name is not None and (m := re.search(r"Used (\d+) registers", line)):
            smem = re.search(r"(\d+) bytes smem", line)
            out.append(
                KernelResources(name, int(m.group(1)), int(smem.group(1)) if smem else 0, spill)
            )
            name = None
    return out


__all__ = ["KernelResources", "find_ptxas", "parse_resources", "run_ptxas"]
