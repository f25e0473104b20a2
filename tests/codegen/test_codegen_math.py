"""Accuracy of the polynomial exp/log/tanh/erf (vector and scalar), special values, and the
f16/f64/libm paths of convert-math-to-llvm, against numpy in float64. exp (and tanh and erf
through it) is checked with both of its scalings: two multiplies by normal powers of two, and
llvm.ldexp (what an AVX-512 target asks for: vscalefps; elsewhere LLVM calls libm's ldexpf,
as correct and slower)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_builder import KernelBuilder, lower, memref_of
from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import f16, f64

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.targets.llvm import compile_jit

_erf = np.frompyfunc(math.erf, 1, 1)
REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": lambda x: _erf(x).astype(np.float64),
}
RANGE = {"exp": (-104.0, 89.0), "log": (0.0, 3.4e38), "tanh": (-20.0, 20.0), "erf": (-6.0, 6.0)}
# Documented in lowering/math_approx.py (measured max 0.99, 0.83, 1.29, 1.03 ulp).
MAX_ULP = {"exp": 1.0, "log": 1.0, "tanh": 1.5, "erf": 1.5}


def _floats(lo: float, hi: float, stride: int) -> np.ndarray:
    """Every `stride`-th f32 bit pattern in [lo, hi] (both signs when lo < 0)."""

    def positive(a: float, b: float) -> np.ndarray:
        lo_bits = np.float32(a).view(np.int32)
        hi_bits = np.float32(b).view(np.int32)
        return np.arange(lo_bits, hi_bits, stride, dtype=np.int32).view(np.float32)

    if lo >= 0:
        return positive(max(lo, 1e-45), hi)
    return np.concatenate([positive(1e-45, hi), -positive(1e-45, -lo)])


def _vector_kernel(name: str, n: int, elem=None, lanes: int = 8):
    kb = KernelBuilder("k", [memref_of([n], elem)] * 2 if elem else [memref_of([n])] * 2)
    a, out = kb.args
    with kb.affine_for(0, n, step=lanes) as i:
        kb.transfer_write(kb.unary(name, kb.transfer_read(a, [i], lanes)), out, [i])
    return kb.finish()


def _scalar_kernel(name: str, n: int, elem=None, approximate: bool = True, ldexp=False):
    kb = KernelBuilder("k", [memref_of([n], elem)] * 2 if elem else [memref_of([n])] * 2)
    a, out = kb.args
    with kb.affine_for(0, n) as i:
        kb.store(kb.unary(name, kb.load(a, [i])), out, [i])
    module = kb.finish()
    ConvertToLLVM(approximate_math=approximate, ldexp=ldexp).apply(Context(), module)
    return module


def _run(jit, x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    jit["k"](x, out)
    return out


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    want32 = want.astype(np.float32)
    spacing = np.maximum(np.spacing(np.abs(want32)).astype(np.float64), 2.0**-149)
    err = np.abs(got.astype(np.float64) - want) / spacing
    inf = np.isinf(want32)
    err[inf] = np.where(got[inf] == want32[inf], 0.0, np.inf)
    return err


def _measure(name: str, stride: int, ldexp: bool = False, lanes: int = 8) -> float:
    x = _floats(*RANGE[name], stride)
    n = -(-len(x) // lanes) * lanes
    xs = np.zeros(n, np.float32)
    xs[: len(x)] = x
    got = _run(compile_jit(lower(_vector_kernel(name, n, lanes=lanes), ldexp)), xs)[: len(x)]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return float(_ulp_error(got, REFERENCE[name](x.astype(np.float64))).max())


SCALINGS = [
    ("exp", False), ("log", False), ("tanh", False), ("erf", False),
    ("exp", True), ("tanh", True), ("erf", True),
]  # fmt: skip


@pytest.mark.parametrize("name, ldexp", SCALINGS)
def test_polynomial_accuracy(name, ldexp):
    """About 100k to 300k samples spread over the whole f32 range of each function."""
    assert _measure(name, 7919, ldexp) <= MAX_ULP[name]


@pytest.mark.parametrize("lanes", [16, 32])
@pytest.mark.parametrize("name", ["exp", "tanh", "erf"])
def test_polynomial_accuracy_16_lanes_vscalef(name, lanes):
    """16 lanes with vscalefps (AVX-512): exp scales by a float 2^n (math_approx
    `_exp_scalef`), its clamps keep NaNs; tanh and erf use it. 32 lanes (a matmul epilogue
    over two vectors of columns) run as two 16-lane halves."""
    if not _avx512():
        pytest.skip("this CPU has no AVX-512 (vscalefps)")
    assert _measure(name, 7919, True, lanes=lanes) <= MAX_ULP[name]


@pytest.mark.parametrize("name", ["exp", "erf"])
def test_wide_vectors_take_the_16_lane_forms(name):
    """A 32-lane exp or erf is two 16-lane ones: a vscalefps each and x86's NaN-keeping
    min/max, no LLVM minnum/maxnum (whose NaN semantics cost fix-ups)."""
    text = str(lower(_vector_kernel(name, 64, lanes=32), True))
    assert text.count('"llvm.x86.avx512.mask.scalef.ps.512"') == 2
    assert '"llvm.x86.avx512.min.ps.512"' in text
    assert "minnum" not in text and "maxnum" not in text


def _avx512() -> bool:
    import llvmlite.binding as llvm

    return "+avx512f" in llvm.get_host_cpu_features().flatten()


@pytest.mark.slow
@pytest.mark.parametrize("name, ldexp", SCALINGS)
def test_polynomial_accuracy_dense(name, ldexp):
    """The sweep that produced the documented bounds (about 18M samples each)."""
    assert _measure(name, 397 if name == "log" else 97, ldexp) <= MAX_ULP[name]


SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17e-38, 88.72, 88.73, -87.4,
     -103.9, -104.5, 1.0, -1.0, 3.9, 4.1, -1e30, 1e30, 0.625, -0.625, 2.0**-20],
    dtype=np.float32,
)  # fmt: skip


@pytest.mark.parametrize("name, ldexp", SCALINGS)
@pytest.mark.parametrize("form", ["vector", "scalar", "vector16", "vector32"])
def test_special_values(name, ldexp, form):
    n = 32
    x = np.zeros(n, np.float32)
    x[: len(SPECIALS)] = SPECIALS
    if form in ("vector16", "vector32") and not (ldexp and _avx512()):
        pytest.skip("16 lanes take their own path only with vscalefps (AVX-512)")
    if form == "scalar":
        module = _scalar_kernel(name, n, ldexp=ldexp)
    else:
        lanes = {"vector": 8, "vector16": 16, "vector32": 32}[form]
        module = lower(_vector_kernel(name, n, lanes=lanes), ldexp)
    got = _run(compile_jit(module), x)
    with np.errstate(all="ignore"):
        want = REFERENCE[name](x.astype(np.float64)).astype(np.float32)
    for xi, g, w in zip(x, got, want, strict=True):
        if np.isnan(w):
            assert np.isnan(g), (name, xi, g)
        elif np.isinf(w) or w == 0:
            assert g == w, (name, xi, g, w)
        else:
            assert abs(float(g) - float(w)) <= 2 * np.spacing(abs(w)) + 2.0**-149, (name, xi, g, w)


def _exp_of_negation_kernel(n: int, lanes: int, negate: bool):
    """exp(-x) over n floats: the exp of an arith.negf (folded by convert-math-to-llvm), or,
    with `negate` False, a plain exp (fed -x)."""
    kb = KernelBuilder("k", [memref_of([n])] * 2)
    a, out = kb.args
    with kb.affine_for(0, n, step=lanes) as i:
        x = kb.transfer_read(a, [i], lanes)
        if negate:
            x = kb.op(arith.NegfOp(x))
        kb.transfer_write(kb.unary("exp", x), out, [i])
    return kb.finish()


@pytest.mark.parametrize("lanes, ldexp", [(8, False), (8, True), (16, True)])
def test_exp_of_a_negation_folds_the_sign_bit_for_bit(lanes, ldexp):
    """exp(-x) with the negation folded into the constants (16 lanes with vscalefps: the
    clamps, the rounding and the polynomial's odd terms flipped) is exp of -x bit for bit,
    over the whole range and at the special values; no negation is left in the code."""
    if lanes == 16 and not _avx512():
        pytest.skip("16 lanes take their own path only with vscalefps (AVX-512)")
    x = np.concatenate([-_floats(*RANGE["exp"], 7919), SPECIALS])
    n = -(-len(x) // lanes) * lanes
    xs = np.zeros(n, np.float32)
    xs[: len(x)] = x
    folded = lower(_exp_of_negation_kernel(n, lanes, negate=True), ldexp)
    if lanes == 16:  # the negf's llvm.fneg is left dead (LLVM drops it)
        assert not any(op.results[0].uses for op in folded.walk() if isinstance(op, llvm.FNegOp))
    got = _run(compile_jit(folded), xs)
    plain = _run(compile_jit(lower(_exp_of_negation_kernel(n, lanes, False), ldexp)), -xs)
    nan = np.isnan(xs)  # NaN stays NaN (its sign bit is not a result)
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(got[~nan].view(np.int32), plain[~nan].view(np.int32))
    with np.errstate(all="ignore"):
        want = np.exp(-x.astype(np.float64))
        finite = ~np.isnan(x)
        assert float(_ulp_error(got[: len(x)][finite], want[finite]).max()) <= MAX_ULP["exp"]


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "erf"])
def test_f64_uses_libm(name):
    x = np.linspace(0.1, 3.0, 16)
    got = _run(compile_jit(_scalar_kernel(name, 16, f64)), x)
    np.testing.assert_allclose(got, REFERENCE[name](x), rtol=1e-14)


@pytest.mark.parametrize("name", ["exp", "tanh"])
def test_f16_goes_through_f32(name):
    x = np.linspace(-2, 2, 16).astype(np.float16)
    got = _run(compile_jit(_scalar_kernel(name, 16, f16)), x)
    want = REFERENCE[name](x.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3)


def test_exact_libm_fallback():
    """approximate-math=false: f32 erf goes to libm's erff."""
    x = np.linspace(-3, 3, 16).astype(np.float32)
    module = _scalar_kernel("erf", 16, approximate=False)
    got = _run(compile_jit(module), x)
    np.testing.assert_allclose(got, REFERENCE["erf"](x.astype(np.float64)), rtol=2e-7, atol=1e-7)


def test_other_math_ops():
    """sqrt, abs, and a sigmoid composition (what the te lowering writes)."""
    n = 16
    kb = KernelBuilder("k", [memref_of([n])] * 2)
    a, out = kb.args
    with kb.affine_for(0, n) as i:
        x = kb.load(a, [i])
        one = kb.f32(1.0)
        sig = kb.op(arith.DivfOp(one, kb.addf(one, kb.unary("exp", kb.op(arith.NegfOp(x))))))
        kb.store(kb.addf(sig, kb.unary("sqrt", kb.unary("abs", x))), out, [i])
    x = np.linspace(-5, 5, n).astype(np.float32)
    got = _run(compile_jit(lower(kb.finish())), x)
    want = 1 / (1 + np.exp(-x.astype(np.float64))) + np.sqrt(np.abs(x.astype(np.float64)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize(
    "target, scalef",
    [("llvm -mcpu=x86-64-v4", True), ("llvm -mcpu=x86-64-v3", False)],
)
def test_cpu_target_scales_exp_by_vscalef_only_where_it_has_it(target, scalef):
    """The CPU target asks for llvm.ldexp on AVX-512 (one vscalefps); on AVX2 it keeps the two
    multiplies: there llvm.ldexp would be a libm call per lane."""
    from nnvm.support.target import parse_target
    from nnvm.targets.llvm.compile import emit_assembly

    cpu = parse_target(target)
    (convert,) = [p for p in cpu.kernel_passes() if p.name == "convert-to-llvm"]
    assert convert.ldexp is scalef
    module = _vector_kernel("exp", 64)
    convert.apply(Context(), module)
    asm = emit_assembly(module, cpu)
    assert ("vscalefps" in asm) is scalef
    assert "ldexp" not in asm
