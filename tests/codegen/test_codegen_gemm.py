"""The packed, register-blocked GEMM of bench/gemm_codegen.py computes the right product,
edges included (no timing here: the bench script measures speed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.targets.llvm import compile_jit, host_features

_SPEC = importlib.util.spec_from_file_location(
    "gemm_codegen", Path(__file__).parents[2] / "bench" / "gemm_codegen.py"
)
assert _SPEC is not None and _SPEC.loader is not None
gemm = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gemm)


def _check(m, n, k, **blocking):
    module = gemm.build_gemm(m, n, k, **blocking)
    ConvertToLLVM().apply(Context(), module)
    jit = compile_jit(module)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    jit["sgemm"](a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    return jit


def test_gemm_with_edges_in_every_dimension():
    """M = 50 is not a multiple of 6 or of mc; K = 70 leaves a short last slab; N = 48 leaves
    a short last column block."""
    _check(50, 48, 70, mc=12, kc=32, nc=32)


def test_gemm_micro_kernel_is_twelve_fmas_per_k_step():
    if not host_features().get("fma"):
        pytest.skip("host has no FMA")
    jit = _check(12, 32, 16, mc=12, kc=16, nc=32)
    asm = jit.assembly()
    assert asm.count("vfmadd231ps") >= 12 and "ymm" in asm


def test_gemm_avx512_variant():
    if not host_features().get("avx512f"):
        pytest.skip("host has no AVX-512")
    _check(30, 64, 40, mc=28, kc=16, nc=64, mr=14, vw=16)


@pytest.mark.slow
def test_gemm_1024():
    _check(1024, 1024, 1024)
