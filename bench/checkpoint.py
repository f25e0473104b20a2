"""Sublinear-memory training: planned arena bytes and step time of a residual chain's train
graph (forward + backward) with and without checkpointing (the gradient pass's
`checkpoint=-1`, about sqrt(n) segments).

    python bench/checkpoint.py 16 64 256 1024
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import nnvm.symbol as sym
from nnvm.compiler import build
from nnvm.passes.gradient import differentiate
from nnvm.runtime import graph_runtime


def chain(n: int, width: int, batch: int, scale: float):
    """n blocks h = h + relu(dense(h, w_i)); loss = mean(h * h)."""
    x = sym.Variable("x", shape=(batch, width))
    h = x
    for i in range(n):
        h = h + sym.relu(sym.dense(h, sym.Variable(f"w{i}")))
    rng = np.random.default_rng(0)
    params = {
        f"w{i}": (rng.standard_normal((width, width)) * scale).astype("float32") for i in range(n)
    }
    return sym.mean(h * h, axes=[0, 1]), params


def measure(n: int, checkpoint: int, args) -> tuple[int, list[np.ndarray], float, float]:
    loss, params = chain(n, args.width, args.batch, args.scale)
    module, used = loss.to_module(params=params)
    differentiate(module, checkpoint=checkpoint)
    t0 = time.perf_counter()
    graph, lib, p = build(module, params=used)
    compile_s = time.perf_counter() - t0
    m = graph_runtime.create(graph, lib)
    m.set_input(**p)
    m.set_input(
        "x", np.random.default_rng(1).standard_normal((args.batch, args.width)).astype("f4")
    )
    m.run()
    outs = [m.get_output(k) for k in range(m.get_num_outputs())]
    times = []
    for _ in range(args.rounds):
        t1 = time.perf_counter()
        for _ in range(args.number):
            m.run()
        times.append((time.perf_counter() - t1) / args.number)
    return graph.arena_bytes, outs, float(np.median(times)) * 1e3, compile_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blocks", type=int, nargs="+")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--scale", type=float, default=0.005, help="weight scale (keeps h finite)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=20)
    args = ap.parse_args()
    print(
        "| blocks | arena without | arena with | saving | ms without | ms with | extra time | max rel. diff |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in args.blocks:
        a0, o0, t0, _ = measure(n, 0, args)
        a1, o1, t1, _ = measure(n, -1, args)
        diff = max(
            float(np.abs(a - b).max() / max(float(np.abs(a).max()), 1e-30))
            for a, b in zip(o0, o1, strict=True)
        )
        print(
            f"| {n} | {a0} | {a1} | {a0 / a1:.1f}x | {t0:.3f} | {t1:.3f} | "
            f"{100 * (t1 / t0 - 1):+.0f}% | {diff:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
