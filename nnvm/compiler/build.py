"""nnvm.compiler.build: graph passes for an opt level, every distinct kernel lowered once
(graph -> te -> affine -> llvm -> object, cached on disk by kernel IR and target), and one
shared library whose entry point runs the whole graph.

    graph, lib, params = nnvm.compiler.build(module, target="llvm", params=params)
    m = nnvm.runtime.graph_runtime.create(graph, lib, nnvm.cpu(0))
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass

from nnvm.compiler.executor_graph import executor_graph
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.passes.fuse import FUSED_PREFIX
from nnvm.registry import make_context
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, model_hash
from nnvm.support.ir import argument_names, find_function
from nnvm.support.ir_text import ir_text
from nnvm.support.param_store import attach_params, params_of
from nnvm.support.params import save_params

#: The passes that turn one fused graph function into llvm-dialect code (the kernel ABI).
KERNEL_PIPELINE = ("lower-to-te", "apply-default-schedule", "lower-te-to-loops", "convert-to-llvm")


def kernel_pipeline(vector_bits: int = 256) -> list[str]:
    """The kernel passes, with the target's vector width given to the two passes that size
    vectors and register tiles by it."""
    sized = {"apply-default-schedule", "lower-te-to-loops"}
    return [f"{p}{{vector_bits={vector_bits}}}" if p in sized else p for p in KERNEL_PIPELINE]


@dataclass
class BuildTimes:
    """Where a build's time went (seconds), for the CLI and the benchmarks."""

    graph_passes: float = 0.0
    lowering: float = 0.0
    codegen: float = 0.0
    link: float = 0.0
    kernels_compiled: int = 0
    kernels_cached: int = 0
    stages: dict[str, float] = field(default_factory=dict)


def _passes(names: Sequence[str]) -> list[ModulePass]:
    from nnvm.registry import build_pipeline

    return build_pipeline(list(names))


def graph_pipeline(opt_level: int, vector_bits: int = 256) -> list[str]:
    """Graph-level passes of a build: the opt level's pipeline; at O0 every op is still a kernel
    of its own and memory is still planned, since the runtime needs both. alter-layout blocks
    channels by one f32 vector of the target."""
    from nnvm.passes.pipelines import PIPELINES

    if opt_level not in PIPELINES:
        raise UserError(f"opt_level must be 0, 1, 2 or 3, not {opt_level}")
    if opt_level == 0:
        return ["fuse{enable=false}", "plan-memory"]
    block = max(vector_bits // 32, 1)
    return [
        f"alter-layout{{block={block}}}" if p == "alter-layout" else p for p in PIPELINES[opt_level]
    ]


def _check_params(module: ModuleOp, params: Mapping[str, np.ndarray]) -> None:
    problems = []
    for op in module.walk():
        if not isinstance(op, ParamOp):
            continue
        if op.key not in params:
            problems.append(f'param "{op.key}" is missing')
            continue
        value = np.asarray(params[op.key])
        want = op.result.type
        if tuple(value.shape) != tuple(want.get_shape()) or value.dtype != numpy_dtype_of(
            want.element_type
        ):
            problems.append(
                f'param "{op.key}" is {value.dtype}{list(value.shape)}, the graph wants {want}'
            )
    if problems:
        raise UserError("params do not fit the graph: " + "; ".join(problems))


def _check_shapes(fn: func.FuncOp, shape: Mapping[str, Sequence[int]] | None, dtype) -> None:
    names = argument_names(fn)
    for name, arg in zip(names, fn.body.block.args, strict=True):
        t = arg.type
        assert isinstance(t, TensorType)
        if shape is not None and name in shape and tuple(shape[name]) != tuple(t.get_shape()):
            raise UserError(
                f"input {name!r} was imported with shape {list(t.get_shape())}, build was asked "
                f"for {list(shape[name])}: import the model with that shape instead"
            )
    if shape is not None:
        unknown = [k for k in shape if k not in names]
        if unknown:
            raise UserError(f"shape names unknown inputs {unknown}; the inputs are {names}")
    if isinstance(dtype, str | np.dtype):
        np.dtype(dtype)  # validates the name


@cache
def codegen_fingerprint() -> str:
    """A hash of the code that generates kernels: the on-disk cache is invalidated when it
    changes (a new schedule or conversion must not reuse an old object)."""
    import nnvm

    root = Path(nnvm.__file__).resolve().parent
    h = hashlib.sha256()
    for pkg in ("dialects", "lowering", "targets", "passes"):
        mod = __import__(f"nnvm.{pkg}", fromlist=["__file__"])
        base = Path(mod.__file__).resolve().parent  # type: ignore[arg-type]
        for path in sorted(base.rglob("*")):
            if path.suffix in (".py", ".c", ".h"):
                h.update(path.relative_to(base).as_posix().encode())
                h.update(path.read_bytes())
    h.update(str(root).encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path | None:
    """Where compiled kernels are kept (NNVM_CACHE_DIR, else ~/.cache/nnvm); 'off' disables."""
    env = os.environ.get("NNVM_CACHE_DIR")
    if env == "off":
        return None
    path = Path(env) if env else Path.home() / ".cache" / "nnvm" / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def _kernel_module(fn: func.FuncOp) -> ModuleOp:
    clone = fn.clone()
    clone.properties.pop("sym_visibility", None)  # a kernel is exported, not private
    return ModuleOp([clone])


def compile_kernel(
    fn: func.FuncOp, target, ctx: Context, dump: Path | None, times: BuildTimes
) -> bytes:
    """One fused function -> a relocatable object with the exported kernel (cached)."""
    from nnvm.targets.llvm.compile import emit_object

    module = _kernel_module(fn)
    source = ir_text(module)
    key = hashlib.sha256(
        "\n".join([codegen_fingerprint(), target.description, source]).encode()
    ).hexdigest()
    where = cache_dir()
    cached = where / f"{key}.o" if where is not None else None
    if cached is not None and cached.exists() and dump is None:
        times.kernels_cached += 1
        return cached.read_bytes()
    start = time.perf_counter()
    for k, p in enumerate(_passes(kernel_pipeline(target.vector_bits))):
        p.apply(ctx, module)
        if dump is not None:
            (dump / f"{k + 1:02d}-{p.name}.mlir").write_text(ir_text(module))
    times.lowering += time.perf_counter() - start
    start = time.perf_counter()
    obj = emit_object(module, target, target_record=False)
    times.codegen += time.perf_counter() - start
    times.kernels_compiled += 1
    if cached is not None:
        tmp = cached.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(obj)
        os.replace(tmp, cached)
    return obj


def build(
    module: ModuleOp,
    target: str = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    opt_level: int = 3,
    dtype: str = "float32",
    dump_ir: str | os.PathLike[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
):
    """Compile a graph-level module; returns (graph, lib, params): the executor graph, the
    compiled library (`lib.export_library(path)`), and the transformed params to feed it.

    `dump_ir=DIR` writes the IR after every stage; `progress(stage, done, total)` is called as
    graph passes and kernels complete."""
    report = progress or (lambda stage, done, total: None)
    from nnvm.runtime.module import Module
    from nnvm.targets.llvm.target import parse_target

    if not isinstance(module, ModuleOp):
        raise UserError(
            "build expects a graph-level module (from nnvm.frontend.from_onnx or the parser)"
        )
    tgt = parse_target(target)
    dump = Path(dump_ir) if dump_ir is not None else None
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
    module = module.clone()
    store = {k: np.asarray(v) for k, v in (params or {}).items()}
    _check_params(module, store)
    _check_shapes(find_function(module, "main"), shape, dtype)
    attach_params(module, store)
    ctx = make_context()
    times = BuildTimes()

    start = time.perf_counter()
    if dump is not None:
        (dump / "00-input.mlir").write_text(ir_text(module))
    graph_passes = _passes(graph_pipeline(opt_level, tgt.vector_bits))
    for k, p in enumerate(graph_passes):
        report("graph passes", k, len(graph_passes))
        stage = time.perf_counter()
        p.apply(ctx, module)
        module.verify()
        times.stages[p.name] = times.stages.get(p.name, 0.0) + time.perf_counter() - stage
        if dump is not None:
            (dump / f"{k + 1:02d}-{p.name}.mlir").write_text(ir_text(module))
    times.graph_passes = time.perf_counter() - start
    params_out = dict(params_of(module))
    graph = executor_graph(module)
    graph.target = tgt.description

    kernels = {
        f.sym_name.data: f
        for f in module.ops
        if isinstance(f, func.FuncOp) and f.sym_name.data.startswith(FUSED_PREFIX)
    }
    objects: list[bytes] = []
    for k, name in enumerate(graph.kernels):
        report("kernels", k, len(graph.kernels))
        kdump = dump / "kernels" / name if dump is not None else None
        if kdump is not None:
            kdump.mkdir(parents=True, exist_ok=True)
        objects.append(compile_kernel(kernels[name], tgt, ctx, kdump, times))
    graph.extra["kernel_ir"] = {name: ir_text(kernels[name]) for name in graph.kernels}
    graph.model_hash = model_hash(
        ir_text(find_function(module, "main")),
        *graph.extra["kernel_ir"].values(),
        save_params(params_out),
    )
    report("kernels", len(graph.kernels), len(graph.kernels))
    report("link", 0, 1)
    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="nnvm-build-"))
    lib_path = link_library(graph, objects, workdir / "model.so", tgt)
    times.link = time.perf_counter() - start
    if dump is not None:
        (dump / "graph.json").write_text(graph.to_json())
        shutil.copy(workdir / "entry.c", dump / "entry.c")
    lib = Module.load(lib_path, owns_dir=workdir)
    lib.build_times = times
    return graph, lib, params_out


def link_library(graph: ExecutorGraph, objects: list[bytes], out: Path, target) -> Path:
    """Link kernel objects, the generated entry point and the C runtime into one .so."""
    from nnvm.targets.cpu.entry_point import (
        entry_point_source,
        include_dir,
        runtime_sources,
        target_record_source,
    )

    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise UserError("no C compiler found to link the model library (install cc or set CC)")
    workdir = out.parent
    entry = workdir / "entry.c"
    entry.write_text(entry_point_source(graph) + target_record_source(target))
    obj_paths = []
    for k, obj in enumerate(objects):
        p = workdir / f"kernel{k}.o"
        p.write_bytes(obj)
        obj_paths.append(str(p))
    cmd = [
        compiler,
        "-shared",
        "-fPIC",
        "-O2",
        "-o",
        str(out),
        f"-I{include_dir()}",
        str(entry),
        *map(str, runtime_sources()),
        *obj_paths,
        "-lgomp",
        "-lm",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"linking the model library failed:\n{proc.stderr.strip()}")
    return out
