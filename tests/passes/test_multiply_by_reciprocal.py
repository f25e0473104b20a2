"""multiply-by-reciprocal against the division it replaces, compiled and run: for any f32
divisor, the kernel either keeps the division (bit for bit the quotient) or multiplies by the
reciprocal, within 1.5 ulp of the quotient (exact for powers of two), with the quotient's
infinities, zeros and NaNs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.parser import Parser

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.passes.multiply_by_reciprocal import MultiplyByReciprocalPass
from nnvm.registry import make_context
from nnvm.targets.llvm import compile_jit

LANES = 16
X = np.concatenate(
    [
        np.random.default_rng(0).standard_normal(48).astype(np.float32) * 1e3,
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1e-38], np.float32),
        np.array([1.0, -2.5, 7.0, 1e-30, 1e30, 123456.0, -0.75, 5e-39], np.float32),
    ]
)


def _kernel(divisor: np.float32) -> tuple[str, bool]:
    """out[i] = x[i] / c over vectors of LANES, c a broadcast constant; whether the pass
    replaced the division."""
    text = f"""
func.func @k(%x: memref<{len(X)}xf32>, %out: memref<{len(X)}xf32>) {{
  %c = arith.constant 0x{int(np.float32(divisor).view(np.uint32)):08X} : f32
  %cs = vector.broadcast %c : f32 to vector<{LANES}xf32>
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to {len(X)} step {LANES} {{
    %v = vector.transfer_read %x[%i], %zero : memref<{len(X)}xf32>, vector<{LANES}xf32>
    %q = arith.divf %v, %cs : vector<{LANES}xf32>
    vector.transfer_write %q, %out[%i] : vector<{LANES}xf32>, memref<{len(X)}xf32>
  }}
  func.return
}}
"""
    module = Parser(make_context(), text).parse_module()
    MultiplyByReciprocalPass().apply(Context(), module)
    rewritten = "arith.divf" not in str(module)
    ConvertToLLVM().apply(Context(), module)
    return module, rewritten


@settings(max_examples=40, deadline=None)
@given(
    divisor=st.one_of(
        st.floats(width=32, allow_nan=True, allow_infinity=True),
        st.sampled_from([2.0, -0.5, 1.4142135, 3.0, 1e-39, 3e38, 0.0, 1.1754944e-38]),
    )
)
def test_multiply_by_reciprocal_keeps_the_quotient(divisor) -> None:
    c = np.float32(divisor)
    module, rewritten = _kernel(c)
    out = np.zeros_like(X)
    compile_jit(module)["k"](X, out)
    with np.errstate(all="ignore"):
        want = X / c
    if not rewritten:
        np.testing.assert_array_equal(out, want)
        return
    assert np.isfinite(c) and c != 0 and np.isfinite(np.float32(1) / c)
    same_class = np.isnan(out) == np.isnan(want)
    assert same_class.all(), (c, X[~same_class])
    special = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(out[special], want[special])
    exact = np.float64(want)
    finite = np.isfinite(want) & ~special & (np.abs(want) >= np.finfo(np.float32).tiny)
    err = np.abs(out[finite].astype(np.float64) - exact[finite]) / np.spacing(np.abs(want[finite]))
    assert err.max(initial=0.0) <= 1.5, (c, err.max())
    if np.frexp(c)[0] in (0.5, -0.5):  # a power of two: exact
        np.testing.assert_array_equal(out[finite], want[finite])
