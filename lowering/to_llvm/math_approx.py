"""Vectorizable f32 approximations of exp, log, tanh and erf, emitted as llvm-dialect IR.

LLVM has no vector math library configured here, so `llvm.exp.v8f32` becomes eight scalar
`expf` calls (docs/reference/llvmlite-ceilings.md: 6.7x slower than a polynomial). These builders emit only
adds, multiplies, fmuladds, integer bit operations and selects, all of which stay in vector
registers. They work lane-wise on `f32` and `vector<N x f32>` alike.

Coefficients were fitted by `lowering/math_fit.py` (weighted least squares on Chebyshev nodes,
iterated toward minimax relative error against Python's double-precision math functions) and
rounded to f32. Error bounds were measured on this machine over every 97th f32 bit pattern of
the range shown (every 397th for log; both signs, down to the smallest subnormal), against
numpy/`math` in float64, where 1 ulp is the spacing of the f32 nearest the true result
(`pytest -m slow tests/codegen/test_codegen_math.py`; the fast tier samples every 7919th):

=====  =====================================================  ===========  ================
op     method                                                 range        max error
=====  =====================================================  ===========  ================
exp    x = n ln2 + r (Cody-Waite, |r| <= ln2/2), degree-6     [-104, 89]   0.86 ulp
       polynomial (Horner's rule, through 1 + r: six fmas),
       times 2^n applied in two steps (so
       subnormal results and the 2^128 edge come out right)
log    frexp by bit masks (subnormals rescaled by 2^23),      (0, 3.4e38]  0.83 ulp
       m in [sqrt(1/2), sqrt(2)), log1p(m-1) by a degree-10
       polynomial, plus e ln2 in two parts
tanh   |x| < 0.625: x + x^3 P(x^2), degree 4 in x^2;          [-20, 20]    1.29 ulp
       otherwise sign(x) (1 - 2 / (exp(2|x|) + 1))
erf    |x| < 1: x + x P(x^2), degree 6 in x^2; 1 <= |x| <= 4: [-6, 6]      1.03 ulp
       1 - exp(-x^2) Q(1/x), degree 6; |x| > 4: +-1                        (abs 5.7e-8)
=====  =====================================================  ===========  ================

Where the target has an instruction for it (AVX-512's vscalefps: `ldexp=True`, which the CPU
target sets), exp's 2^n is one `llvm.ldexp` instead of two multiplies and the bit arithmetic
that builds them: 9 vector instructions fewer per exp, and so per sigmoid, tanh, erf and softmax
element (EfficientNet-B0 0.94x, GPT-2 0.93x end to end on one thread). The result is p 2^n
rounded once, as the two-step form rounds it; the bounds above hold for both (the slow sweep
runs each).

Special values follow C99: exp(+-inf) = inf/0, exp(NaN) = NaN; log(0) = -inf, log(x<0) = NaN,
log(inf) = inf; tanh(+-inf) = +-1; erf(+-inf) = +-1; NaN in, NaN out.
"""

from __future__ import annotations

import struct

from xdsl.dialects.builtin import IntegerType, VectorType
from xdsl.ir import SSAValue

from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder, int_type_like, intrinsic_suffix

# exp(r) = 1 + r + r^2 * P(r) on [-ln2/2, ln2/2]
EXP_P = (0.4999999403953552, 0.1666652113199234, 0.04166838899254799,
         0.008368710055947304, 0.001381461275741458)  # fmt: skip
# log1p(f) = f - f^2/2 + f^3 * Q(f) on [sqrt(1/2)-1, sqrt(2)-1]
LOG_Q = (0.3333333134651184, -0.2500081956386566, 0.20001226663589478, -0.16623356938362122,
         0.14201757311820984, -0.13160182535648346, 0.1276157647371292,
         -0.07634496688842773)  # fmt: skip
# tanh(x) = x + x^3 * P(x^2) on [0, 0.625]
TANH_P = (-0.3333328068256378, 0.13331441581249237, -0.05373971536755562,
          0.0206390880048275, -0.005704987328499556)  # fmt: skip
# erf(x) = x + x * P(x^2) on [0, 1] (the leading 2/sqrt(pi) split as 1 + 0.128..., so its f32
# rounding costs 0.1 ulp instead of 0.5)
ERF_SMALL = (0.12837916612625122, -0.3761262595653534, 0.1128358542919159,
             -0.026853812858462334, 0.005188329145312309, -0.0008010203600861132,
             7.853892020648345e-05)  # fmt: skip
# erf(x) = 1 - exp(-x^2) * Q(1/x) on [1, 4]
ERF_LARGE = (-0.0016986785922199488, 0.5781939625740051, -0.03505804389715195,
             -0.3079202473163605, 0.30656716227531433, -0.1376318484544754,
             0.025131255388259888)  # fmt: skip

LOG2E = 1.4426950408889634
LN2_HI = 0.693359375  # 9 significant bits: n * LN2_HI is exact for |n| < 2^15
LN2_LO = -2.1219444005469057e-4  # ln 2 - LN2_HI
EXP_HI = 88.8  # above log(FLT_MAX): the result overflows to inf
EXP_LO = -104.0  # below log(2^-150): the result rounds to 0
ROUNDING_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds to an integer in the low bits


AVX512_LANES = 16
"""f32 lanes of an AVX-512 register: the width of the x86-specific forms."""


def avx512_minmax(b: LLVMBuilder, op: str, a: SSAValue, x: SSAValue) -> SSAValue:
    """x86's vminps/vmaxps(a, x) on 16 lanes (`op` "min" or "max"): `a` where it compares
    below (above) x, else x, so a NaN in x passes through (LLVM's minnum/maxnum drop it)."""
    current = b.const(4, IntegerType(32))  # _MM_FROUND_CUR_DIRECTION
    return b.call_intrinsic(f"llvm.x86.avx512.{op}.ps.512", [a, x, current], a.type)


def f32_bits(value: float) -> int:
    """The IEEE-754 single bit pattern of `value` as a signed 32-bit integer."""
    return struct.unpack("<i", struct.pack("<f", value))[0]


class F32Math:
    """Emit the approximations for values of one type (f32 or vector<N x f32>)."""

    def __init__(self, b: LLVMBuilder, t, ldexp: bool = False):
        self.b = b
        self.t = t
        self.it = int_type_like(t)
        self.ldexp = ldexp
        """exp's 2^n by `llvm.ldexp` (one vscalefps with AVX-512; a target without an
        instruction for it gets libm calls, so only targets that have one ask for it)."""

    # -- small helpers over the f32 bit pattern ---------------------------------------------
    def c(self, value: float) -> SSAValue:
        return self.b.const(value, self.t)

    def ci(self, value: int) -> SSAValue:
        return self.b.const(value, self.it)

    def bits(self, x: SSAValue) -> SSAValue:
        return self.b.bitcast(x, self.it)

    def from_bits(self, i: SSAValue) -> SSAValue:
        return self.b.bitcast(i, self.t)

    def abs_bits(self, x: SSAValue) -> SSAValue:
        return self.b.and_(self.bits(x), self.ci(0x7FFFFFFF))

    def is_nan(self, x: SSAValue) -> SSAValue:
        return self.b.icmp("sgt", self.abs_bits(x), self.ci(0x7F800000))

    def abs_less(self, a: SSAValue, limit: float) -> SSAValue:
        """|x| < limit for a = |x| (NaN compares false), as an integer compare on the bits."""
        return self.b.icmp("slt", self.bits(a), self.ci(f32_bits(limit)))

    # -- the functions ----------------------------------------------------------------------
    def exp(
        self, x: SSAValue, keep_nan: bool = True, negate: bool = False, bounded: bool = False
    ) -> SSAValue:
        """exp(x), or exp(-x) with `negate` (the negation folded into the constants: no
        instruction for it, the same result bit for bit). `bounded`: the caller knows x lies
        in [EXP_LO, EXP_HI] (or is a NaN), so no clamp is needed where the scaling is one
        instruction."""
        b = self.b
        if self._avx512():
            return self._exp_scalef(x, negate, bounded)
        if negate:
            x = b.fneg(x)
        xc = b.maxnum(b.minnum(x, self.c(EXP_HI)), self.c(EXP_LO))
        magic = self.c(ROUNDING_MAGIC)
        k = b.fmuladd(xc, self.c(LOG2E), magic)
        n_f = b.fsub(k, magic)
        n_i = b.sub(self.bits(k), self.ci(f32_bits(ROUNDING_MAGIC)))
        r = b.fmuladd(n_f, self.c(-LN2_HI), xc)
        r = b.fmuladd(n_f, self.c(-LN2_LO), r)
        p = b.polynomial(r, (1.0, 1.0, *EXP_P))  # 1 + r + r^2 P(r), Horner through 1 and r
        if self.ldexp:  # p 2^n rounded once, to a subnormal or inf where it must be
            name = f"llvm.ldexp.{intrinsic_suffix(self.t)}.{intrinsic_suffix(self.it)}"
            result = b.call_intrinsic(name, [p, n_i], self.t)
        else:  # in two steps, so that 2^n1 and 2^n2 are normal numbers
            n1 = b.ashr(n_i, self.ci(1))
            n2 = b.sub(n_i, n1)
            bias = self.ci(127)
            mant = self.ci(23)
            s1 = self.from_bits(b.shl(b.add(n1, bias), mant))
            s2 = self.from_bits(b.shl(b.add(n2, bias), mant))
            result = b.fmul(b.fmul(p, s1), s2)
        if keep_nan:
            result = b.select(self.is_nan(x), x, result)
        return result

    def _avx512(self) -> bool:
        """16 lanes with AVX-512's instructions at hand (the target asked for ldexp)."""
        shape = self.t.get_shape() if isinstance(self.t, VectorType) else ()
        return self.ldexp and shape == (AVX512_LANES,)

    def _x86(self, op: str, a: SSAValue, x: SSAValue) -> SSAValue:
        return avx512_minmax(self.b, op, a, x)

    def _exp_scalef(self, x: SSAValue, negate: bool = False, bounded: bool = False) -> SSAValue:
        """exp of 16 lanes with AVX-512's vscalefps, which scales by 2^n given n as a float
        and rounds once to a subnormal, inf or 0 where it must. n = roundeven(x log2 e) is
        one multiply-add of the rounding constant and one subtract (vrndscaleps after a
        multiply is three micro-ops). The clamps are x86's min/max in the operand order that
        keeps a NaN, and a NaN stays one through the rest: no mask for NaN.

        `negate`: exp(-x) from x, with no negation: the clamps, the rounding and the reduced
        argument's sign are flipped in the constants (r' = x + n ln2 = -r exactly, as
        rounding is symmetric), and p(r) is Horner's rule on r' with the odd coefficients'
        signs flipped: each step is the plain one's value or its negation, so the result is
        the same bit for bit. A sigmoid's exp(-x) is then one vector instruction shorter."""
        b = self.b
        sign = -1.0 if negate else 1.0
        lo, hi = (-EXP_HI, -EXP_LO) if negate else (EXP_LO, EXP_HI)
        current = b.const(4, IntegerType(32))  # _MM_FROUND_CUR_DIRECTION
        xc = x
        if not bounded:  # clamped, a NaN kept
            xc = self._x86("min", self.c(hi), self._x86("max", self.c(lo), x))
        magic = self.c(ROUNDING_MAGIC)
        n_f = b.fsub(b.fmuladd(xc, self.c(sign * LOG2E), magic), magic)
        r = b.fmuladd(n_f, self.c(-sign * LN2_HI), xc)
        r = b.fmuladd(n_f, self.c(-sign * LN2_LO), r)
        # e^r = 1 + r + r^2 P(r) by Horner's rule through the leading 1 and r (six fmas); with
        # `negate`, r = -r' and the odd coefficients flip sign: each step is the plain one's
        # negation or itself, so the result is the same bit for bit
        coefficients = (1.0, 1.0, *EXP_P)
        if negate:
            coefficients = tuple(-c if i % 2 else c for i, c in enumerate(coefficients))
        p = b.polynomial(r, coefficients)
        all_lanes = b.const(-1, IntegerType(16))
        return b.call_intrinsic(
            "llvm.x86.avx512.mask.scalef.ps.512", [p, n_f, p, all_lanes, current], self.t
        )

    def log(self, x: SSAValue) -> SSAValue:
        b = self.b
        xb = self.bits(x)
        subnormal = b.icmp("ult", xb, self.ci(0x00800000))
        xs = b.select(subnormal, b.fmul(x, self.c(8388608.0)), x)
        sb = self.bits(xs)
        e = b.sub(b.lshr(sb, self.ci(23)), self.ci(127))
        e = b.select(subnormal, b.sub(e, self.ci(23)), e)
        mbits = b.or_(b.and_(sb, self.ci(0x007FFFFF)), self.ci(0x3F800000))
        m = self.from_bits(mbits)
        big = b.icmp("sgt", mbits, self.ci(f32_bits(1.4142135623730951)))
        m = b.select(big, b.fmul(m, self.c(0.5)), m)
        e = b.select(big, b.add(e, self.ci(1)), e)
        f = b.fsub(m, self.c(1.0))
        ef = b.sitofp(e, self.t)
        z = b.fmul(f, f)
        y = b.fmul(b.fmul(f, z), b.polynomial(f, LOG_Q))
        y = b.fmuladd(ef, self.c(LN2_LO), y)
        y = b.fmuladd(z, self.c(-0.5), y)
        result = b.fadd(f, y)
        result = b.fmuladd(ef, self.c(LN2_HI), result)
        inf = self.c(float("inf"))
        result = b.select(b.icmp("eq", xb, self.ci(0x7F800000)), inf, result)
        result = b.select(b.icmp("slt", xb, self.ci(0)), self.c(float("nan")), result)
        result = b.select(b.icmp("eq", self.abs_bits(x), self.ci(0)), self.c(float("-inf")), result)
        return b.select(self.is_nan(x), x, result)

    def tanh(self, x: SSAValue) -> SSAValue:
        b = self.b
        a = b.fabs(x)
        x2 = b.fmul(x, x)
        small = b.fmuladd(b.fmul(x, x2), b.polynomial(x2, TANH_P), x)
        e = self.exp(b.fadd(a, a))
        large = b.fsub(self.c(1.0), b.fdiv(self.c(2.0), b.fadd(e, self.c(1.0))))
        large = b.copysign(large, x)
        return b.select(self.abs_less(a, 0.625), small, large)

    def erf(self, x: SSAValue) -> SSAValue:
        b = self.b
        a = b.fabs(x)
        small = b.fmuladd(x, b.polynomial(b.fmul(x, x), ERF_SMALL), x)
        if self._avx512():  # a NaN passes the clamp, so `large` and the result are NaN
            ac = self._x86("max", self.c(1.0), self._x86("min", self.c(4.0), a))
        else:
            ac = b.maxnum(b.minnum(a, self.c(4.0)), self.c(1.0))
        q = b.polynomial(b.fdiv(self.c(1.0), ac), ERF_LARGE)
        e = self.exp(b.fmul(ac, ac), keep_nan=False, negate=True, bounded=True)
        large = b.copysign(b.fmuladd(b.fneg(e), q, self.c(1.0)), x)
        result = b.select(self.abs_less(a, 1.0), small, large)
        return result if self._avx512() else b.select(self.is_nan(x), x, result)


__all__ = ["ERF_LARGE", "ERF_SMALL", "EXP_P", "F32Math", "LOG_Q", "TANH_P", "f32_bits"]
