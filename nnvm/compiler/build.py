"""nnvm.compiler.build, the driver: graph passes for an opt level, each fused kernel placed on a
target and lowered once by that target's pipeline (cached on disk by kernel IR and target), and
the host target's library whose entry point runs the whole graph.

    graph, lib, params = nnvm.compiler.build(module, target="llvm", params=params)
    m = nnvm.runtime.graph_runtime.create(graph, lib, nnvm.cpu(0))
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass

from nnvm.compiler.build_cache import (
    CachedBuild,
    build_key,
    limit_bytes,
    load_build,
    save_build,
)
from nnvm.compiler.executor_graph import executor_graph
from nnvm.compiler.kernel_cache import KernelCache, cache_dir, code_fingerprint
from nnvm.compiler.parallel_compile import Compiled
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.passes.fuse import FUSED_PREFIX
from nnvm.registry import build_pipeline, make_context
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, model_hash
from nnvm.support.ir import argument_names, find_function
from nnvm.support.ir_text import ir_text
from nnvm.support.param_store import attach_params, params_of
from nnvm.support.params import params_fingerprint
from nnvm.support.pass_statistics import Statistic, statistics_of
from nnvm.support.target import Target, parse_target


@dataclass
class BuildTimes:
    """Where a build's time went (seconds), for the CLI and the benchmarks."""

    graph_passes: float = 0.0
    lowering: float = 0.0
    codegen: float = 0.0
    link: float = 0.0
    kernels_compiled: int = 0
    kernels_cached: int = 0
    kernels_compiled_parallel: int = 0
    """Of kernels_compiled, those compiled in worker processes (lowering and codegen then add
    up their CPU time, not the build's wall time)."""
    kernels_tuned: int = 0
    """Kernels whose schedule came from the tuning log (build(tuning_log=...))."""
    kernels_untuned: int = 0
    """Kernels a tuning log was given for but had no (applicable) record: default schedules."""
    library_cached: bool = False
    """The linked model library came from the cache (an identical build made it)."""
    build_cached: bool = False
    """The whole build came from the build cache (build_cache.py): no pass ran."""
    stages: dict[str, float] = field(default_factory=dict)


def graph_pipeline(opt_level: int) -> list[str]:
    """Graph-level passes of a build (passes/pipelines.py: build_passes)."""
    from nnvm.passes.pipelines import build_passes

    try:
        return build_passes(opt_level)
    except ValueError as err:
        raise UserError(str(err)) from None


UserPasses = Mapping[str, Sequence["str | ModulePass"]]
"""build(passes=...): extra graph passes keyed by where they run: 'start', 'end' (after the
graph pipeline, before kernels are lowered), 'before:NAME' or 'after:NAME' of a pipeline pass."""


def graph_passes(
    opt_level: int,
    target: Target,
    extra: UserPasses | None = None,
    devices: Sequence[Target] = (),
) -> list[ModulePass]:
    """The graph pipeline as pass objects, with the target's options set on them (the layout
    block of alter-layout, ...), the devices' own graph passes (`Target.graph_passes`: an
    accelerator's partitioning), then the host's (the CPU's integer-products, where the pipeline
    has its point), and the user's passes at their points. The devices' options
    override the host's: the graph is shared, and a kernel a device takes must come out of the
    passes in a form it runs (an accelerator may ask alter-layout to leave weights unpacked)."""
    names = graph_pipeline(opt_level)
    known = {"start", "end"} | {
        f"{w}:{n.split('{')[0]}" for n in names for w in ("before", "after")
    }
    points: dict[str, list] = {k: list(v) for k, v in (extra or {}).items()}
    for point, added in target.graph_passes().items():
        if point in known:  # the host's passes belong to the pipelines that have the point
            points[point] = [*added, *points.get(point, ())]
    for device in reversed(devices):
        for point, added in device.graph_passes().items():
            points[point] = [*added, *points.get(point, ())]
    unknown = sorted(set(points) - known)
    if unknown:
        raise UserError(
            f"build(passes=...): unknown insertion point(s) {unknown}; use one of {sorted(known)}"
        )

    def user(point: str) -> list[ModulePass]:
        found: list[ModulePass] = []
        for item in points.get(point, ()):
            found += build_pipeline([item]) if isinstance(item, str) else [item]
        return found

    out = user("start")
    for spec in names:
        name = spec.split("{")[0]
        out += user(f"before:{name}")
        (p,) = build_pipeline([spec])
        options = dict(target.pass_options(p.name))
        for device in devices:
            options.update(device.pass_options(p.name))
        out.append(dataclasses.replace(p, **options) if options else p)
        out += user(f"after:{name}")
    return out + user("end")


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


def codegen_fingerprint(target: Target) -> str:
    """A hash of the code that generates kernels, nnvm's and the target's own package's (a
    plugin), so a new schedule, conversion or plugin version never reuses an old object
    (nnvm.support too: it prints and parses the kernel IR the key is made of)."""
    packages = ["nnvm.dialects", "nnvm.lowering", "nnvm.targets", "nnvm.passes", "nnvm.support"]
    owner = type(target).__module__.split(".")[0]
    if owner != "nnvm":
        packages.append(owner)
    return "-".join(code_fingerprint(p) for p in packages)


def kernel_module(fn: func.FuncOp) -> ModuleOp:
    """One fused function as a module of its own, as the kernel passes and the cache see it."""
    clone = fn.clone()
    clone.properties.pop("sym_visibility", None)  # a kernel is exported, not private
    return ModuleOp([clone])


def kernel_key(text: str, target: Target) -> str:
    """The kernel cache key: the code that compiles it, the target, the kernel module's IR."""
    return hashlib.sha256(
        "\n".join([codegen_fingerprint(target), target.description, text]).encode()
    ).hexdigest()


def lower_kernel(module: ModuleOp, target: Target, ctx: Context, dump: Path | None) -> None:
    """The target's kernel passes on one kernel module, in place (IR after each in `dump`)."""
    for k, p in enumerate(target.kernel_passes()):
        p.apply(ctx, module)
        if dump is not None:
            (dump / f"{k + 1:02d}-{p.name}.mlir").write_text(ir_text(module))


def compile_kernel(
    module: ModuleOp,
    text: str,
    target: Target,
    ctx: Context,
    dump: Path | None,
    times: BuildTimes,
    store: KernelCache,
) -> bytes:
    """One kernel module (its IR `text`) -> the target's artifact for it, cached on disk by
    IR and target; the module is lowered in place."""
    key = kernel_key(text, target)
    name = next(op for op in module.ops if isinstance(op, func.FuncOp)).sym_name.data
    if dump is None:
        found = store.get(key, target.kind)
        if found is not None:
            times.kernels_cached += 1
            return found
    start = time.perf_counter()
    lower_kernel(module, target, ctx, dump)
    times.lowering += time.perf_counter() - start
    start = time.perf_counter()
    obj = target.emit_kernel(module, name)
    times.codegen += time.perf_counter() - start
    times.kernels_compiled += 1
    store.put(key, target.kind, obj)
    return obj


def precompile_host_kernels(
    texts_of: Mapping[str, str], host: Target, times: BuildTimes, store: KernelCache
) -> dict[str, bytes]:
    """Kernel name -> object for the host kernels this can settle up front: those in the
    cache (read once here, not again by the build's loop), and the rest compiled in worker
    processes (parallel_compile.py) and put in the cache. Too few misses, one job, or a
    kernel a worker failed on: left to the build's own loop."""
    from nnvm.compiler.parallel_compile import MIN_KERNELS, compile_parallel, jobs_wanted

    if jobs_wanted() < 2 or len(texts_of) < MIN_KERNELS:
        return {}
    ready: dict[str, bytes] = {}
    names_by_key: dict[str, list[str]] = {}
    texts: dict[str, tuple[str, str]] = {}  # key -> (IR text, a kernel name)
    for name, text in texts_of.items():
        key = kernel_key(text, host)
        if key not in names_by_key:
            found = store.get(key, host.kind)
            if found is not None:
                ready[name] = found
                times.kernels_cached += 1
                continue
        names_by_key.setdefault(key, []).append(name)
        texts.setdefault(key, (text, name))
    if len(texts) < MIN_KERNELS:
        return ready
    keys = list(texts)
    jobs = [(texts[k][0], host, texts[k][1]) for k in keys]
    for key, answer in zip(keys, compile_parallel(jobs), strict=True):
        if isinstance(answer, Compiled):
            store.put(key, host.kind, answer.obj)
            times.lowering += answer.lowering_s
            times.codegen += answer.codegen_s
            times.kernels_compiled += 1
            times.kernels_compiled_parallel += 1
            for name in names_by_key[key]:
                ready[name] = answer.obj
    return ready


def tuned_modules(
    modules: Sequence[ModuleOp],
    target: Target,
    log_path: str | os.PathLike[str],
    ctx: Context,
    times: BuildTimes,
    devices: Sequence[Target] = (),
) -> None:
    """Lower the kernel modules to te and insert the tuning log's schedules, in place (the
    kernel text, hence the cache key, then holds the schedule)."""
    from nnvm.passes.apply_tuning_log import TuningCounts, logged_schedules, schedule_from_log

    best = logged_schedules(log_path, target, devices)
    counts = TuningCounts()
    lower = next(p for p in target.kernel_passes() if p.name == "lower-to-te")
    for m in modules:
        lower.apply(ctx, m)
        schedule_from_log(ctx, m, best, counts, str(log_path))
    times.kernels_tuned += counts.tuned
    times.kernels_untuned += counts.untuned + counts.stale


def _count_device_tuning(stats: Mapping[str, Statistic], times: BuildTimes) -> None:
    """A device's tuning pass counts its layers as apply-tuning-log counts kernels
    (statistics 'tuned', 'untuned', 'stale'); they join the build's counts."""
    times.kernels_tuned += int(stats["tuned"].value) if "tuned" in stats else 0
    for name in ("untuned", "stale"):
        times.kernels_untuned += int(stats[name].value) if name in stats else 0


def place_kernels(
    kernels: Mapping[str, func.FuncOp], devices: Sequence[Target]
) -> dict[str, Target | None]:
    """Each kernel on the first device target that accepts it; None (the host) otherwise."""
    placed: dict[str, Target | None] = {}
    for name, fn in kernels.items():
        placed[name] = next((d for d in devices if d.accepts(fn) is None), None)
    return placed


def verify_each() -> bool:
    """NNVM_VERIFY_EACH=1: verify the module after every graph pass (as mlir-opt does), not
    once after the pipeline; a whole-module verify costs as much as a cheap pass."""
    return os.environ.get("NNVM_VERIFY_EACH", "") not in ("", "0")


def library_key(
    graph: ExecutorGraph, objects: Sequence[bytes], blobs: Mapping[str, bytes], host: Target
) -> str:
    """The cache key of a linked model library: the code and target that build it, the
    executor graph (its entry point), every kernel object and device blob."""
    h = hashlib.sha256()
    for part in [codegen_fingerprint(host), host.description, graph.to_json()]:
        h.update(part.encode() + b"\0")
    for obj in objects:
        h.update(hashlib.sha256(obj).digest())
    for name in sorted(blobs):
        h.update(name.encode() + b"\0" + hashlib.sha256(blobs[name]).digest())
    return h.hexdigest()


def _linked_library(
    graph: ExecutorGraph,
    objects: list[bytes],
    blobs: dict[str, bytes],
    libraries: Sequence[str],
    host: Target,
    workdir: Path,
    store: KernelCache,
    dump: Path | None,
    times: BuildTimes,
) -> tuple[Path, str | None]:
    """The host links the model library into workdir, or the kernel cache has it from an
    identical build; with the library's cache key. Not cached: a build that dumps its IR (it
    wants entry.c), and one that links user libraries (their files may change under the same
    names)."""
    out = workdir / "model.so"
    if dump is not None or libraries:
        return host.link(graph, objects, out, blobs, libraries), None
    key = library_key(graph, objects, blobs, host)
    found = store.get(key, "library")
    if found is not None:
        out.write_bytes(found)
        times.library_cached = True
        return out, key
    linked = host.link(graph, objects, out, blobs, libraries)
    store.put(key, "library", linked.read_bytes())
    return linked, key


def build(
    module: ModuleOp,
    target: str | Target = "llvm",
    shape: Mapping[str, Sequence[int]] | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    opt_level: int = 3,
    dtype: str = "float32",
    dump_ir: str | os.PathLike[str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    devices: Sequence[str | Target] = (),
    passes: UserPasses | None = None,
    libraries: Sequence[str] = (),
    tuning_log: str | os.PathLike[str] | None = None,
):
    """Compile a graph-level module; returns (graph, lib, params): the executor graph, the
    compiled library (`lib.export_library(path)`), and the transformed params to feed it.

    `target` is the host target; each fused kernel a `devices` target accepts runs there (the
    first that does), the rest on the host. `tuning_log` (nnvm-tune's log) gives each host
    kernel the best logged schedule for its workload on this target, the rest their default
    ones (counted in lib.build_times). `passes` adds graph passes at named points (see
    UserPasses); `libraries` are linked for te.extern calls. `dump_ir=DIR` writes the IR after
    every stage; `progress(stage, done, total)` is called as passes and kernels complete."""
    report = progress or (lambda stage, done, total: None)
    from nnvm.runtime.module import Module

    if not isinstance(module, ModuleOp):
        raise UserError(
            "build expects a graph-level module (from nnvm.frontend.from_onnx or the parser)"
        )
    host = parse_target(target)
    if not host.is_host:
        raise UserError(
            f"target '{host.kind}' is a device target: build(target=HOST, devices=['{host.kind}'])"
        )
    device_targets = [parse_target(d) for d in devices]
    for d in device_targets:
        if d.is_host:
            raise UserError(f"'{d.kind}' is a host target; it cannot be one of the devices")
    dump = Path(dump_ir) if dump_ir is not None else None
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
    module = module.clone()
    store = {k: np.asarray(v) for k, v in (params or {}).items()}
    inputs = dict(store)
    _check_params(module, store)
    _check_shapes(find_function(module, "main"), shape, dtype)
    cache = KernelCache(cache_dir())
    key = None
    cacheable = dump is None and passes is None and not libraries and limit_bytes() > 0
    if cacheable and cache.root is not None:
        options = {"opt_level": opt_level, "dtype": str(dtype), "shape": shape}
        fingerprint = codegen_fingerprint(host) + "".join(
            codegen_fingerprint(d) for d in device_targets
        )
        key = build_key(
            ir_text(module), store, fingerprint, [host, *device_targets], options, tuning_log
        )
        found = load_build(cache, key, store) if key is not None else None
        if found is not None:
            return _cached_build(found, host)
    attach_params(module, store)
    ctx = make_context()
    times = BuildTimes()

    start = time.perf_counter()
    if dump is not None:
        (dump / "00-input.mlir").write_text(ir_text(module))
    pipeline = graph_passes(opt_level, host, passes, device_targets)
    each = dump is not None or verify_each()
    for k, p in enumerate(pipeline):
        report("graph passes", k, len(pipeline))
        stage = time.perf_counter()
        p.apply(ctx, module)
        if each:
            module.verify()
        times.stages[p.name] = times.stages.get(p.name, 0.0) + time.perf_counter() - stage
        if dump is not None:
            (dump / f"{k + 1:02d}-{p.name}.mlir").write_text(ir_text(module))
    if not each:
        module.verify()  # once for the pipeline; NNVM_VERIFY_EACH=1 finds the pass that broke it
    times.graph_passes = time.perf_counter() - start
    params_out = {  # a weight no pass repacked may still be a view of a folded transpose
        k: v if v.flags.c_contiguous else np.array(v, order="C")
        for k, v in params_of(module).items()
    }
    graph = executor_graph(module)
    graph.target = host.description

    kernels = {
        f.sym_name.data: f
        for f in module.ops
        if isinstance(f, func.FuncOp) and f.sym_name.data.startswith(FUSED_PREFIX)
    }
    placement = place_kernels({n: kernels[n] for n in graph.kernels}, device_targets)
    used = [d for d in device_targets if d in placement.values()]
    graph.devices = [d.description for d in used]
    for node in graph.nodes:
        dev = placement[node.kernel]
        node.device = dev.description if dev is not None else ""
    objects: list[bytes] = []
    blobs: dict[str, bytes] = {}
    ready: dict[str, bytes] = {}
    modules = {name: kernel_module(kernels[name]) for name in graph.kernels}
    if tuning_log is not None:
        host_modules = [modules[n] for n in graph.kernels if placement[n] is None]
        start = time.perf_counter()
        tuned_modules(host_modules, host, tuning_log, ctx, times, device_targets)
        for n in graph.kernels:  # a device's kernels take theirs at the graph level
            device = placement[n]
            for p in device.tuning_passes(str(tuning_log)) if device is not None else ():
                p.apply(ctx, modules[n])
                _count_device_tuning(statistics_of(modules[n]).get(p.name, {}), times)
        times.stages["apply-tuning-log"] = time.perf_counter() - start
    texts = {name: ir_text(m) for name, m in modules.items()}  # key, worker job, checks
    if dump is None:
        host_texts = {n: texts[n] for n in graph.kernels if placement[n] is None}
        report("kernels", 0, len(graph.kernels))
        ready = precompile_host_kernels(host_texts, host, times, cache)
    for k, name in enumerate(graph.kernels):
        report("kernels", k, len(graph.kernels))
        kdump = dump / "kernels" / name if dump is not None else None
        if kdump is not None:
            kdump.mkdir(parents=True, exist_ok=True)
        tgt = placement[name] or host
        try:
            if name in ready:
                artifact = ready[name]
            else:
                artifact = compile_kernel(modules[name], texts[name], tgt, ctx, kdump, times, cache)
        except UserError as err:
            if tgt is host:
                raise
            raise UserError(
                f"device target '{tgt.kind}' failed on kernel {name}: {err.message}"
            ) from None
        if tgt is host or tgt.kernel_format == "object":
            objects.append(artifact)
        else:
            blobs[name] = artifact
    graph.extra["kernel_ir"] = texts
    graph.model_hash = model_hash(
        ir_text(find_function(module, "main")),
        *graph.extra["kernel_ir"].values(),
        *graph.devices,
        params_fingerprint(params_out),
    )
    report("kernels", len(graph.kernels), len(graph.kernels))
    report("link", 0, 1)
    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="nnvm-build-"))
    try:
        lib_path, lib_key = _linked_library(
            graph, objects, blobs, libraries, host, workdir, cache, dump, times
        )
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)  # a failed link leaves nothing behind
        raise
    times.link = time.perf_counter() - start
    if dump is not None:
        (dump / "graph.json").write_text(graph.to_json())
        if (workdir / "entry.c").exists():
            shutil.copy(workdir / "entry.c", dump / "entry.c")
    lib = Module.from_loaded(lib_path, host.load(lib_path), owns_dir=workdir)
    lib.build_times = times
    if key is not None and lib_key is not None:
        save_build(cache, key, graph, lib_key, params_out, inputs, _counts(times))
    return graph, lib, params_out


def _counts(times: BuildTimes) -> dict[str, int]:
    """What a cached build reports as its original did: the schedules its kernels took."""
    return {"kernels_tuned": times.kernels_tuned, "kernels_untuned": times.kernels_untuned}


def _cached_build(found: CachedBuild, host: Target):
    """(graph, lib, params) of a build read back from the build cache."""
    from nnvm.runtime.module import Module

    times = BuildTimes(build_cached=True, library_cached=True)
    times.kernels_cached = len(found.graph.kernels)  # nothing compiled: all as cached
    times.kernels_tuned = found.counts.get("kernels_tuned", 0)
    times.kernels_untuned = found.counts.get("kernels_untuned", 0)
    workdir = Path(tempfile.mkdtemp(prefix="nnvm-build-"))
    try:
        lib_path = workdir / "model.so"
        lib_path.write_bytes(found.library)
        lib = Module.from_loaded(lib_path, host.load(lib_path), owns_dir=workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    lib.build_times = times
    return found.graph, lib, found.params
