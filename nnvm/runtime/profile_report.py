"""What the debug runtime's `profile()` returns, and the Chrome trace `profile(trace=...)` writes.

`ProfileReport` is a per-kernel table: `print(report)` (or the notebook's repr) shows the table
slowest kernel first, `report.rows` / `report.to_dicts()` give one record per kernel (in graph
order), `report.total_ms` the sum of the kernels' median times.

`write_chrome_trace` writes the Trace Event format that chrome://tracing, Perfetto
(ui.perfetto.dev) and TVM's and onnxruntime's profilers use: `{"traceEvents": [...]}` of complete
events (`"ph": "X"`, microseconds). Thread 0 of the trace holds the kernel spans of the calling
thread; each thread of the model library's pool (targets/cpu/nnvm_threads.c) that ran part of a
kernel's parallel loops has its own track below it, with one span per loop and thread."""

from __future__ import annotations

import ctypes
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nnvm.support.executor_graph import ExecutorGraph, Node

_OP = re.compile(r"=\s*nnvm\.(\w+)")


def kernel_ops(graph: ExecutorGraph, node: Node) -> list[str]:
    """The graph ops a kernel computes, in order, from the kernel IR the build recorded (from
    its name `fused_<ops>_<hash>` when the graph holds none)."""
    text = graph.extra.get("kernel_ir", {}).get(node.kernel)
    if text:
        ops = [op for op in _OP.findall(text) if op != "param"]
        if ops:
            return ops
    name = node.kernel.removeprefix("fused_")
    return [name.rsplit("_", 1)[0] if "_" in name else name]


@dataclass(frozen=True)
class KernelProfile:
    """One kernel call of the graph: its median time over the profiled runs."""

    index: int
    """Its position in the graph's calls (graph.nodes)."""
    kernel: str
    ms: float
    percent: float
    ops: list[str]
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    dtypes: list[str]
    """Of its inputs, then its outputs."""
    bytes: int
    """Bytes its arguments hold (inputs and outputs): what it reads and writes at least once."""
    device: str = ""


@dataclass
class ProfileReport:
    """Per-kernel times of the debug runtime. Prints as a table; `.rows` / `.to_dicts()`."""

    rows: list[KernelProfile]
    runs: int
    trace: Path | None = None
    """The Chrome trace written with this report, if one was asked for."""
    extra: dict[str, Any] = field(default_factory=dict)
    stalls: int | None = None
    """How many times the library's thread pool waited on a descheduled worker during these
    runs (each then ran its next loops on fewer threads for a few milliseconds, so kernels
    measured then ran slower than the machine allows); None: the library does not count them."""

    @property
    def total_ms(self) -> float:
        """The sum of the kernels' median times (ms)."""
        return sum(r.ms for r in self.rows)

    def to_dicts(self) -> list[dict[str, Any]]:
        """One plain dict per kernel, in graph order (json- and pandas-ready)."""
        return [asdict(r) for r in self.rows]

    def __iter__(self) -> Iterator[KernelProfile]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        width = max([60, *(len(r.kernel) for r in self.rows)])
        total = self.total_ms
        lines = [f"{'kernel':<{width}} {'ms':>9} {'%':>6}"]
        for r in sorted(self.rows, key=lambda r: -r.ms):
            lines.append(f"{r.kernel:<{width}} {r.ms:9.3f} {r.percent:6.1f}")
        lines.append(f"{'total':<{width}} {total:9.3f} {100.0:6.1f}")
        if self.stalls:
            lines.append(
                f"({self.stalls} wait(s) on a worker another process had descheduled: the "
                "pool ran on fewer threads for a while after each)"
            )
        return "\n".join(lines)

    __repr__ = __str__


def make_report(graph: ExecutorGraph, per_node_ms: Sequence[float], runs: int) -> ProfileReport:
    total = sum(per_node_ms) or 1.0
    rows = []
    for k, (node, ms) in enumerate(zip(graph.nodes, per_node_ms, strict=True)):
        infos = [*node.input_info, *node.output_info]
        rows.append(
            KernelProfile(
                index=k,
                kernel=node.kernel,
                ms=ms,
                percent=100 * ms / total,
                ops=kernel_ops(graph, node),
                input_shapes=[list(i.shape) for i in node.input_info],
                output_shapes=[list(i.shape) for i in node.output_info],
                dtypes=[i.dtype for i in infos],
                bytes=sum(i.nbytes for i in infos),
                device=node.device,
            )
        )
    return ProfileReport(rows, runs)


@dataclass(frozen=True)
class LoopSpan:
    """One pool thread's part of one parallel loop (nnvm_threads.c's nnvm_trace_span)."""

    start_ns: int
    end_ns: int
    thread: int
    """0: the calling thread; k: pool worker k."""
    chunks: int


@dataclass(frozen=True)
class KernelSpan:
    """One kernel call of a traced run, on the calling thread (CLOCK_MONOTONIC ns)."""

    row: KernelProfile
    start_ns: int
    end_ns: int
    loops: list[LoopSpan]


class _CSpan(ctypes.Structure):
    _fields_ = [
        ("start_ns", ctypes.c_int64),
        ("end_ns", ctypes.c_int64),
        ("thread", ctypes.c_int32),
        ("chunks", ctypes.c_int32),
    ]


class PoolTracer:
    """The loop spans a model library's thread pool records while tracing is on
    (nnvm_trace_enable / nnvm_trace_take in nnvm_threads.c)."""

    CAPACITY = 16384  # nnvm_threads.c: TRACE_CAPACITY

    def __init__(self, lib: ctypes.CDLL):
        self._enable = lib.nnvm_trace_enable
        self._enable.argtypes = [ctypes.c_int32]
        self._enable.restype = None
        self._take = lib.nnvm_trace_take
        self._take.argtypes = [ctypes.POINTER(_CSpan), ctypes.c_int64]
        self._take.restype = ctypes.c_int64
        self._buffer = (_CSpan * self.CAPACITY)()
        self.dropped = 0

    @staticmethod
    def of(lib: ctypes.CDLL) -> PoolTracer | None:
        """The library's tracer; None for a library built before its pool could trace."""
        return PoolTracer(lib) if hasattr(lib, "nnvm_trace_take") else None

    def start(self) -> None:
        self.dropped = 0
        self._enable(1)

    def stop(self) -> None:
        self._enable(0)

    def take(self) -> list[LoopSpan]:
        """The spans recorded since the last take (call it between kernels)."""
        recorded = self._take(self._buffer, self.CAPACITY)
        kept = min(recorded, self.CAPACITY)
        self.dropped += recorded - kept
        return [LoopSpan(s.start_ns, s.end_ns, s.thread, s.chunks) for s in self._buffer[:kept]]


def trace_events(spans: Sequence[KernelSpan], pid: int, title: str) -> list[dict[str, Any]]:
    """Trace Event records: kernel spans on tid 0, pool thread k's loop spans on tid k + 1."""
    origin = min((s.start_ns for s in spans), default=0)

    def us(ns: int) -> float:
        return (ns - origin) / 1e3

    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": title}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "kernels"}},
    ]
    threads: set[int] = set()
    for span in spans:
        row = span.row
        events.append(
            {
                "name": row.kernel,
                "cat": "kernel",
                "ph": "X",
                "ts": us(span.start_ns),
                "dur": (span.end_ns - span.start_ns) / 1e3,
                "pid": pid,
                "tid": 0,
                "args": {
                    "index": row.index,
                    "ops": row.ops,
                    "input_shapes": row.input_shapes,
                    "output_shapes": row.output_shapes,
                    "dtypes": row.dtypes,
                    "bytes": row.bytes,
                    "device": row.device or "host",
                    "parallel_loops": sum(1 for loop in span.loops if loop.thread == 0),
                },
            }
        )
        for loop in span.loops:
            threads.add(loop.thread)
            events.append(
                {
                    "name": row.kernel,
                    "cat": "parallel-loop",
                    "ph": "X",
                    "ts": us(loop.start_ns),
                    "dur": (loop.end_ns - loop.start_ns) / 1e3,
                    "pid": pid,
                    "tid": loop.thread + 1,
                    "args": {"kernel_index": row.index, "chunks": loop.chunks},
                }
            )
    for t in sorted(threads):
        name = "pool thread 0 (the caller)" if t == 0 else f"pool worker {t}"
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": t + 1, "args": {"name": name}}
        )
    return events


def write_chrome_trace(
    path: str | os.PathLike[str], events: list[dict[str, Any]], metadata: dict[str, Any]
) -> Path:
    """Write `{"traceEvents": events, "otherData": metadata}` atomically (a temporary file, then a rename:
    a reader never sees half a trace, a failed write leaves no file behind)."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms", "otherData": metadata}, f)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest
