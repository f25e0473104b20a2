"""Elementwise kernels, scalar and vectorized (masked tails), 1 and 2 threads, JIT and .so."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_builder import KernelBuilder, compile_both, lower, memref_of, rand
from xdsl.ir.affine import AffineExpr, AffineMap

import nnvm.threads

N = 1003  # not a multiple of 8: every vector loop has a tail


def _apply(kb: KernelBuilder, kind: str, x, y):
    if kind == "add":
        return kb.addf(x, y)
    if kind == "exp":
        return kb.unary("exp", x)
    if kind == "tanh":
        return kb.unary("tanh", kb.addf(x, y))
    raise AssertionError(kind)


def _reference(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return {"add": a + b, "exp": np.exp(a), "tanh": np.tanh(a + b)}[kind]


def scalar_kernel(kind: str, n: int):
    kb = KernelBuilder("k", [memref_of([n])] * 3)
    a, b, out = kb.args
    with kb.affine_for(0, n) as i:
        kb.store(_apply(kb, kind, kb.load(a, [i]), kb.load(b, [i])), out, [i])
    return kb.finish()


def vector_kernel(kind: str, n: int, width: int = 8):
    kb = KernelBuilder("k", [memref_of([n])] * 3)
    a, b, out = kb.args
    with kb.affine_for(0, n, step=width) as i:
        x = kb.transfer_read(a, [i], width)
        y = kb.transfer_read(b, [i], width)
        kb.transfer_write(_apply(kb, kind, x, y), out, [i])
    return kb.finish()


def parallel_kernel(kind: str, n: int, chunk: int = 128, width: int = 8):
    """Chunks of `chunk` elements across threads, vectorized inside, masked at the very end."""
    kb = KernelBuilder("k", [memref_of([n])] * 3)
    a, b, out = kb.args
    chunks = -(-n // chunk)
    d0 = AffineExpr.dimension(0)
    lb = AffineMap(1, 0, (d0 * chunk,))
    ub = AffineMap(1, 0, (d0 * chunk + chunk, AffineExpr.constant(n)))
    with kb.affine_parallel([(0, chunks)]) as (c,):
        with kb.affine_for((lb, [c]), (ub, [c]), step=width) as i:
            x = kb.transfer_read(a, [i], width)
            y = kb.transfer_read(b, [i], width)
            kb.transfer_write(_apply(kb, kind, x, y), out, [i])
    return kb.finish()


@pytest.mark.parametrize("kind", ["add", "exp", "tanh"])
@pytest.mark.parametrize("style", ["scalar", "vector"])
def test_elementwise(kind, style, tmp_path):
    build = scalar_kernel if style == "scalar" else vector_kernel
    jit, lib = compile_both(lower(build(kind, N)), tmp_path)
    a, b = rand(N, seed=1, lo=-4, hi=4), rand(N, seed=2, lo=-4, hi=4)
    want = _reference(kind, a.astype(np.float64), b.astype(np.float64))
    for mod in (jit, lib):
        out = np.full(N, np.nan, np.float32)
        mod["k"](a, b, out)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["add", "exp"])
@pytest.mark.parametrize("threads", [1, 2])
def test_elementwise_parallel(kind, threads, tmp_path, monkeypatch):
    monkeypatch.setattr(nnvm.threads, "_num_threads", None)
    nnvm.threads.set_num_threads(threads)
    jit, lib = compile_both(lower(parallel_kernel(kind, N)), tmp_path)
    a, b = rand(N, seed=3), rand(N, seed=4)
    want = _reference(kind, a.astype(np.float64), b.astype(np.float64))
    for mod in (jit, lib):
        out = np.full(N, np.nan, np.float32)
        mod["k"](a, b, out)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


def test_masked_tail_does_not_write_past_the_end(tmp_path):
    """The output lives inside a larger buffer: the masked tail must leave its neighbours."""
    n = 13
    jit, _ = compile_both(lower(vector_kernel("add", n)), tmp_path)
    a, b = rand(n, seed=5), rand(n, seed=6)
    backing = np.full(n + 16, 7.0, np.float32)
    out = backing[:n]
    jit["k"](a, b, out)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    assert (backing[n:] == 7.0).all()
