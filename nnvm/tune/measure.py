"""Measuring one candidate: the kernel's object is loaded into the measuring process (MCJIT,
no linker), called on seeded random inputs, its output checked against the reference
executor's, then timed: `repeat` rounds of `number` calls, `number` grown until a round lasts
`min_round_s`. Runs in a worker process (nnvm/support/worker.py), so a kernel that crashes or
hangs costs a worker, not the tuning run."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from nnvm.support.target import Target

QUIET_CPU_SHARE = 0.9
"""A timed round counts when the measuring process got this share of its wall time on a CPU
(its own CPU time over wall time; with several threads, at least one CPU): below it, another
process preempted the kernel and the
round measures the machine's load, not the candidate (a busy 2-core machine made one conv
read 30 ms instead of 6.5). Such rounds are discarded and run again."""
MAX_ROUNDS_FACTOR = 4
"""At most repeat x this many rounds are run to collect `repeat` undisturbed ones."""


@dataclass
class RunJob:
    obj: bytes
    name: str
    target: Target
    shapes: list[list[int]]
    dtypes: list[str]
    n_inputs: int
    inputs: list[np.ndarray]
    expected: list[np.ndarray] | None
    threads: int
    repeat: int = 5
    min_round_s: float = 0.01
    rtol: float = 1e-3
    atol: float = 1e-4
    atols: list[float] | None = None
    """Per output, the absolute tolerance when the kernel's own conditioning asks for more
    than `atol` (see `nudged_inputs`); None: `atol` for every output."""
    cutoff_s: float = float("inf")
    """A candidate whose checking call takes longer than this is timed by that one call: it
    cannot win, and its rounds would cost the tuning run minutes (the best time so far x 10)."""
    flush_cache: bool = False
    """Before each timed call, flush every argument but the first input from the caches (TVM's
    enable_cpu_cache_flush): in a model a kernel's weights were evicted by the kernels between
    two of its calls, while repeated calls here would find them warm, so warm timing favours
    schedules that only win on warm weights (no software prefetch)."""


@dataclass
class RunResult:
    times_s: list[float]
    error: str = "ok"
    detail: str = ""


def check_outputs(job: RunJob, outs: Sequence[np.ndarray]) -> RunResult | None:
    """A "wrong" result when an output differs from the reference's beyond its tolerance."""
    if job.expected is None:
        return None
    for k, (got, want) in enumerate(zip(outs, job.expected, strict=True)):
        atol = job.atols[k] if job.atols is not None else job.atol
        if not np.allclose(got, want, rtol=job.rtol, atol=atol, equal_nan=True):
            err = float(np.max(np.abs(np.asarray(got).astype(np.float64) - want)))
            return RunResult([], "wrong", f"output {k} differs by up to {err:.3g}")
    return None


NUDGE = 2.0**-21
"""The relative change `nudged_inputs` makes to each float input: a few f32 ulps, as the
rounding of a reordered sum or an approximated exp moves a kernel's intermediate values."""
CONDITIONING_MARGIN = 4.0
"""A candidate may differ from the reference this many times as much as the reference moves
under nudged inputs: an LSTM of 32 steps on the tuner's random weights amplifies rounding
differences (onnxruntime and nnvm both differ from a float64 computation by 0.04, from each
other by 0.01), where a well-conditioned kernel moves by ~1e-7 and keeps `atol`."""


def nudged_inputs(inputs: Sequence[np.ndarray], seed: int) -> list[np.ndarray]:
    """`inputs` with each float element scaled by 1 +- NUDGE (random signs): how much the
    reference's outputs move under them is how much rounding alone may move a kernel's."""
    rng = np.random.default_rng(seed)
    out = []
    for x in inputs:
        if x.dtype.kind == "f":
            signs = rng.choice(np.array([-1.0, 1.0]), x.shape)
            x = (x.astype(np.float64) * (1.0 + signs * NUDGE)).astype(x.dtype)
        out.append(x)
    return out


def conditioned_atols(
    expected: Sequence[np.ndarray], moved: Sequence[np.ndarray], atol: float
) -> list[float]:
    """Each output's absolute tolerance: `atol`, or CONDITIONING_MARGIN times the largest
    finite difference between the reference's outputs on the inputs and on nudged inputs,
    whichever is larger (non-float outputs keep `atol`)."""
    atols = []
    for a, b in zip(expected, moved, strict=True):
        spread = 0.0
        if a.dtype.kind == "f" and a.size:
            d = np.abs(a.astype(np.float64) - np.asarray(b, np.float64))
            d = d[np.isfinite(d)]
            spread = float(d.max()) if d.size else 0.0
        atols.append(max(atol, CONDITIONING_MARGIN * spread))
    return atols


def random_inputs(shapes: list[list[int]], dtypes: list[str], seed: int) -> list[np.ndarray]:
    """Seeded inputs for a kernel (floats in [-1, 1), integers small and non-negative)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in zip(shapes, dtypes, strict=True):
        dt = np.dtype(dtype)
        if dt.kind == "f":
            out.append(rng.uniform(-1, 1, shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            out.append(rng.integers(0, 4, shape).astype(dt))
    return out


_FLUSH_IR = """
declare void @llvm.x86.sse2.clflush(ptr)
declare void @llvm.x86.sse2.mfence()
define void @nnvm_flush_lines(ptr %p, i64 %n) {
entry:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %exit
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %q = getelementptr i8, ptr %p, i64 %i
  call void @llvm.x86.sse2.clflush(ptr %q)
  %next = add i64 %i, 64
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  call void @llvm.x86.sse2.mfence()
  ret void
}
"""


class CacheFlusher:
    """clflush over buffers, JIT-compiled into this process (x86: what the host runs kernels
    on; `flush_cache` is refused elsewhere before any trial)."""

    def __init__(self, target: Target):
        from nnvm.targets.llvm.compile import compile_jit

        self._module = compile_jit(_FLUSH_IR, target)  # type: ignore[arg-type]
        kernel = self._module.function("nnvm_flush_lines", None, [ctypes.c_void_p, ctypes.c_int64])
        self._flush = kernel.cfunc  # not Kernel.__call__: no thread-pool sync between calls

    def __call__(self, arrays: list[np.ndarray]) -> None:
        for a in arrays:
            self._flush(a.ctypes.data, a.nbytes)


@cache
def _flusher(target: Target) -> CacheFlusher:
    """One compiled flusher per measuring process and target (not one per candidate)."""
    return CacheFlusher(target)


def can_flush_cache(target: Target) -> bool:
    """Whether the measuring host's kernels run where clflush exists (x86-64)."""
    triple = getattr(target, "triple", "")
    return triple.startswith(("x86_64", "i686", "i386"))


class _Loaded:
    """An object file loaded into this process by MCJIT."""

    def __init__(self, obj: bytes, target: Target):
        import llvmlite.binding as llvm

        from nnvm.targets.llvm.compile import load_parallel_runtime

        load_parallel_runtime()
        tm = target.target_machine(jit=True)  # type: ignore[attr-defined]
        empty = llvm.parse_assembly("")
        self.engine = llvm.create_mcjit_compiler(empty, tm)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()

    def function(self, name: str, nargs: int):
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(name)
        return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))(address)

    def set_threads(self, n: int) -> None:
        from nnvm.targets.llvm.compile import NUM_THREADS_SYMBOL

        try:
            address = self.engine.get_global_value_address(NUM_THREADS_SYMBOL)
        except Exception:
            address = 0
        if address:
            ctypes.c_int32.from_address(address).value = n


def run_in_worker(job: RunJob) -> RunResult:
    """Load, check, time (runs in a worker)."""
    try:
        loaded = _Loaded(job.obj, job.target)  # keeps the code alive while fn is called
        fn = loaded.function(job.name, len(job.shapes))
    except Exception as err:  # a bad object: record it, keep tuning
        return RunResult([], "run", f"load: {type(err).__name__}: {err}")
    loaded.set_threads(job.threads)
    outs = [
        np.zeros(s, np.dtype(d))
        for s, d in zip(job.shapes[job.n_inputs :], job.dtypes[job.n_inputs :], strict=True)
    ]
    args = [a.ctypes.data for a in [*job.inputs, *outs]]
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    wrong = check_outputs(job, outs)
    if wrong is not None:
        return wrong
    if first > job.cutoff_s:
        return RunResult([first])
    if job.flush_cache:
        return _timed_cold(job, fn, args, [*job.inputs[1:], *outs])
    number = 1
    while True:  # calls per round: a round of at least min_round_s
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        elapsed = time.perf_counter() - start
        if elapsed >= job.min_round_s or number >= 1 << 16:
            break
        number = max(number * 2, int(number * job.min_round_s / max(elapsed, 1e-9) * 1.2))

    def warm_round() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        return (time.perf_counter() - start) / number

    return _quiet_rounds(job, warm_round)


def _quiet_rounds(job: RunJob, one_round: Callable[[], float]) -> RunResult:
    """`repeat` rounds (`one_round` runs one and returns its seconds per call) in which the
    measuring process had QUIET_CPU_SHARE of the wall time; others are discarded and run again,
    up to MAX_ROUNDS_FACTOR x `repeat` rounds."""
    quiet: list[float] = []
    preempted = 0
    last = 0.0
    for _ in range(job.repeat * MAX_ROUNDS_FACTOR):  # until `repeat` rounds ran undisturbed
        cpu, start = time.process_time(), time.perf_counter()
        last = one_round()
        wall = time.perf_counter() - start
        if time.process_time() - cpu >= QUIET_CPU_SHARE * wall:
            quiet.append(last)
            if len(quiet) >= job.repeat:
                break
        else:
            preempted += 1
    if len(quiet) < job.repeat:  # a machine never quiet: the fastest rounds are the least hit
        return RunResult(quiet or [last], detail=f"busy machine: {preempted} rounds preempted")
    return RunResult(quiet, detail=f"{preempted} preempted rounds discarded" if preempted else "")


def _timed_cold(job: RunJob, fn, args: list[int], flushed: list[np.ndarray]) -> RunResult:
    """Rounds of single calls, each after the flush of `flushed` (not timed), each round at
    least min_round_s of calls."""
    flush = _flusher(job.target)

    def cold_round() -> float:
        spent = 0.0
        calls = 0
        while spent < job.min_round_s and calls < 1 << 16:
            flush(flushed)
            start = time.perf_counter()
            fn(*args)
            spent += time.perf_counter() - start
            calls += 1
        return spent / calls

    return _quiet_rounds(job, cold_round)
