"""Linking on the host: find the C compiler once, and link a model library (kernel objects, the
generated entry point, the C runtime with its parallel-loop runtime, device kernels' blobs)
into one .so."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph


def c_compiler(cc: str | None = None) -> str:
    """The C compiler that links libraries: `cc`, else $CC, else cc or gcc on PATH."""
    found = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if found is None:
        raise UserError("no C compiler found to link the library (install cc or set CC)")
    return found


def link_shared(
    inputs: Sequence[str | Path], out: Path, flags: Sequence[str] = (), cc=None
) -> Path:
    """`cc -shared -fPIC -o out inputs... flags...`; a failure is a UserError with cc's output."""
    cmd = [c_compiler(cc), "-shared", "-fPIC", "-O2", "-o", str(out), *map(str, inputs), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"linking {out.name} failed: {' '.join(cmd)}\n{proc.stderr.strip()}")
    return out


def link_model_library(
    graph: ExecutorGraph,
    objects: list[bytes],
    out: Path,
    target,
    blobs: dict[str, bytes],
    libraries: Sequence[str] = (),
) -> Path:
    """The model library: host kernel objects, entry.c (graph glue, device blobs, the CPU
    record), the C runtime, then `libraries` (extra `-l`/paths for te.extern calls)."""
    from nnvm.targets.cpu.entry_point import (
        blob_source,
        entry_point_source,
        include_dir,
        runtime_sources,
        target_record_source,
    )

    workdir = out.parent
    entry = workdir / "entry.c"
    entry.write_text(entry_point_source(graph) + blob_source(blobs) + target_record_source(target))
    obj_paths = []
    for k, obj in enumerate(objects):
        p = workdir / f"kernel{k}.o"
        p.write_bytes(obj)
        obj_paths.append(p)
    extra = [lib if lib.startswith("-") or "/" in lib else f"-l{lib}" for lib in libraries]
    return link_shared(
        [entry, *runtime_sources(), *obj_paths],
        out,
        [f"-I{include_dir()}", *extra, "-pthread", "-lm"],
    )


@cache
def threads_library(cc=None) -> Path:
    """nnvm_threads.c as a shared library of its own, for JIT-compiled kernels (model
    libraries compile it in): built once per source version and user, then reused."""
    from nnvm.targets.cpu.entry_point import threads_source

    source = threads_source()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"nnvm-threads-{os.getuid()}-{digest}.so"
    if not out.exists():
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        link_shared([source], tmp, ["-DNNVM_THREADS_EXPORT", "-pthread"], cc=cc)
        os.replace(tmp, out)
    return out
