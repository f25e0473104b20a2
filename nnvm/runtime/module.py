"""A compiled model library (`lib` of `nnvm.compiler.build`): the entry point of the C ABI
(targets/cpu/nnvm_runtime.h), its kernels reachable by name through `nnvm_kernel`, loadable
later without recompiling: `lib.export_library("libm.so")`, then
`nnvm.runtime.load_module("libm.so")`."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import weakref
from collections.abc import Iterator
from pathlib import Path

from nnvm.support.errors import UserError


class Module:
    """A loaded model library. Build one with nnvm.compiler.build or load_module(path)."""

    def __init__(self, path: Path, lib: ctypes.CDLL):
        self.path = path
        self.lib = lib
        self.build_times = None
        self._declare()

    def _declare(self) -> None:
        lib = self.lib
        try:
            lib.nnvm_create.restype = ctypes.c_void_p
            lib.nnvm_create.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            lib.nnvm_run.restype = ctypes.c_int
            lib.nnvm_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            lib.nnvm_destroy.restype = None
            lib.nnvm_destroy.argtypes = [ctypes.c_void_p]
            lib.nnvm_last_error.restype = ctypes.c_char_p
            lib.nnvm_model_hash.restype = ctypes.c_char_p
            lib.nnvm_target.restype = ctypes.c_char_p
            lib.nnvm_abi_version.restype = ctypes.c_int
            if hasattr(lib, "nnvm_create_bound"):  # (with _view) params read where they are
                lib.nnvm_create_bound.restype = ctypes.c_void_p
                lib.nnvm_create_bound.argtypes = [ctypes.c_void_p, ctypes.c_int]
                lib.nnvm_create_view.restype = ctypes.c_void_p
                lib.nnvm_create_view.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            if hasattr(lib, "nnvm_kernel"):  # ABI 3: kernels are hidden, found through it
                lib.nnvm_kernel.restype = ctypes.c_void_p
                lib.nnvm_kernel.argtypes = [ctypes.c_char_p]
            if hasattr(lib, "nnvm_bind_device"):  # ABI 2: heterogeneous models
                lib.nnvm_bind_device.restype = ctypes.c_int
                lib.nnvm_bind_device.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        except AttributeError:
            raise UserError(f"{self.path} is not an nnvm model library (no nnvm_create)") from None

    @staticmethod
    def load(path: str | os.PathLike[str], owns_dir: Path | None = None) -> Module:
        """Load a library, refusing one built for CPU features this host lacks."""
        from nnvm.targets.llvm.compile import load_library

        return Module.from_loaded(path, load_library(path), owns_dir)

    @staticmethod
    def from_loaded(path, shared, owns_dir: Path | None = None) -> Module:
        """Wrap what a host target's `load` returned (its `.lib` is the ctypes library)."""
        module = Module(Path(path), shared.lib)
        module._shared = shared  # keeps the thread-count binding alive
        if owns_dir is not None:
            weakref.finalize(module, shutil.rmtree, owns_dir, True)
        return module

    # -- what it holds ---------------------------------------------------------------------

    @property
    def model_hash(self) -> str:
        return self.lib.nnvm_model_hash().decode()

    @property
    def target(self) -> str:
        return self.lib.nnvm_target().decode()

    def last_error(self) -> str:
        return (self.lib.nnvm_last_error() or b"").decode()

    def sync_threads(self) -> None:
        """Hand `nnvm.get_num_threads()` to the library's parallel loops."""
        self._shared.sync_threads()

    def pool_stalls(self) -> int | None:
        """How many times, since the process started, the library's thread pool waited on a
        worker that another process had descheduled, and so ran its next loops on one thread
        fewer for a while (targets/cpu/nnvm_threads.c); None for a library that does not
        export the count."""
        count = getattr(self.lib, "nnvm_pool_stalls", None)
        if count is None:
            return None
        count.restype = ctypes.c_int64
        return int(count())

    @contextlib.contextmanager
    def kernel_fpenv(self) -> Iterator[None]:
        """On this thread, the floating-point environment `nnvm_run` runs kernels in (denormals
        flushed to zero: targets/cpu/nnvm_fpenv.h), for calling kernels one by one; the
        thread's own is restored after. A library without the hook leaves it as it is."""
        enter = getattr(self.lib, "nnvm_debug_fpenv_enter", None)
        if enter is None:
            yield
            return
        enter.restype = ctypes.c_uint
        leave = self.lib.nnvm_debug_fpenv_leave
        leave.argtypes = [ctypes.c_uint]
        saved = enter()
        try:
            yield
        finally:
            leave(saved)

    def blob(self, kernel: str) -> bytes:
        """A device kernel's program, embedded in the library by build()."""
        try:
            size = ctypes.c_ulong.in_dll(self.lib, f"nnvm_blob_{kernel}_size").value
            data = (ctypes.c_ubyte * size).in_dll(self.lib, f"nnvm_blob_{kernel}")
        except ValueError:
            raise UserError(f"the library holds no device program for {kernel!r}") from None
        return bytes(data)

    def get_function(self, name: str, num_args: int):
        """A kernel of the library with the kernel ABI: `f(ptr0, ptr1, ...)` (pointers as
        ints), found through `nnvm_kernel` (ABI 3; an older library exported it by name)."""
        address = None
        if hasattr(self.lib, "nnvm_kernel"):
            address = self.lib.nnvm_kernel(name.encode())
        elif hasattr(self.lib, name):
            address = ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value
        if not address:
            raise UserError(f"the library has no kernel named {name!r}")
        return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * num_args))(address)

    # -- deployment ------------------------------------------------------------------------

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the shared library (self-contained: kernels, entry point and C runtime) with
        its SONAME set to the file's name: `export_library("out/libresnet.so")`, then
        `cc app.c -Lout -lresnet -Wl,-rpath,'$ORIGIN/out'` (docs/deploy-c.md)."""
        from nnvm.targets.cpu.link import with_soname

        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        tmp.write_bytes(with_soname(self.path.read_bytes(), dest.name))
        os.replace(tmp, dest)  # a process that has the old file loaded keeps its mapping

    def export_header(self, path: str | os.PathLike[str]) -> None:
        """Write nnvm_runtime.h, the C ABI's header, for a C program using the library."""
        from nnvm.targets.cpu.entry_point import include_dir

        shutil.copyfile(include_dir() / "nnvm_runtime.h", Path(path))


def load_module(path: str | os.PathLike[str]) -> Module:
    """Load a model library written by `lib.export_library(path)` (or by nnvm-compile), to run
    it again without recompiling:

        lib = nnvm.runtime.load_module("out/libmodel.so")
        m = graph_runtime.create("out/graph.json", lib)
        m.load_params("out/model.params")

    A missing file, a folder, a file that is no shared library, a library nnvm did not build, or
    one built for CPU features this host lacks is a UserError saying which."""
    p = Path(path)
    if p.is_dir():
        raise UserError(
            f"{p} is a folder, not a model library (graph_runtime.load(folder) loads the folder "
            "nnvm-compile wrote)"
        )
    try:
        return Module.load(p)
    except OSError as err:  # dlopen's refusal: not a shared library, wrong architecture, ...
        raise UserError(f"cannot load {p} as a model library: {err}") from None
