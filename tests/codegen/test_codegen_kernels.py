"""Reductions, naive and tiled matmul, conv2d: scalar and vectorized, 1 and 2 threads, with
sizes that leave tails, through the JIT and through a shared library, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_builder import KernelBuilder, compile_both, lower, memref_of, rand
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir.affine import AffineExpr, AffineMap

import nnvm.threads

d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request, monkeypatch):
    monkeypatch.setattr(nnvm.threads, "_num_threads", None)
    nnvm.threads.set_num_threads(request.param)
    return request.param


def _vreduce_add(kb: KernelBuilder, v):
    return kb.op(
        vector.ReductionOp.build(
            operands=[v, []],
            result_types=[f32],
            properties={"kind": vector.CombiningKindAttr(vector.CombiningKindFlag.ADD)},
        )
    )


# ---- reduction: out[i] = sum_k a[i, k] --------------------------------------------------------
def row_sum(m: int, k: int, vectorized: bool):
    kb = KernelBuilder("k", [memref_of([m, k]), memref_of([m])])
    a, out = kb.args
    with kb.affine_parallel([(0, m)]) as (i,):
        if vectorized:
            acc0 = kb.broadcast(kb.f32(0.0), 8)
            with kb.affine_for_iter(0, k, acc0, step=8) as (j, acc, nxt):
                nxt.append(kb.addf(acc, kb.transfer_read(a, [i, j], 8)))
            kb.store(_vreduce_add(kb, nxt[0]), out, [i])
        else:
            with kb.affine_for_iter(0, k, kb.f32(0.0)) as (j, acc, nxt):
                nxt.append(kb.addf(acc, kb.load(a, [i, j])))
            kb.store(nxt[0], out, [i])
    return kb.finish()


@pytest.mark.parametrize("vectorized", [False, True], ids=["scalar", "vector"])
def test_reduction(vectorized, threads, tmp_path):
    m, k = 7, 45
    jit, lib = compile_both(lower(row_sum(m, k, vectorized)), tmp_path)
    a = rand(m, k, seed=10)
    for mod in (jit, lib):
        out = np.zeros(m, np.float32)
        mod["k"](a, out)
        np.testing.assert_allclose(out, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


# ---- matmul -----------------------------------------------------------------------------------
def naive_matmul(m: int, n: int, k: int):
    kb = KernelBuilder("k", [memref_of([m, k]), memref_of([k, n]), memref_of([m, n])])
    a, b, c = kb.args
    with kb.affine_parallel([(0, m)]) as (i,):
        with kb.affine_for(0, n) as j:
            with kb.affine_for_iter(0, k, kb.f32(0.0)) as (p, acc, nxt):
                nxt.append(kb.addf(acc, kb.mulf(kb.load(a, [i, p]), kb.load(b, [p, j]))))
            kb.store(nxt[0], c, [i, j])
    return kb.finish()


def tiled_matmul(m: int, n: int, k: int, ti: int, tj: int, vectorized: bool):
    """Tiles of ti x tj over C (min bounds at the edges), k innermost-but-one; with
    `vectorized`, each C row segment of the tile is a masked <8 x f32> FMA chain."""
    kb = KernelBuilder("k", [memref_of([m, k]), memref_of([k, n]), memref_of([m, n])])
    a, b, c = kb.args
    zero = kb.f32(0.0)
    with kb.affine_parallel([(0, m)]) as (i,):
        with kb.affine_for(0, n) as j:
            kb.store(zero, c, [i, j])
    tiles_i = -(-m // ti)
    with kb.affine_parallel([(0, tiles_i)]) as (it,):
        i_lb = AffineMap(1, 0, (d0 * ti,))
        i_ub = AffineMap(1, 0, (d0 * ti + ti, AffineExpr.constant(m)))
        with kb.affine_for(0, n, step=tj) as jt:
            j_ub = AffineMap(1, 0, (d0 + tj, AffineExpr.constant(n)))
            with kb.affine_for(0, k) as p:
                with kb.affine_for((i_lb, [it]), (i_ub, [it])) as i:
                    a_ip = kb.load(a, [i, p])
                    if vectorized:
                        av = kb.broadcast(a_ip, 8)
                        with kb.affine_for((AffineMap(1, 0, (d0,)), [jt]), (j_ub, [jt]), 8) as j:
                            bv = kb.transfer_read(b, [p, j], 8)
                            cv = kb.transfer_read(c, [i, j], 8)
                            kb.transfer_write(kb.vfma(av, bv, cv), c, [i, j])
                    else:
                        with kb.affine_for((AffineMap(1, 0, (d0,)), [jt]), (j_ub, [jt])) as j:
                            prod = kb.mulf(a_ip, kb.load(b, [p, j]))
                            kb.store(kb.addf(kb.load(c, [i, j]), prod), c, [i, j])
    return kb.finish()


def _check_matmul(module, m, n, k, tmp_path):
    jit, lib = compile_both(lower(module), tmp_path)
    a, b = rand(m, k, seed=20), rand(k, n, seed=21)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for mod in (jit, lib):
        c = np.full((m, n), np.nan, np.float32)
        mod["k"](a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_naive_matmul(threads, tmp_path):
    _check_matmul(naive_matmul(13, 11, 9), 13, 11, 9, tmp_path)


@pytest.mark.parametrize("vectorized", [False, True], ids=["scalar", "vector"])
def test_tiled_matmul(vectorized, threads, tmp_path):
    m, n, k = 29, 37, 19
    _check_matmul(tiled_matmul(m, n, k, 6, 16, vectorized), m, n, k, tmp_path)


# ---- conv2d: NCHW, 3x3, stride 1, no padding --------------------------------------------------
def conv2d(c_in: int, f: int, h: int, w: int, vectorized: bool):
    oh, ow = h - 2, w - 2
    kb = KernelBuilder(
        "k", [memref_of([c_in, h, w]), memref_of([f, c_in, 3, 3]), memref_of([f, oh, ow])]
    )
    x, wt, out = kb.args
    shifted = AffineMap(4, 0, (d0, d1 + AffineExpr.dimension(2), AffineExpr.dimension(3)))
    with kb.affine_parallel([(0, f)]) as (fo,):
        with kb.affine_for(0, oh) as y:
            if vectorized:
                with kb.affine_for(0, ow, step=8) as xo:
                    acc = kb.broadcast(kb.f32(0.0), 8)
                    for c in range(c_in):
                        cc = kb.index(c)
                        for ky in range(3):
                            for kx in range(3):
                                wv = kb.load(wt, [fo, cc, kb.index(ky), kb.index(kx)])
                                col = kb.op(arith.AddiOp(xo, kb.index(kx)))
                                row = kb.op(arith.AddiOp(y, kb.index(ky)))
                                iv = kb.transfer_read(x, [cc, row, col], 8)
                                acc = kb.vfma(kb.broadcast(wv, 8), iv, acc)
                    kb.transfer_write(acc, out, [fo, y, xo])
            else:
                with kb.affine_for(0, ow) as xo:
                    acc = kb.f32(0.0)
                    for c in range(c_in):
                        cc = kb.index(c)
                        for ky in range(3):
                            for kx in range(3):
                                wv = kb.load(wt, [fo, cc, kb.index(ky), kb.index(kx)])
                                iv = kb.load_map(x, shifted, [cc, y, kb.index(ky), xo])
                                if kx:
                                    col = kb.op(arith.AddiOp(xo, kb.index(kx)))
                                    row = kb.op(arith.AddiOp(y, kb.index(ky)))
                                    iv = kb.load(x, [cc, row, col])
                                acc = kb.addf(acc, kb.mulf(wv, iv))
                    kb.store(acc, out, [fo, y, xo])
    return kb.finish()


def _conv_reference(x, w):
    c_in, h, wd = x.shape
    f = w.shape[0]
    out = np.zeros((f, h - 2, wd - 2))
    for ky in range(3):
        for kx in range(3):
            patch = x[:, ky : ky + h - 2, kx : kx + wd - 2].astype(np.float64)
            out += np.einsum("fc,chw->fhw", w[:, :, ky, kx].astype(np.float64), patch)
    return out


@pytest.mark.parametrize("vectorized", [False, True], ids=["scalar", "vector"])
def test_conv2d(vectorized, threads, tmp_path):
    c_in, f, h, w = 3, 5, 9, 13  # output width 11: one full vector and a tail of 3
    jit, lib = compile_both(lower(conv2d(c_in, f, h, w, vectorized)), tmp_path)
    x, wt = rand(c_in, h, w, seed=30), rand(f, c_in, 3, 3, seed=31)
    for mod in (jit, lib):
        out = np.full((f, h - 2, w - 2), np.nan, np.float32)
        mod["k"](x, wt, out)
        np.testing.assert_allclose(out, _conv_reference(x, wt), rtol=1e-5, atol=1e-5)


def test_vector_types_survive_to_machine_code():
    """The vectorized matmul really uses 256-bit FMAs (host CPU name and features are set)."""
    from nnvm.targets.llvm import compile_jit, host_features

    if not host_features().get("fma"):
        pytest.skip("host has no FMA")
    jit = compile_jit(lower(tiled_matmul(16, 16, 16, 4, 16, True)))
    asm = jit.assembly()
    assert "vfmadd" in asm and ("ymm" in asm or "zmm" in asm)


def test_vector_type_helper():
    assert VectorType(f32, [8]).get_shape() == (8,)
