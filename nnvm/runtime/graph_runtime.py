"""The graph runtime: run a compiled model from Python.

    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(data=x)
    y = m.get_output(0)

`graph` may be build's graph, its JSON text or the path of a graph.json, and `lib` a Module or
the path of a library; `graph_runtime.load("out/")` loads all of what `nnvm-compile -o out/`
wrote (graph, library and params) in one call. `get_input_info()` / `get_output_info()` say
what the model takes and returns.

By default the whole graph runs inside the library's entry point (no Python between kernels).
`debug=True` instead calls the exported kernels one by one, to time each (`profile()`) and to
check each against the reference executor (`check()`), naming the first kernel that diverges."""

from __future__ import annotations

import ctypes
import errno
import math
import mmap
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nnvm.runtime.device import BoundDevice, run_on_device
from nnvm.runtime.module import Module, load_module
from nnvm.runtime.profile_report import (
    KernelSpan,
    LoopSpan,
    PoolTracer,
    ProfileReport,
    make_report,
    trace_events,
    write_chrome_trace,
)
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, Node, Ref, TensorInfo
from nnvm.support.params import load_params, params_model_hash, save_params
from nnvm.support.target import DeviceRuntime

ALIGNMENT = 64


@dataclass(frozen=True)
class Device:
    """Where a model runs: `nnvm.cpu(0)`, or a GPU the library's device kernels were built for
    (`nnvm.opencl(0)`, `nnvm.cuda(0)`, `nnvm.gpu(0)`: any GPU target); the host CPU runs the
    rest of the graph either way."""

    kind: str = "cpu"
    index: int = 0

    def __str__(self) -> str:
        return f"{self.kind}({self.index})"


def cpu(index: int = 0) -> Device:
    return Device("cpu", index)


def opencl(index: int = 0) -> Device:
    return Device("opencl", index)


def cuda(index: int = 0) -> Device:
    return Device("cuda", index)


def gpu(index: int = 0) -> Device:
    return Device("gpu", index)


def _check_device(device: Device, graph: ExecutorGraph) -> None:
    """A GPU device needs kernels of the library built for it (the build's `devices`)."""
    if device.kind == "cpu":
        return
    from nnvm.support.target import parse_target

    for spec in graph.devices:
        target = parse_target(spec)
        kind_ok = target.kind == device.kind or (
            device.kind == "gpu" and target.capabilities.device_kind == "gpu"
        )
        if kind_ok and getattr(target, "device", 0) == device.index:
            return
    built = ", ".join(graph.devices) or "none"
    raise UserError(
        f"device {device}: the library has no kernels built for it (its device targets: "
        f"{built}); build with devices=['{device.kind}'] (an index above 0: '-device=N')"
    )


def aligned_empty(shape, dtype, alignment: int = ALIGNMENT, what: str = "a buffer") -> np.ndarray:
    """An uninitialised C-order array whose data starts on an `alignment`-byte boundary; one
    this machine cannot hold is a UserError naming `what` and its size."""
    dtype = np.dtype(dtype)
    count = math.prod(int(d) for d in shape)
    try:
        raw = np.empty(count * dtype.itemsize + alignment, dtype=np.uint8)
    except (MemoryError, ValueError):
        raise UserError(
            f"cannot allocate {what} of {dtype.name}{list(shape)} "
            f"({count * dtype.itemsize / 2**30:.1f} GiB) on this machine"
        ) from None
    start = (-raw.ctypes.data) % alignment
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


HUGE_PAGE_BYTES = 2 << 20


def streamed_empty(nbytes: int, what: str = "a buffer") -> np.ndarray:
    """Uninitialised bytes laid out as the C runtime lays out a model's weights and arena
    (nnvm_runtime.c, alloc_streamed): from 2 MiB on, a buffer starting on a 2 MiB boundary that
    Linux is asked to back with huge pages; smaller ones 64-byte aligned. The debug runtime
    times kernels over such buffers, so its profile streams weights as a deployed model does
    (with 4 KiB pages a weight stream from memory ran at half the speed here)."""
    if nbytes < HUGE_PAGE_BYTES or not hasattr(mmap, "MADV_HUGEPAGE"):
        return aligned_empty((max(nbytes, 1),), np.uint8, what=what)
    try:
        region = mmap.mmap(-1, nbytes + HUGE_PAGE_BYTES)
    except (OSError, ValueError, OverflowError):
        raise UserError(
            f"cannot allocate {what} ({nbytes / 2**30:.1f} GiB) on this machine"
        ) from None
    raw = np.frombuffer(region, dtype=np.uint8)
    start = (-raw.ctypes.data) % HUGE_PAGE_BYTES
    try:
        region.madvise(mmap.MADV_HUGEPAGE, start, nbytes - nbytes % HUGE_PAGE_BYTES)
    except OSError:
        pass  # a hint: a kernel without transparent huge pages keeps 4 KiB pages
    return raw[start : start + nbytes]


def streamed_copy(array: np.ndarray, what: str = "a buffer") -> np.ndarray:
    """A copy of `array` (C order) in a streamed_empty buffer: a param as the C runtime reads
    weights, on huge pages from 2 MiB on."""
    out = streamed_empty(array.nbytes, what)[: array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def _bound_device(name: str, lib: Module) -> BoundDevice:
    """The device target's runtime for this library, as the C entry point calls it."""
    from nnvm.support.target import parse_target

    return BoundDevice(name, parse_target(name).runtime(lib))


GraphLike = ExecutorGraph | str | bytes | os.PathLike
"""build's graph, its JSON text, or the path of a graph.json."""


def _as_graph(graph: GraphLike) -> ExecutorGraph:
    if isinstance(graph, ExecutorGraph):
        return graph
    if isinstance(graph, bytes | bytearray):
        return ExecutorGraph.from_json(bytes(graph).decode("utf-8", "replace"))
    if isinstance(graph, str) and graph.lstrip().startswith("{"):
        return ExecutorGraph.from_json(graph)
    if isinstance(graph, str | os.PathLike):
        path = Path(graph)
        if path.is_dir():
            raise UserError(
                f"the graph {str(path)!r} is a folder; pass its graph.json, or load the whole "
                "folder nnvm-compile wrote with graph_runtime.load(folder)"
            )
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise UserError(f"the graph file {str(path)!r} is not graph JSON (not text)") from None
        except (OSError, ValueError) as err:
            # ValueError: a NUL in the string; ENAMETOOLONG: text too long for a path
            if isinstance(err, FileNotFoundError | NotADirectoryError | ValueError) or (
                getattr(err, "errno", None) == errno.ENAMETOOLONG
            ):
                raise UserError(
                    f"the graph {str(path)[:200]!r} is neither the path of an existing file nor "
                    "graph JSON text (create() takes build's graph, its JSON or a graph.json path)"
                ) from None
            raise UserError(f"cannot read the graph file {str(path)!r}: {err}") from None
        try:
            return ExecutorGraph.from_json(text)
        except UserError as err:
            raise UserError(f"{path}: {err.message}") from None
    raise UserError(
        f"the graph must be build's graph, its JSON text or a graph.json path, not a "
        f"{type(graph).__name__}"
    )


def _as_module(lib: Module | str | os.PathLike) -> Module:
    if isinstance(lib, Module):
        return lib
    if isinstance(lib, str | os.PathLike):
        return load_module(lib)
    raise UserError(
        f"the library must be build's lib (a Module) or a library path, not a {type(lib).__name__}"
    )


@dataclass(frozen=True)
class TensorSpec:
    """A graph input or output: `name` (outputs are unnamed in the graph: ""), static `shape`
    and numpy `dtype` name, as `get_input_info()` / `get_output_info()` list them."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return TensorInfo(list(self.shape), self.dtype).nbytes


@dataclass
class _ThreadState:
    """What one thread runs with: its inputs and outputs, its C model (own arena) and device
    bindings, and the params generation that model was created from."""

    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    devices: list[BoundDevice]
    handle: int | None = None
    generation: int = -1
    params: dict[str, np.ndarray] | None = None
    """The params snapshot the C model points into (nnvm_create_bound): kept alive with it."""
    given: set[int] = field(default_factory=set)
    """The inputs this thread has set (running without one would read uninitialised memory)."""

    def __post_init__(self) -> None:
        # the buffers live as long as the state: their pointer tables are built once
        self.in_ptrs = (ctypes.c_void_p * max(1, len(self.inputs)))(
            *[a.ctypes.data for a in self.inputs]
        )
        self.out_ptrs = (ctypes.c_void_p * max(1, len(self.outputs)))(
            *[a.ctypes.data for a in self.outputs]
        )


class GraphModule:
    """A compiled model ready to run on one device.

    Safe to share between threads: each thread has its own inputs, outputs and C model (so two
    threads run concurrently and each reads its own results); params are shared, and setting them
    makes every thread recreate its model before its next run, never under a running one."""

    def __init__(
        self, graph: GraphLike, lib: Module | str | os.PathLike, device: Device | None = None
    ):
        self.graph = _as_graph(graph)
        self.lib = lib = _as_module(lib)
        self.device = device or cpu(0)
        if self.device.kind not in ("cpu", "opencl", "cuda", "gpu"):
            raise UserError(f"device {self.device} is not supported; use nnvm.cpu(0) or a GPU")
        _check_device(self.device, self.graph)
        if self.graph.model_hash != lib.model_hash:
            raise UserError(
                f"graph (model {self.graph.model_hash or '?'}) and library (model "
                f"{lib.model_hash or '?'}) come from different builds"
            )
        self._input_index = {i["name"]: k for k, i in enumerate(self.graph.inputs)}
        self._param_info = {
            p["name"]: TensorInfo(p["shape"], p["dtype"]) for p in self.graph.params
        }
        self._params: dict[str, np.ndarray] = {}
        self._generation = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        self._states: list[_ThreadState] = []

    def _state(self) -> _ThreadState:
        state = getattr(self._local, "state", None)
        if state is None:
            state = _ThreadState(
                [
                    aligned_empty(i["shape"], i["dtype"], what=f"input {i['name']!r}")
                    for i in self.graph.inputs
                ],
                [
                    aligned_empty(o.shape, o.dtype, what=f"output #{k}")
                    for k, o in enumerate(self.graph.outputs)
                ],
                [_bound_device(name, self.lib) for name in self.graph.devices],
            )
            self._local.state = state
            with self._lock:
                self._states.append(state)
        return state

    @property
    def _inputs(self) -> list[np.ndarray]:
        return self._state().inputs

    @property
    def _outputs(self) -> list[np.ndarray]:
        return self._state().outputs

    @property
    def _devices(self) -> list[BoundDevice]:
        return self._state().devices

    def device_runtime(self, target: str) -> DeviceRuntime:
        """The calling thread's runtime of a device the library uses, by target kind or
        description ('accel': the accelerator's simulator, whose `summary()` has the cycle
        counts of the layers it ran). UserError naming the devices for one it does not use."""
        for bound in self._devices:
            if bound.name == target or bound.name.split()[0] == target:
                return bound.runtime
        used = ", ".join(self.graph.devices) or "none"
        raise UserError(f"the library runs nothing on {target!r} (its devices: {used})")

    # -- inputs ----------------------------------------------------------------------------

    def set_input(self, key: str | int | None = None, value=None, **params) -> None:
        """`set_input("data", x)` sets a graph input; `set_input(**params)` sets weights."""
        if key is not None:
            self._set_one(key, value)
        for name, v in params.items():
            self._set_one(name, v)

    def load_params(self, data: bytes | bytearray | memoryview | str | os.PathLike) -> None:
        """Set the params from a params file (its path) or its bytes (`save_param_dict(params,
        model_hash)`). A file tied to another build is refused, as the C entry point refuses it;
        a file tied to no build (no model hash) is accepted."""
        where = ""
        if isinstance(data, str | os.PathLike):
            where = os.fspath(data)
            try:
                with open(where, "rb") as f:
                    data = bytearray(f.read())
            except OSError as err:
                raise UserError(f"cannot read params file: {err.strerror}", where) from None
        try:
            tag = params_model_hash(data)
        except UserError as err:
            raise UserError(err.message, where or None) from None
        if tag and self.graph.model_hash and tag != self.graph.model_hash:
            raise UserError(
                f"these params belong to model {tag}, not to this build "
                f"({self.graph.model_hash}); compile again or use that build's params"
            )
        self.set_input(**load_params(data, where))

    def _set_one(self, key: str | int, value) -> None:
        if isinstance(key, int):
            if not 0 <= key < len(self._inputs):
                raise UserError(
                    f"input index {key} out of range (the model has {len(self._inputs)})"
                )
            key = self.graph.inputs[key]["name"]
        if key in self._input_index:
            k = self._input_index[key]
            info = self.graph.inputs[k]
            self._inputs[k][...] = self._checked(
                key, value, TensorInfo(info["shape"], info["dtype"])
            )
            self._state().given.add(k)
        elif key in self._param_info:
            # our own copy, laid out as the C runtime lays out weights: every thread's C model
            # reads it in place (a caller may change or free what it passed)
            checked = streamed_copy(
                self._checked(key, value, self._param_info[key]), what=f"param {key!r}"
            )
            with self._lock:  # copy on write: a thread creating its model keeps a snapshot
                self._params = {**self._params, key: checked}
                self._generation += 1
        else:
            raise UserError(
                f"{key!r} is neither an input ({', '.join(self._input_index)}) nor a param "
                "of this model"
            )

    @staticmethod
    def _checked(name: str, value, info: TensorInfo) -> np.ndarray:
        array = np.asarray(value)
        if list(array.shape) != list(info.shape):
            raise UserError(f"{name!r} must have shape {info.shape}, got {list(array.shape)}")
        if array.dtype != np.dtype(info.dtype):
            raise UserError(f"{name!r} must have dtype {info.dtype}, got {array.dtype}")
        return array

    def get_num_inputs(self) -> int:
        """The number of graph inputs (the data a run takes; params are not counted)."""
        return len(self.graph.inputs)

    def get_input_info(self) -> list[TensorSpec]:
        """The graph inputs in order (what `run(**inputs)` / `set_input` take; not params):
        name, shape and dtype of each, as onnxruntime's `get_inputs()` lists them."""
        return [
            TensorSpec(k, i["name"], tuple(int(d) for d in i["shape"]), str(i["dtype"]))
            for k, i in enumerate(self.graph.inputs)
        ]

    def get_output_info(self) -> list[TensorSpec]:
        """The graph outputs in order (`get_output(index)`): shape and dtype of each."""
        return [
            TensorSpec(k, "", tuple(int(d) for d in o.shape), str(o.dtype))
            for k, o in enumerate(self.graph.outputs)
        ]

    def get_input(self, name: str) -> np.ndarray:
        if name not in self._input_index:
            raise UserError(f"no input named {name!r}")
        return self._inputs[self._input_index[name]].copy()

    # -- running ---------------------------------------------------------------------------

    def _ensure_handle(self) -> int:
        """This thread's C model, created (again) when the params changed since."""
        state = self._state()
        if state.handle is not None and state.generation == self._generation:
            return state.handle  # a stale read only delays another thread's params to its next run
        with self._lock:
            params, generation = self._params, self._generation
        missing = [p for p in self._param_info if p not in params]
        if missing:
            raise UserError(
                f"params not set: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}"
                " (call set_input(**params) with the params from build)"
            )
        self._destroy(state)
        if hasattr(self.lib.lib, "nnvm_create_bound"):  # the params in place, shared by threads
            pointers = (ctypes.c_void_p * max(1, len(self._param_info)))(
                *[params[name].ctypes.data for name in self._param_info]
            )
            handle = self.lib.lib.nnvm_create_bound(pointers, len(self._param_info))
            state.params = params
        else:  # a library from before it: its own copy of the params file
            blob = save_params(
                {name: params[name] for name in self._param_info}, self.graph.model_hash
            )
            handle = self.lib.lib.nnvm_create(blob, len(blob))
        if not handle:
            raise UserError(f"the model library refused the params: {self.lib.last_error()}")
        state.handle, state.generation = handle, generation
        for index, bound in enumerate(state.devices):
            if self.lib.lib.nnvm_bind_device(handle, index, ctypes.byref(bound.api)) != 0:
                raise UserError(f"binding device {bound.name!r}: {self.lib.last_error()}")
        return handle

    def _destroy(self, state: _ThreadState) -> None:
        if state.handle is not None:
            self.lib.lib.nnvm_destroy(state.handle)
            state.handle = None

    def run(self, **inputs) -> None:
        for name, value in inputs.items():
            self._set_one(name, value)
        self._check_inputs_given()
        handle = self._ensure_handle()
        self.lib.sync_threads()
        state = self._state()
        if self.lib.lib.nnvm_run(handle, state.in_ptrs, state.out_ptrs) != 0:
            detail = "; ".join(f"{d.name}: {d.error}" for d in state.devices if d.error)
            raise UserError(
                f"nnvm_run failed: {self.lib.last_error()}" + (f" ({detail})" if detail else "")
            )

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    def _check_inputs_given(self) -> None:
        given = self._state().given
        missing = [i["name"] for k, i in enumerate(self.graph.inputs) if k not in given]
        if missing:
            raise UserError(
                f"inputs not set: {', '.join(missing)} (pass them to run() or set_input)"
            )

    def get_output(self, index: int, out: np.ndarray | None = None) -> np.ndarray:
        if not 0 <= index < len(self._outputs):
            raise UserError(f"output index {index} out of range ({len(self._outputs)} outputs)")
        result = self._outputs[index]
        if out is None:
            return result.copy()
        if (
            not isinstance(out, np.ndarray)
            or out.shape != result.shape
            or out.dtype != result.dtype
        ):
            got = (
                f"{out.dtype}{list(out.shape)}"
                if isinstance(out, np.ndarray)
                else type(out).__name__
            )
            raise UserError(
                f"get_output({index}, out=...): out must be {result.dtype}{list(result.shape)}, "
                f"got {got}"
            )
        out[...] = result
        return out

    def benchmark(self, number: int = 10, repeat: int = 3, warmup: int = 1) -> dict[str, float]:
        """Time `run()`: per repeat, the mean over `number` calls; median/min/mean in ms."""
        for _ in range(warmup):
            self.run()
        results = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                self.run()
            results.append((time.perf_counter() - start) * 1e3 / number)
        return {
            "median_ms": statistics.median(results),
            "min_ms": min(results),
            "mean_ms": statistics.fmean(results),
            "results_ms": results,  # type: ignore[dict-item]
        }

    def __del__(self) -> None:
        try:
            for state in self._states:
                self._destroy(state)
        except Exception:
            pass


@dataclass
class KernelTiming:
    kernel: str
    ms: float


class DebugGraphModule(GraphModule):
    """Runs the exported kernels one by one from Python over the same arena layout (one arena:
    runs from several threads take turns)."""

    def __init__(self, graph, lib: Module, device: Device | None = None):
        super().__init__(graph, lib, device)
        self._arena = streamed_empty(self.graph.arena_bytes, what="the intermediate arena")
        self._constants = {
            name: np.asarray(c["value"], dtype=c["dtype"], order="C").reshape(c["shape"])
            for name, c in self.graph.constants.items()
        }
        self._kernels = {}
        self.timings: list[KernelTiming] = []
        self._loops: list[list[LoopSpan]] = []
        self._turn = threading.Lock()

    def _array(self, ref: Ref, info: TensorInfo) -> np.ndarray:
        if ref.kind == "input":
            return self._inputs[ref.index]
        if ref.kind == "output":
            return self._outputs[ref.index]
        if ref.kind == "param":
            return self._params[ref.name]  # each in a streamed buffer, as nnvm_run reads it
        if ref.kind == "constant":
            return self._constants[ref.name]
        nbytes = info.nbytes
        return self._arena[ref.offset : ref.offset + nbytes].view(info.dtype).reshape(info.shape)

    def _call(self, node: Node, ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
        """Run one kernel over host arrays: an exported host kernel directly, a device kernel
        through its device's runtime (copies in and out)."""
        if node.device:
            runtime = self._devices[self.graph.devices.index(node.device)].runtime
            run_on_device(runtime, node.kernel, ins, outs)
            return
        if node.kernel not in self._kernels:
            self._kernels[node.kernel] = self.lib.get_function(
                node.kernel, len(node.inputs) + len(node.outputs)
            )
        self._kernels[node.kernel](*[a.ctypes.data for a in ins + outs])

    def _args(self, node: Node) -> tuple[list[np.ndarray], list[np.ndarray]]:
        ins = [self._array(r, i) for r, i in zip(node.inputs, node.input_info, strict=True)]
        outs = [self._array(r, i) for r, i in zip(node.outputs, node.output_info, strict=True)]
        return ins, outs

    def run(self, **inputs) -> None:
        with self._turn:
            self._run_kernels(inputs)

    def _run_kernels(
        self, inputs: dict[str, Any], tracer: PoolTracer | None = None
    ) -> list[tuple[int, int]]:
        """One run; with a tracer, also each kernel's (start, end) on CLOCK_MONOTONIC (ns) and
        its pool's loop spans in `self._loops`."""
        for name, value in inputs.items():
            self._set_one(name, value)
        self._check_inputs_given()
        self._ensure_handle()  # same params check as the entry point
        self.lib.sync_threads()
        self.timings = []
        stamps: list[tuple[int, int]] = []
        self._loops = []
        with self.lib.kernel_fpenv():
            for node in self.graph.nodes:
                ins, outs = self._args(node)
                start = time.monotonic_ns()  # CLOCK_MONOTONIC, the pool's clock
                self._call(node, ins, outs)
                end = time.monotonic_ns()
                self.timings.append(KernelTiming(node.kernel, (end - start) / 1e6))
                stamps.append((start, end))
                if tracer is not None:
                    self._loops.append(tracer.take())
        for copy in self.graph.copies:
            info = self.graph.outputs[copy.output]
            self._outputs[copy.output][...] = self._array(copy.source, info)
        return stamps

    def profile(
        self, number: int = 3, trace: str | os.PathLike[str] | None = None
    ) -> ProfileReport:
        """Run `number` times and return the per-kernel table (a ProfileReport: prints as
        kernel, median ms, %; `.rows` / `.to_dicts()`; `.total_ms`).

        `trace="run.json"` also writes a Chrome / Perfetto trace (Trace Event JSON) of one more
        run: a span per kernel on the calling thread (args: ops, shapes, dtypes, bytes), and for
        each thread of the library's pool that ran part of a kernel's parallel loops a span per
        loop on its own track (args: chunks claimed), recorded by the pool itself. A library
        built before the pool could record (no nnvm_trace_take) gives kernel spans only. Loops
        that another Python thread runs on the same library meanwhile would show in the trace."""
        if number < 1:
            raise UserError(f"profile(number={number}): number must be at least 1")
        stalls_before = self._pool_stalls()
        runs = []
        for _ in range(number):
            self.run()
            runs.append([t.ms for t in self.timings])
        per_node = [statistics.median(col) for col in zip(*runs, strict=True)]
        report = make_report(self.graph, per_node, number)
        stalls_after = self._pool_stalls()
        if stalls_before is not None and stalls_after is not None:
            report.stalls = stalls_after - stalls_before
        if trace is not None:
            report.trace = self._write_trace(report, trace)
        return report

    def _pool_stalls(self) -> int | None:
        count = getattr(self.lib, "pool_stalls", None)
        return count() if count is not None else None

    def _write_trace(self, report: ProfileReport, path: str | os.PathLike[str]) -> Path:
        from nnvm.threads import get_num_threads

        tracer = PoolTracer.of(self.lib.lib)
        with self._turn:
            if tracer is not None:
                tracer.start()
            try:
                stamps = self._run_kernels({}, tracer)
            finally:
                if tracer is not None:
                    tracer.stop()
        loops = self._loops if tracer is not None else [[] for _ in stamps]
        spans = [
            KernelSpan(row, start, end, node_loops)
            for row, (start, end), node_loops in zip(report.rows, stamps, loops, strict=True)
        ]
        metadata = {
            "model_hash": self.graph.model_hash,
            "target": self.graph.target,
            "threads": get_num_threads(),
            "pool_threads_traced": tracer is not None,
            "loop_spans_dropped": tracer.dropped if tracer is not None else 0,
        }
        title = f"nnvm model {self.graph.model_hash[:12] or '?'}"
        return write_chrome_trace(path, trace_events(spans, os.getpid(), title), metadata)

    def check(self, rtol: float = 1e-3, atol: float = 1e-4) -> str | None:
        """Run kernel by kernel, comparing each output with the reference executor on the same
        inputs; returns the name of the first kernel that diverges (None when all agree)."""

        with self._turn:
            return self._check(rtol, atol)

    def _check(self, rtol: float, atol: float) -> str | None:
        from nnvm.reference import run_reference
        from nnvm.registry import make_context
        from nnvm.support.diagnostics import parse_module

        sources = self.graph.extra.get("kernel_ir", {})
        self._check_inputs_given()
        self._ensure_handle()
        self.lib.sync_threads()
        ctx = make_context()
        for node in self.graph.nodes:
            ins, outs = self._args(node)
            self._call(node, ins, outs)
            if node.kernel not in sources:
                raise UserError(f"the graph holds no IR for {node.kernel}; cannot check it")
            module = parse_module(ctx, sources[node.kernel], node.kernel)
            expected = run_reference(module, {}, [a.copy() for a in ins], function=node.kernel)
            for got, want in zip(outs, expected, strict=True):
                if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
                    return node.kernel
        for copy in self.graph.copies:
            info = self.graph.outputs[copy.output]
            self._outputs[copy.output][...] = self._array(copy.source, info)
        return None


def create(
    graph: GraphLike,
    lib: Module | str | os.PathLike | Any,
    device: Device | Any | None = None,
    debug: bool = False,
) -> GraphModule | Any:
    """A runnable model from build's graph and library. `graph` may also be the graph's JSON
    text or the path of a graph.json (str or PathLike), `lib` the path of an exported library.
    `debug=True`: kernel by kernel, with `profile()` and `check()`. A device or library that
    lives in another process (nnvm.rpc's `remote.cpu(0)`, `remote.load_module(name)`) builds
    the module there through its `create_graph_module(graph, lib, device, debug)`."""
    for owner in (device, lib):
        elsewhere = getattr(owner, "create_graph_module", None)
        if elsewhere is not None:
            return elsewhere(graph, lib, device, debug)
    cls = DebugGraphModule if debug else GraphModule
    return cls(graph, lib, device)


def _folder_library(folder: Path, graph: ExecutorGraph) -> Module:
    """The library of `graph` in a folder: its only .so, else the one built with the graph."""
    found = sorted(folder.glob("*.so"))
    if not found:
        raise UserError(f"{folder} holds no model library (*.so) beside its graph.json")
    if len(found) == 1:
        return load_module(found[0])
    for path in found:
        try:
            lib = load_module(path)
        except UserError:
            continue
        if lib.model_hash == graph.model_hash:
            return lib
    names = ", ".join(p.name for p in found)
    raise UserError(f"none of the libraries in {folder} ({names}) was built with its graph.json")


def load(
    folder: str | os.PathLike[str], device: Device | None = None, debug: bool = False
) -> GraphModule:
    """A model ready to run from a folder `nnvm-compile -o folder` wrote (or one holding the
    same files): graph.json, the library (its only *.so) and model.params, which are set (a
    folder without model.params gives a module whose params are still to set)."""
    path = Path(folder)
    if not path.is_dir():
        what = "a file" if path.exists() else "no such folder"
        raise UserError(
            f"load() takes the folder nnvm-compile wrote (graph.json, library, model.params); "
            f"{str(path)!r} is {what}"
        )
    if not (path / "graph.json").is_file():
        raise UserError(f"{path} holds no graph.json (is it a folder nnvm-compile wrote?)")
    graph = _as_graph(path / "graph.json")
    module = create(graph, _folder_library(path, graph), device, debug)
    if (path / "model.params").is_file():
        module.load_params(path / "model.params")
    return module
