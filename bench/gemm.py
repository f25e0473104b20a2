"""`python -m bench --gemm`: GEMM through build() against numpy's sgemm (OpenBLAS) on the same
thread count, the shapes issue 14 names: 1024^3, and M in {1, 7, 197, 1000} rows with N, K in
{768, 3072}; plus the same products with the rows spread over leading axes as exports write them
([1, 14, 14, K]: a channels-last linear; [197, 1, K]: torch's [seq, batch, hidden]).

Each case is an ONNX MatMul by a constant [K, N] weight. Both sides run in this process in
interleaved rounds; the table gives medians and numpy's time over ours (>= 1: we are faster).
Numpy multiplies the rows flattened to [M, K] (its own 3-D matmul loops over the leading axes
and would be a weak bar). The outputs are compared before timing."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np
from onnx import helper

from nnvm.testing.onnx_models import single_op

SQUARE = [(1024, 1024, 1024)]
ROWS = [1, 7, 197, 1000]
WIDTHS = [768, 3072]


@dataclass
class GemmRow:
    case: str
    threads: int
    ours_ms: float
    numpy_ms: float

    @property
    def speed(self) -> float:
        """numpy's time over ours."""
        return self.numpy_ms / self.ours_ms

    def as_dict(self) -> dict:
        return {**asdict(self), "speed_vs_numpy": self.speed}


def cases() -> list[tuple[str, list[int], int, int]]:
    """(label, x shape, K, N) for every case."""
    out = [(f"{m}x{k} . {k}x{n}", [m, k], k, n) for m, k, n in SQUARE]
    for m in ROWS:
        for k in WIDTHS:
            for n in WIDTHS:
                out.append((f"{m}x{k} . {k}x{n}", [m, k], k, n))
    out.append(("1x14x14x1536 . 1536x384", [1, 14, 14, 1536], 1536, 384))
    out.append(("1x7x7x3072 . 3072x768", [1, 7, 7, 3072], 3072, 768))
    out.append(("197x1x768 . 768x2304", [197, 1, 768], 768, 2304))
    return out


def _median_ms(fn, rounds: int, number: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number * 1e3)
    return times


def measure(label: str, x_shape: list[int], k: int, n: int, threads: int, rounds: int) -> GemmRow:
    from threadpoolctl import threadpool_limits

    from bench.harness import compile_ours

    model = single_op(helper.make_node("MatMul", ["x", "w"], ["y"]), x_shape, {"w": (k, n)})
    weight = next(i for i in model.graph.initializer if i.name == "w")
    from onnx import numpy_helper

    w = numpy_helper.to_array(weight)
    x = np.random.default_rng(0).standard_normal(x_shape, dtype=np.float32)
    runtime, _ = compile_ours(model, threads)
    runtime.set_input(x=x)
    runtime.run()
    x2 = x.reshape(-1, k)  # numpy batches a 3-D+ matmul; sgemm's bar is the flat product
    out = np.empty((x2.shape[0], n), np.float32)
    ours, theirs = [], []
    # Every numpy call runs on `threads` threads, the reference too: a first call on all the
    # cores leaves part of the weight in an idle core's L2, where it stays and serves later
    # one-thread calls (a 3072x768 GEMV 0.33 -> 0.27 ms), a cache one thread does not have.
    with threadpool_limits(limits=threads, user_api="blas"):
        want = np.matmul(x, w)
        scale = max(float(np.abs(want).max()), 1.0)
        np.testing.assert_allclose(runtime.get_output(0), want, rtol=1e-3, atol=1e-4 * scale)
        flops = 2 * want.size * k
        number = max(1, int(2e9 / max(flops, 1) / 10))  # about 0.1 s a round at 20 GFLOP/s
        for _ in range(rounds):
            ours += _median_ms(runtime.run, 1, number)
            theirs += _median_ms(lambda: np.matmul(x2, w, out=out), 1, number)
    return GemmRow(label, threads, statistics.median(ours), statistics.median(theirs))


def table(rows: list[GemmRow]) -> str:
    width = max(len(r.case) for r in rows)
    header = f"{'case':<{width}} {'thr':>3} {'ours ms':>9} {'numpy ms':>9} {'numpy/ours':>10}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r.case:<{width}} {r.threads:>3} {r.ours_ms:>9.3f} {r.numpy_ms:>9.3f} {r.speed:>10.2f}"
        )
    return "\n".join(lines)


def run(threads: list[int], rounds: int, only: list[str] | None = None) -> list[GemmRow]:
    rows = []
    for label, x_shape, k, n in cases():
        if only and not any(o in label for o in only):
            continue
        for t in threads:
            rows.append(measure(label, x_shape, k, n, t, rounds))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    return rows
