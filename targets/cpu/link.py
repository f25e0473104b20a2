"""Linking on the host: find the C compiler once, and link a model library (kernel objects, the
generated entry point, the C runtime with its parallel-loop runtime, device kernels' blobs)
into one .so.

A model library exports only the C API (`EXPORTED`, through a linker version script) and binds
its own references inside itself (-Bsymbolic): kernels, the graph tables and the runtime's
helpers are local, so two model libraries in one process never share or interpose on each
other's code. Its SONAME is a placeholder that `with_soname` rewrites to the exported file's
name, so a program linked against it by path or by `-l` finds it by that name on its rpath
(docs/deploy-c.md)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import struct
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


EXPORTED = (
    "nnvm_create",
    "nnvm_create_bound",
    "nnvm_create_view",
    "nnvm_run",
    "nnvm_destroy",
    "nnvm_last_error",
    "nnvm_abi_version",
    "nnvm_model_hash",
    "nnvm_target",
    "nnvm_num_inputs",
    "nnvm_num_outputs",
    "nnvm_input_info",
    "nnvm_output_info",
    "nnvm_num_devices",
    "nnvm_device_name",
    "nnvm_bind_device",
    "nnvm_kernel",
    # data and tool hooks nnvm's Python side reads by name: the CPU record (read before any
    # code runs), the thread count, device programs, the thread pool's trace, the debug
    # runtime's floating-point environment, the pool's stall count
    "nnvm_build_target",
    "nnvm_num_threads",
    "nnvm_blob_*",
    "nnvm_trace_*",
    "nnvm_pool_stalls",
    "nnvm_debug_fpenv_enter",
    "nnvm_debug_fpenv_leave",
)
"""What a model library exports (nnvm_runtime.h's functions and the data its loader reads);
every other symbol is local to the library."""

SONAME_PLACEHOLDER = "libnnvm-model-" + "~" * 200
"""The SONAME a model library is linked with, rewritten in place by `with_soname` (no other
dynamic string ends in '~', so none is merged into its tail)."""


def _version_script(path: Path) -> Path:
    path.write_text(
        "{\n  global:\n" + "".join(f"    {n};\n" for n in EXPORTED) + "  local: *;\n};\n"
    )
    return path


def _baseline_flags(target) -> list[str]:
    """The C runtime checks the CPU before any kernel runs, so it is compiled for the baseline
    of its architecture whatever the compiler's default (-march=x86-64-v3 on some distros)."""
    host = platform.machine().lower()
    if str(getattr(target, "triple", "")).startswith("x86_64") and host in ("x86_64", "amd64"):
        return ["-march=x86-64", "-mtune=generic"]
    return []


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
    script = _version_script(workdir / "exports.map")
    return link_shared(
        [entry, *runtime_sources(), *obj_paths],
        out,
        [
            f"-I{include_dir()}",
            *_baseline_flags(target),
            *extra,
            "-pthread",
            "-lm",
            f"-Wl,--version-script={script}",
            "-Wl,-Bsymbolic",
            f"-Wl,-soname,{SONAME_PLACEHOLDER}",
        ],
    )


def _dynamic_string(data: bytes) -> tuple[int, int] | None:
    """(file offset of DT_SONAME's string, bytes it may hold) in an ELF64 little-endian shared
    library linked with the placeholder or already renamed by `with_soname`; None otherwise."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    segments = [struct.unpack_from("<IIQQQQ", data, phoff + k * phentsize) for k in range(phnum)]
    dynamic = next((sg for sg in segments if sg[0] == 2), None)  # PT_DYNAMIC
    if dynamic is None:
        return None
    strtab = soname = None
    for pos in range(dynamic[2], dynamic[2] + dynamic[5], 16):
        tag, value = struct.unpack_from("<qQ", data, pos)
        if tag == 0:
            break
        if tag == 5:  # DT_STRTAB (an address)
            strtab = value
        elif tag == 14:  # DT_SONAME (an offset into the string table)
            soname = value
    if strtab is None or soname is None:
        return None
    for kind, _, offset, vaddr, _, filesz in segments:
        if kind == 1 and vaddr <= strtab < vaddr + filesz:  # PT_LOAD holding the table
            start = offset + strtab - vaddr + soname
            break
    else:
        return None
    size = len(SONAME_PLACEHOLDER)
    region = data[start : start + size + 1]
    if region == SONAME_PLACEHOLDER.encode() + b"\0":
        return start, size
    end = region.find(b"\0")  # renamed before: name, NUL, '~' padding, NUL
    if (
        0 < end < size
        and region[end + 1 : size] == b"~" * (size - end - 1)
        and region[-1:] == b"\0"
    ):
        return start, size
    return None


def with_soname(data: bytes, name: str) -> bytes:
    """A model library's bytes with its SONAME set to `name` (the file name it is exported as),
    so a program linked against it records that name, not the path it was linked by. A library
    not linked by this module (no placeholder) comes back unchanged."""
    found = _dynamic_string(data)
    if found is None:
        return data
    start, size = found
    encoded = name.encode()
    if len(encoded) >= size or b"\0" in encoded:
        raise UserError(
            f"library name {name!r} is too long for its SONAME (at most {size - 1} bytes)"
        )
    patched = bytearray(data)
    patched[start : start + len(encoded) + 1] = encoded + b"\0"
    patched[start + len(encoded) + 1 : start + size] = b"~" * (size - len(encoded) - 1)
    return bytes(patched)


@cache
def threads_library(cc=None) -> Path:
    """The kernel runtime (nnvm_threads.c, nnvm_scratch.c) as a shared library of its own, for
    JIT-compiled kernels (model libraries compile it in): built once per source version and
    user, then reused."""
    from nnvm.targets.cpu.entry_point import kernel_runtime_sources

    sources = kernel_runtime_sources()
    header = sources[0].with_name("nnvm_fpenv.h")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in [*sources, header])).hexdigest()
    out = Path(tempfile.gettempdir()) / f"nnvm-threads-{os.getuid()}-{digest[:16]}.so"
    if not out.exists():
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        link_shared(sources, tmp, ["-DNNVM_THREADS_EXPORT", "-pthread"], cc=cc)
        os.replace(tmp, out)
    return out
