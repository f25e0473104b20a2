"""Linking for the wasm target: the generated entry point and nnvm_wasm.c compiled by clang for
wasm32, the kernel objects, wasi-libc's libm/libc (math, malloc, memcpy; no imports) and
compiler-rt's builtins, linked by wasm-ld into one `.wasm` with an exported memory."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from nnvm.support.errors import UserError

WASI_SYSROOT_LIBS = Path("/usr/lib/wasm32-wasi")


def tool(names: tuple[str, ...], env: str, package: str) -> str:
    """The first of `names` on PATH (or $env)."""
    found = os.environ.get(env) or next((p for n in names if (p := shutil.which(n))), None)
    if found is None:
        raise UserError(f"the wasm target needs {names[0]} (apt-get install {package})")
    return found


def wasm_ld() -> str:
    return tool(("wasm-ld-19", "wasm-ld"), "NNVM_WASM_LD", "lld-19")


def wasm_clang() -> str:
    return tool(("clang-19", "clang"), "NNVM_WASM_CC", "clang-19")


def wasi_libs() -> list[str]:
    libs = [WASI_SYSROOT_LIBS / "libm.a", WASI_SYSROOT_LIBS / "libc.a"]
    if not all(p.exists() for p in libs):
        raise UserError("the wasm target needs wasi-libc's libm.a (apt-get install wasi-libc)")
    return [str(p) for p in libs]


def builtins_lib() -> str:
    """compiler-rt's wasm32 builtins (half-float conversions and the like the kernels call)."""
    cmd = [wasm_clang(), "--target=wasm32-wasi", "-rtlib=compiler-rt", "-print-libgcc-file-name"]
    path = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    if not path or not Path(path).exists():
        raise UserError(
            "the wasm target needs compiler-rt's wasm32 builtins "
            "(apt-get install libclang-rt-19-dev-wasm32)"
        )
    return path


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"{what} failed: {' '.join(cmd)}\n{proc.stderr.strip()}")


def link_wasm_module(graph: Any, objects: list[bytes], out: Path, target: Any) -> Path:
    from nnvm.targets.cpu.entry_point import entry_point_source, include_dir, target_record_source

    workdir = out.parent
    entry = workdir / "entry.c"
    entry.write_text(entry_point_source(graph) + target_record_source(target))
    cc = wasm_clang()
    here = Path(str(resources.files("nnvm.targets.wasm")))
    inputs = []
    for src in (entry, here / "nnvm_wasm.c"):
        obj = workdir / (src.stem + ".wasm.o")
        simd = ["-msimd128"] if "simd128" in target.required else []
        _run(
            [
                cc,
                "--target=wasm32-wasi",  # wasi-libc's headers (string.h); no WASI imports are used
                "-O2",
                "-ffreestanding",
                "-nostdlib",
                *simd,
                f"-I{include_dir()}",
                "-c",
                str(src),
                "-o",
                str(obj),
            ],
            f"compiling {src.name} for wasm32",
        )
        inputs.append(obj)
    for k, data in enumerate(objects):
        p = workdir / f"kernel{k}.wasm.o"
        p.write_bytes(data)
        inputs.append(p)
    _run(
        [
            wasm_ld(),
            "--no-entry",
            "--export-memory",
            "--export=__heap_base",
            "--gc-sections",
            "--fatal-warnings",  # a signature mismatch links to a trap: refuse it instead
            "--stack-first",  # a stack overflow traps below address 0, never over the data
            "-z",
            "stack-size=1048576",
            "--initial-memory=4194304",
            "-o",
            str(out),
            *map(str, inputs),
            *wasi_libs(),
            builtins_lib(),
        ],
        f"linking {out.name}",
    )
    return out


class _Unrunnable:
    def __init__(self, name: str, value: Any = None):
        self.name = name
        self.value = value
        self.restype = self.argtypes = None

    def __call__(self, *args: Any) -> Any:
        if self.value is not None:
            return self.value
        raise UserError(
            f"a wasm module does not run in Python ({self.name}): export it with "
            "lib.export_library('model.wasm') and run it with nnvm.js in node or a browser"
        )


class _Exports:
    def __init__(self, path: Path):
        self.path = path
        for name in ("nnvm_create", "nnvm_run", "nnvm_destroy", "nnvm_kernel"):
            setattr(self, name, _Unrunnable(name))
        self.nnvm_last_error = _Unrunnable("nnvm_last_error", b"")
        self.nnvm_abi_version = _Unrunnable("nnvm_abi_version", 3)
        self.nnvm_model_hash = _Unrunnable("nnvm_model_hash")
        self.nnvm_target = _Unrunnable("nnvm_target")


class WasmLibrary:
    """What WasmTarget.load gives the Module wrapper: the .wasm's path; calls that would run
    code say to use nnvm.js."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = _Exports(path)

    def sync_threads(self) -> None:
        pass
