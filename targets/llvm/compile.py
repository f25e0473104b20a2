"""LLVM IR -> machine code: O3 through llvmlite, then an in-process JIT or a shared library.

Both products expose the same `CompiledModule` face: `mod["kernel"](a, b, out)` calls an exported
function on numpy arrays (their data pointers, kernel ABI) or scalars. Parallel kernels read the
global `nnvm_num_threads` at every call; the wrappers store `nnvm.get_num_threads()` there first.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import llvmlite.ir as ir
from xdsl.dialects.builtin import ModuleOp

from nnvm.support.errors import UserError
from nnvm.targets.cpu.target import (
    CPUTarget,
    initialize,
    missing_features,
    parse_description,
    parse_target,
)
from nnvm.targets.llvm.translate import to_llvmlite_module

NUM_THREADS_SYMBOL = "nnvm_num_threads"
"""i32 global read by parallel loops (0: one thread per online CPU)."""

TARGET_SYMBOL = "nnvm_build_target"
"""NUL-terminated string in each shared library: the `CPUTarget.description` it was built for."""

ModuleLike = ModuleOp | ir.Module | str


PARALLEL_RUNTIME_SYMBOL = "nnvm_parallel"
"""What kernels with parallel loops call (targets/cpu/nnvm_threads.c)."""
SCRATCH_RUNTIME_SYMBOL = "nnvm_scratch_alloc"
"""What kernels with heap scratch call (targets/cpu/nnvm_scratch.c)."""


def needs_kernel_runtime(text: str) -> bool:
    """Does LLVM IR `text` call the kernel runtime (parallel loops, scratch buffers)?"""
    return PARALLEL_RUNTIME_SYMBOL in text or SCRATCH_RUNTIME_SYMBOL in text


@cache
def load_parallel_runtime() -> str:
    """Make the kernel runtime's symbols (nnvm_parallel, nnvm_loop_start, ...,
    nnvm_scratch_alloc) visible to the JIT."""
    from nnvm.targets.cpu.link import threads_library

    name = str(threads_library())
    llvm.load_library_permanently(name)
    return name


def _to_ir_module(module: ModuleLike, target: CPUTarget) -> ir.Module | str:
    if isinstance(module, ModuleOp):
        return to_llvmlite_module(module, triple=target.triple)
    return module


def _signatures(module: ir.Module | str) -> dict[str, tuple[Any, list[Any]]]:
    """ctypes signatures of the exported functions of an IR module."""
    parsed = module if isinstance(module, ir.Module) else None
    sigs: dict[str, tuple[Any, list[Any]]] = {}
    if parsed is None:
        return sigs
    for gv in parsed.globals.values():
        if not isinstance(gv, ir.Function) or gv.is_declaration:
            continue
        if gv.linkage in ("internal", "private"):
            continue
        ft = gv.function_type
        sigs[gv.name] = (_ctype(ft.return_type), [_ctype(t) for t in ft.args])
    return sigs


def _ctype(t: ir.Type) -> Any:
    if isinstance(t, ir.VoidType):
        return None
    if isinstance(t, ir.PointerType):
        return ctypes.c_void_p
    if isinstance(t, ir.IntType):
        return {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32}.get(
            t.width, ctypes.c_int64
        )
    if isinstance(t, ir.FloatType):
        return ctypes.c_float
    if isinstance(t, ir.DoubleType):
        return ctypes.c_double
    raise UserError(f"exported function has an argument of type {t}, not callable from Python")


def optimize(mod: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int = 3) -> None:
    """The O3 module pipeline with loop and SLP vectorization, unrolling and interleaving."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pto.loop_unrolling = opt_level >= 2
    pto.loop_interleaving = opt_level >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


def _parse(text: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as e:
        raise UserError(f"LLVM rejected the generated IR: {e}") from None
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def _with_target_record(text: str, target: CPUTarget) -> str:
    """IR text with the `nnvm_build_target` string added (as an exported constant)."""
    data = target.description.encode() + b"\0"
    escaped = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}" for c in data)
    return text + f'\n@{TARGET_SYMBOL} = constant [{len(data)} x i8] c"{escaped}", align 1\n'


def _check_host(target: CPUTarget, what: str) -> None:
    missing = missing_features(target.required)
    if missing:
        raise UserError(
            f"{what} was built for CPU '{target.cpu}' with features this host lacks: "
            + ", ".join(missing)
        )


class Kernel:
    """A compiled function, callable with numpy arrays (data pointers) and scalars."""

    def __init__(self, owner: CompiledModule, name: str, cfunc: Any, argtypes: Sequence[Any]):
        self.owner = owner
        self.name = name
        self.cfunc = cfunc
        self.argtypes = list(argtypes)
        self.address = ctypes.cast(cfunc, ctypes.c_void_p).value

    def __call__(self, *args: Any) -> Any:
        if len(args) != len(self.argtypes):
            raise TypeError(f"{self.name} takes {len(self.argtypes)} arguments, got {len(args)}")
        converted = []
        for a, t in zip(args, self.argtypes, strict=True):
            if t is ctypes.c_void_p and hasattr(a, "__array_interface__"):
                if not a.flags["C_CONTIGUOUS"]:
                    raise ValueError(f"{self.name}: arrays must be C-contiguous")
                converted.append(a.ctypes.data)
            else:
                converted.append(a)
        self.owner.sync_threads()
        return self.cfunc(*converted)


class CompiledModule:
    """Common face of a JIT module and a loaded shared library."""

    def __init__(self, target: CPUTarget, signatures: dict[str, tuple[Any, list[Any]]]):
        self.target = target
        self.signatures = signatures
        self._threads: ctypes.c_int32 | None = None
        self._kernels: dict[str, Kernel] = {}

    def address_of(self, name: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _bind_threads(self, address: int | None) -> None:
        if address:
            self._threads = ctypes.c_int32.from_address(address)

    def sync_threads(self) -> None:
        """Store the current `nnvm.get_num_threads()` where parallel loops read it."""
        if self._threads is not None:
            from nnvm.threads import get_num_threads

            n = get_num_threads()
            if self._threads.value != n:
                self._threads.value = n

    def function(
        self, name: str, restype: Any = None, argtypes: Sequence[Any] | None = None
    ) -> Kernel:
        """The exported function `name`; the signature comes from the module when known."""
        if argtypes is None:
            if name not in self.signatures:
                raise KeyError(f"no exported function named {name!r}")
            restype, argtypes = self.signatures[name]
        address = self.address_of(name)
        if not address:
            raise KeyError(f"no exported function named {name!r}")
        cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(address)
        return Kernel(self, name, cfunc, argtypes)

    def __getitem__(self, name: str) -> Kernel:
        if name not in self._kernels:
            self._kernels[name] = self.function(name)
        return self._kernels[name]


class JITModule(CompiledModule):
    """Machine code in this process (MCJIT); keep the object alive while calling its kernels."""

    def __init__(
        self, engine: llvm.ExecutionEngine, target: CPUTarget, sigs, asm: Callable[[], str]
    ):
        super().__init__(target, sigs)
        self.engine = engine
        self._asm = asm
        self._bind_threads(self._global_address(NUM_THREADS_SYMBOL))

    def _global_address(self, name: str) -> int | None:
        try:
            return self.engine.get_global_value_address(name) or None
        except Exception:
            return None

    def address_of(self, name: str) -> int:
        return self.engine.get_function_address(name)

    def assembly(self) -> str:
        """The optimized module's machine assembly (for inspecting vectorization)."""
        return self._asm()


class SharedLibrary(CompiledModule):
    """A `.so` loaded with ctypes after checking the CPU it was built for."""

    def __init__(self, path: str | os.PathLike[str], lib: ctypes.CDLL, target: CPUTarget, sigs):
        super().__init__(target, sigs)
        self.path = Path(path)
        self.lib = lib
        try:
            self._threads = ctypes.c_int32.in_dll(lib, NUM_THREADS_SYMBOL)
        except ValueError:
            self._threads = None

    def address_of(self, name: str) -> int:
        try:
            return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value or 0
        except AttributeError:
            return 0


def _optimized(module: ModuleLike, target: CPUTarget, *, jit: bool, pic: bool):
    """The module as llvmlite IR and as text (printed once: printing is a large part of the
    Python side of codegen), and the target machine."""
    initialize()
    ir_mod = _to_ir_module(module, target)
    tm = target.target_machine(jit=jit, pic=pic)
    text = str(ir_mod)
    if jit and needs_kernel_runtime(text):
        load_parallel_runtime()
    return ir_mod, tm, text


def compile_jit(module: ModuleLike, target: str | CPUTarget | None = None) -> JITModule:
    """JIT-compile a lowered module (or LLVM IR) for this host; returns callable kernels."""
    tgt = parse_target(target)
    _check_host(tgt, "JIT code")
    ir_mod, tm, text = _optimized(module, tgt, jit=True, pic=False)
    mod = _parse(text, tm)
    optimize(mod, tm, tgt.opt_level)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    engine.run_static_constructors()
    return JITModule(engine, tgt, _signatures(ir_mod), lambda: tm.emit_assembly(mod))


def optimized_ir(module: ModuleLike, target: str | CPUTarget | None = None) -> str:
    """The LLVM IR after O3, for tests and inspection."""
    tgt = parse_target(target)
    _, tm, text = _optimized(module, tgt, jit=False, pic=True)
    mod = _parse(text, tm)
    optimize(mod, tm, tgt.opt_level)
    return str(mod)


def emit_object(
    module: ModuleLike, target: str | CPUTarget | None = None, *, target_record: bool = True
) -> bytes:
    """A relocatable (PIC) ELF object with the exported kernels and (unless the caller links
    several objects and records the target once itself) the target record."""
    tgt = parse_target(target)
    _, tm, text = _optimized(module, tgt, jit=False, pic=True)
    if target_record:
        text = _with_target_record(text, tgt)
    mod = _parse(text, tm)
    optimize(mod, tm, tgt.opt_level)
    return tm.emit_object(mod)


def emit_assembly(module: ModuleLike, target: str | CPUTarget | None = None) -> str:
    tgt = parse_target(target)
    _, tm, text = _optimized(module, tgt, jit=False, pic=True)
    mod = _parse(text, tm)
    optimize(mod, tm, tgt.opt_level)
    return tm.emit_assembly(mod)


def build_shared_library(
    module: ModuleLike,
    path: str | os.PathLike[str],
    target: str | CPUTarget | None = None,
    cc: str | None = None,
) -> Path:
    """Compile to `path` (a .so) with the system C compiler as linker; compiles the parallel-loop
    runtime in if the kernels use it."""
    tgt = parse_target(target)
    ir_mod, _, text = _optimized(module, tgt, jit=False, pic=True)
    obj = emit_object(text, tgt)
    from nnvm.targets.cpu.link import link_shared

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nnvm-") as tmp:
        obj_path = Path(tmp) / (out.stem + ".o")
        obj_path.write_bytes(obj)
        inputs: list[Path] = [obj_path]
        if needs_kernel_runtime(text):
            from nnvm.targets.cpu.entry_point import kernel_runtime_sources

            inputs.extend(kernel_runtime_sources())
        link_shared(inputs, out, ["-pthread", "-lm"], cc=cc)
    sigs = _signatures(ir_mod)
    _write_signatures(out, sigs)
    return out


def _sig_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".sig")


_CTYPE_NAMES = {
    None: "void",
    ctypes.c_void_p: "ptr",
    ctypes.c_bool: "i1",
    ctypes.c_int8: "i8",
    ctypes.c_int16: "i16",
    ctypes.c_int32: "i32",
    ctypes.c_int64: "i64",
    ctypes.c_float: "f32",
    ctypes.c_double: "f64",
}
_CTYPE_BY_NAME = {v: k for k, v in _CTYPE_NAMES.items()}


def _write_signatures(path: Path, sigs: dict[str, tuple[Any, list[Any]]]) -> None:
    """A sidecar `<lib>.sig` listing exported functions, so the loader can type its calls."""
    lines = []
    for name, (ret, args) in sorted(sigs.items()):
        lines.append(" ".join([name, _CTYPE_NAMES[ret], *(_CTYPE_NAMES[a] for a in args)]))
    _sig_path(path).write_text("\n".join(lines) + "\n")


def _read_signatures(path: Path) -> dict[str, tuple[Any, list[Any]]]:
    p = _sig_path(path)
    sigs: dict[str, tuple[Any, list[Any]]] = {}
    if not p.exists():
        return sigs
    for line in p.read_text().splitlines():
        words = line.split()
        if len(words) >= 2:
            sigs[words[0]] = (_CTYPE_BY_NAME[words[1]], [_CTYPE_BY_NAME[w] for w in words[2:]])
    return sigs


def library_target(lib: ctypes.CDLL, path: str | os.PathLike[str]) -> CPUTarget:
    """The target a library records in `nnvm_build_target`."""
    try:
        anchor = (ctypes.c_char * 1).in_dll(lib, TARGET_SYMBOL)
    except ValueError:
        raise UserError(f"{path} was not built by nnvm (no {TARGET_SYMBOL} record)") from None
    text = ctypes.string_at(ctypes.addressof(anchor)).decode()
    info = parse_description(text)
    feats = frozenset(f[1:] for f in info.get("features", "").split(",") if f.startswith("+"))
    return CPUTarget(
        triple=info.get("triple", ""), cpu=info.get("cpu", ""), features="", required=feats
    )


_loaded_files: dict[str, tuple[int, int, int, int]] = {}
"""Path -> (device, inode, size, mtime) of the file this process first loaded from that path."""
_reload_lock = threading.Lock()


def _file_identity(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _dlopen(path: Path) -> ctypes.CDLL:
    """dlopen the library now at `path`. The dynamic loader hands back the library it already
    holds for a path it has loaded (it never unloads ours), so a library rebuilt at the same
    path (an `export_library` again, an RPC upload under a name used before) would load as the
    old one. A file that changed since this process first loaded that path is loaded through a
    copy named by this process and the file's content, removed once loaded (a loaded library
    needs no file; a process that ends in os._exit, as an RPC session does, leaves nothing)."""
    identity = _file_identity(path)
    if _loaded_files.setdefault(str(path), identity) == identity:
        return ctypes.CDLL(str(path))
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:32]
    copy = Path(tempfile.gettempdir()) / f"nnvm-reloaded-{os.getpid()}-{digest}{path.suffix}"
    with _reload_lock:  # the same content loads from the same name: the loader's own handle
        try:
            copy.write_bytes(data)
            return ctypes.CDLL(str(copy))
        finally:
            copy.unlink(missing_ok=True)


def load_library(path: str | os.PathLike[str]) -> SharedLibrary:
    """Load a library built by `build_shared_library`, refusing it if this CPU lacks features
    it was compiled for (reading the record runs none of its code)."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"no such library: {p}")
    lib = _dlopen(p.resolve())
    tgt = library_target(lib, p)
    missing = missing_features(tgt.required)
    if missing:
        raise UserError(
            f"cannot load {p}: it was built for CPU '{tgt.cpu}' and needs CPU features this "
            f"host lacks: {', '.join(missing)}; rebuild it with a portable target such as "
            "target='llvm -mcpu=x86-64-v3'"
        )
    return SharedLibrary(p, lib, tgt, _read_signatures(p))
