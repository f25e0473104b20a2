"""`python -m bench --suite real`: the real-model suite (issue 14), torch exports of 23
architectures that nobody tuned for (bench/real_export.py makes them), against onnxruntime.

Each model: its cold compile (an empty kernel cache) and warm compile (the same cache) are
timed, then the harness checks our output against onnxruntime's and times both in interleaved
rounds at each thread count. A model we cannot import or build gets a row saying why, and the
suite goes on. The exports live in NNVM_BENCH_MODELS (default ~/.cache/nnvm/bench-real);
missing ones are exported first (needs the `bench` extra)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx

from bench.harness import compile_ours
from bench.real_export import SUITE


@dataclass
class CompileTimes:
    model: str
    family: str
    cold_s: float
    warm_s: float
    kernels: int
    error: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def ensure_exported(names: list[str], directory: Path) -> None:
    missing = [n for n in names if not (directory / f"{n}.onnx").exists()]
    if missing:
        print(f"exporting {', '.join(missing)} into {directory} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.real_export",
                "--out",
                str(directory),
                "--only",
                *missing,
            ],
            check=False,
        )


def load(name: str, directory: Path) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    model = onnx.load(str(directory / f"{name}.onnx"))
    with np.load(directory / f"{name}.npz") as data:
        inputs = {k: data[k] for k in data.files}
    return model, inputs


def _build_once(model: onnx.ModelProto) -> tuple[float, int]:
    """Import + build seconds (the harness's compile_ours) and the number of kernels."""
    runtime, seconds = compile_ours(model, threads=1)
    return seconds, len(runtime.graph.kernels)


@contextmanager
def fresh_kernel_cache() -> Iterator[None]:
    """An empty kernel cache (NNVM_CACHE_DIR) for what runs inside, removed after: one model's
    cold compile, then its warm compile and the side-by-side builds, which reuse it."""
    saved = os.environ.get("NNVM_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="nnvm-bench-cache-") as cache:
        os.environ["NNVM_CACHE_DIR"] = cache
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("NNVM_CACHE_DIR", None)
            else:
                os.environ["NNVM_CACHE_DIR"] = saved


def compile_times(name: str, model: onnx.ModelProto) -> CompileTimes:
    """Cold and warm import + build seconds: run it inside fresh_kernel_cache(), so the first
    build finds the cache empty and the second finds it full."""
    cold, kernels = _build_once(model)
    warm, _ = _build_once(model)
    return CompileTimes(name, SUITE[name].family, cold, warm, kernels)


def compile_table(rows: list[CompileTimes]) -> str:
    width = max([12, *(len(r.model) for r in rows)])
    header = f"{'model':<{width}} {'cold s':>7} {'warm s':>7} {'kernels':>7}  what it stresses"
    lines = [header, "-" * len(header)]
    for r in rows:
        if r.error:
            lines.append(f"{r.model:<{width}} {'-':>7} {'-':>7} {'-':>7}  {r.error}")
        else:
            lines.append(
                f"{r.model:<{width}} {r.cold_s:7.1f} {r.warm_s:7.2f} {r.kernels:>7}  {r.family}"
            )
    return "\n".join(lines)


def failure(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:160]}"
