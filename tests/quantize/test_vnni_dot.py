"""int8 x int8 -> int32 dot products on the CPU through the ordinary loops -> llvm pipeline:
`llvm.x86.avx512.vpdpbusd.512` reaches LLVM as a plain `llvm.call_intrinsic` among vector ops
(convert-to-llvm passes it through: no lowering change), and a widening fallback for CPUs
without VNNI. vpdpbusd multiplies *unsigned* bytes by signed ones, so signed activations run
as a + 128 and each output starts from -128 * sum_k w[n, k] (oneDNN's compensation); the
results must equal numpy's int32 products exactly, tails in M, N and K included."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType, i8, i32

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.targets.llvm import compile_jit, host_features

sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
from kernel_builder import KernelBuilder, memref_of  # noqa: E402

LANES = 16  # int32 lanes of a 512-bit register: vpdpbusd's output columns per block
V16 = VectorType(i32, [LANES])


def pack_weights(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """w[N, K] int8 -> panels [ceil(N/16), ceil(K/4), 64] in vpdpbusd's order (per output lane
    4 consecutive k), zero-padded, and the compensation -128 * sum_k w per padded column."""
    n, k = w.shape
    n16, k4 = -(-n // LANES), -(-k // 4)
    padded = np.zeros((n16 * LANES, k4 * 4), np.int8)
    padded[:n, :k] = w
    panels = padded.reshape(n16, LANES, k4, 4).transpose(0, 2, 1, 3).reshape(n16, k4, 64)
    comp = (-128 * padded.sum(axis=1, dtype=np.int32)).reshape(n16, LANES)
    return np.ascontiguousarray(panels), np.ascontiguousarray(comp)


def offset_activations(x: np.ndarray, k4: int) -> np.ndarray:
    """x[M, K] int8 -> (x + 128) as bytes, K zero-padded to 4 * k4 (the padded weights are 0)."""
    m, k = x.shape
    out = np.zeros((m, k4 * 4), np.uint8)
    out[:, :k] = (x.astype(np.int16) + 128).astype(np.uint8)
    return out.view(np.int8)


def _splat(kb: KernelBuilder, value: int):
    return kb.op(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(V16, [value] * LANES)))


def _dense_kernel(m: int, n16: int, k4: int, vnni: bool):
    """out[M, n16 * 16] = xu[M, 4 k4] . panels + comp, one 16-lane accumulator per (row, block).
    vnni: one vpdpbusd per 4 k; else the same sums from shifts and int32 multiplies."""
    kb = KernelBuilder(
        "dense_u8s8",
        [
            memref_of([m, k4 * 4], i8),
            memref_of([n16, k4, 64], i8),
            memref_of([n16, LANES], i32),
            memref_of([m, n16 * LANES], i32),
        ],
    )
    x, wp, comp, out = kb.args
    with kb.affine_for(0, m) as row, kb.affine_for(0, n16) as blk:
        zero = kb.index(0)
        init = kb.vload(comp, [blk, zero], LANES)
        with kb.affine_for_iter(0, k4, init) as (k, acc, nxt):
            kk = kb.op(arith.MuliOp(k, kb.index(4)))
            quad = kb.op(vector.LoadOp(x, [row, kk], VectorType(i8, [4])))
            word = kb.op(
                vector.ExtractOp(kb.op(vector.BitcastOp(quad, VectorType(i32, [1]))), [0], i32)
            )
            a = kb.op(vector.BroadcastOp(word, V16))
            w64 = kb.op(vector.LoadOp(wp, [blk, k, zero], VectorType(i8, [64])))
            w = kb.op(vector.BitcastOp(w64, V16))
            if vnni:
                nxt.append(
                    kb.op(llvm.CallIntrinsicOp("llvm.x86.avx512.vpdpbusd.512", [acc, a, w], [V16]))
                )
            else:
                # vpdpbusd spelled in plain int32 lanes: byte q of each word, zero-extended
                # (activations) or sign-extended (weights) by shifting it to the top and back.
                for q in range(4):
                    up = _splat(kb, 24 - 8 * q)
                    top = _splat(kb, 24)
                    aq = kb.op(arith.ShRUIOp(kb.op(arith.ShLIOp(a, up)), top))
                    wq = kb.op(arith.ShRSIOp(kb.op(arith.ShLIOp(w, up)), top))
                    acc = kb.op(arith.AddiOp(acc, kb.op(arith.MuliOp(aq, wq))))
                nxt.append(acc)
        col = kb.op(arith.MuliOp(blk, kb.index(LANES)))
        kb.vstore(nxt[0], out, [row, col])
    return kb.finish()


def _run(m: int, n: int, k: int, vnni: bool, seed: int, target: str | None = None) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    x[0, :] = -128  # the extremes: -128 * -128 and 127 * 127 per product
    w[0, :] = -128
    if m > 1:
        x[1, :] = 127
    panels, comp = pack_weights(w)
    n16, k4 = panels.shape[:2]
    module = _dense_kernel(m, n16, k4, vnni)
    ConvertToLLVM().apply(Context(), module)
    jit = compile_jit(module, target)
    got = np.full((m, n16 * LANES), -1, np.int32)
    jit["dense_u8s8"](offset_activations(x, k4), panels, comp, got)
    np.testing.assert_array_equal(got[:, :n], x.astype(np.int32) @ w.astype(np.int32).T)
    assert ("vpdpbusd" in jit.assembly()) == vnni


SHAPES = [(1, 16, 4), (3, 17, 5), (7, 33, 70), (13, 5, 259), (2, 64, 1027)]


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_vpdpbusd_dense_is_exact(m, n, k):
    if not host_features().get("avx512vnni"):
        pytest.skip("host has no AVX-512 VNNI")
    _run(m, n, k, vnni=True, seed=m * 1000 + k)


@pytest.mark.parametrize("m,n,k", SHAPES[:3])
def test_shift_fallback_is_exact_on_avx2(m, n, k):
    """A CPU without VNNI (x86-64-v3: AVX2) gets the same sums from int32 shifts and multiplies."""
    _run(m, n, k, vnni=False, seed=m * 1000 + k, target="llvm -mcpu=x86-64-v3")
