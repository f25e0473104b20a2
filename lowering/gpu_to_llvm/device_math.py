"""f32 math a PTX module cannot call out for (NVPTX has no libm: `llvm.sin.f32` aborts LLVM,
`llvm.tan.f32` / `expm1f` find no library), built from the CPU's exp/log polynomials
(math_approx.py), sqrt, fma and selects. Scalars only (GPU kernels are scalar code); anything
else is left for `unsupported_calls` to report.

sin/cos/tan: x = j pi/2 + r by Cody-Waite in three parts (|j| < 2^22), Cephes' minimax
polynomials on |r| <= pi/4, the quadrant from j's low bits. atan: Cephes' reduction to
|x| <= tan(pi/8) and its degree-4 polynomial; asin, acos, atan2 through it. log1p/expm1 by
Kahan's correction of log(1+x) / exp(x)-1; sinh/cosh/asinh/acosh/atanh/pow/cbrt from those,
log2/log10 as scaled logs. Special values follow C99 except signed zeros of atan2. f64 only
for pow with an integer exponent (integer pow is computed in f64), by square and multiply."""

from __future__ import annotations

import math as pymath

from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import Float32Type, Float64Type, f64, i32, i64
from xdsl.ir import Operation, SSAValue

from nnvm.lowering.to_llvm.conversion import Handler
from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder
from nnvm.lowering.to_llvm.math_approx import F32Math

ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: x + magic - magic rounds x to an integer
PIO2 = (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)  # pi/2 in three parts
SIN_P = (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)
COS_P = (4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5)
ATAN_P = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)


class DeviceMath:
    """The functions for scalar f32 values, emitted into one LLVMBuilder."""

    def __init__(self, b: LLVMBuilder):
        self.b = b
        self.m = F32Math(b, Float32Type())

    def c(self, v: float) -> SSAValue:
        return self.m.c(v)

    def lt(self, a: SSAValue, v: SSAValue | float) -> SSAValue:
        return self.b.fcmp("olt", a, self.c(v) if isinstance(v, float) else v)

    def eq(self, a: SSAValue, v: SSAValue | float) -> SSAValue:
        return self.b.fcmp("oeq", a, self.c(v) if isinstance(v, float) else v)

    def sqrt(self, x: SSAValue) -> SSAValue:
        return self.b.emit(llvm.FSqrtOp(x))

    def sign(self, r: SSAValue, x: SSAValue) -> SSAValue:
        return self.b.copysign(r, x)

    # -- trigonometric ----------------------------------------------------------------------
    def _reduced(self, x: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
        """(sin r, cos r, quadrant j as i32) for x = j pi/2 + r."""
        b = self.b
        magic = self.c(ROUND_MAGIC)
        k = b.fmuladd(x, self.c(2 / pymath.pi), magic)
        j = b.fsub(k, magic)
        q = b.sub(self.m.bits(k), self.m.bits(magic))
        r = x
        for part in PIO2:
            r = b.fma(j, self.c(-part), r)
        z = b.fmul(r, r)
        s = b.fmuladd(b.fmul(r, z), b.polynomial(z, SIN_P), r)
        cz = b.fmul(b.fmul(z, z), b.polynomial(z, COS_P))
        c = b.fadd(b.fmuladd(z, self.c(-0.5), self.c(1.0)), cz)
        return s, c, q

    def _quadrant(self, q: SSAValue, bit: int) -> SSAValue:
        b = self.b
        return b.icmp("ne", b.and_(q, b.const(bit, i32)), b.const(0, i32))

    def sin(self, x: SSAValue, shift: int = 0) -> SSAValue:
        b = self.b
        s, c, q = self._reduced(x)
        if shift:
            q = b.add(q, b.const(shift, i32))
        v = b.select(self._quadrant(q, 1), c, s)
        return b.select(self._quadrant(q, 2), b.fneg(v), v)

    def cos(self, x: SSAValue) -> SSAValue:
        return self.sin(x, shift=1)

    def tan(self, x: SSAValue) -> SSAValue:
        b = self.b
        s, c, q = self._reduced(x)
        odd = self._quadrant(q, 1)
        return b.select(odd, b.fneg(b.fdiv(c, s)), b.fdiv(s, c))

    def atan(self, x: SSAValue) -> SSAValue:
        b = self.b
        ax = b.fabs(x)
        big = b.fcmp("ogt", ax, self.c(2.414213562373095))
        mid = b.fcmp("ogt", ax, self.c(0.4142135623730950))
        one = self.c(1.0)
        xm = b.fdiv(b.fsub(ax, one), b.fadd(ax, one))
        xr = b.select(big, b.fdiv(self.c(-1.0), ax), b.select(mid, xm, ax))
        y0 = b.select(big, self.c(pymath.pi / 2), b.select(mid, self.c(pymath.pi / 4), self.c(0.0)))
        z = b.fmul(xr, xr)
        p = b.fadd(b.fmul(b.fmul(b.polynomial(z, ATAN_P), z), xr), xr)
        return self.sign(b.fadd(y0, p), x)

    def asin(self, x: SSAValue) -> SSAValue:
        b = self.b
        one = self.c(1.0)
        cosine = self.sqrt(b.fmul(b.fsub(one, x), b.fadd(one, x)))
        return self.atan(b.fdiv(x, cosine))

    def acos(self, x: SSAValue) -> SSAValue:
        b = self.b
        one = self.c(1.0)
        half_tan = self.sqrt(b.fdiv(b.fsub(one, x), b.fadd(one, x)))
        return b.fmul(self.c(2.0), self.atan(half_tan))

    def atan2(self, y: SSAValue, x: SSAValue) -> SSAValue:
        b = self.b
        a = self.atan(b.fdiv(y, x))
        shifted = b.fadd(a, self.sign(self.c(pymath.pi), y))
        both_zero = b.and_(self.eq(x, 0.0), self.eq(y, 0.0))
        left = b.select(self.lt(x, 0.0), shifted, a)
        return b.select(both_zero, self.c(0.0), left)

    # -- exponential and logarithmic --------------------------------------------------------
    def log1p(self, x: SSAValue) -> SSAValue:
        b = self.b
        u = b.fadd(x, self.c(1.0))
        d = b.fsub(u, self.c(1.0))
        corrected = b.fmul(self.m.log(u), b.fdiv(x, d))
        inf = self.eq(u, pymath.inf)
        return b.select(self.eq(d, 0.0), x, b.select(inf, u, corrected))

    def expm1(self, x: SSAValue) -> SSAValue:
        b = self.b
        u = self.m.exp(x)
        d = b.fsub(u, self.c(1.0))
        corrected = b.fmul(d, b.fdiv(x, self.m.log(u)))
        special = b.select(self.eq(d, -1.0), d, b.select(self.eq(u, pymath.inf), u, corrected))
        return b.select(self.eq(d, 0.0), x, special)

    def sinh(self, x: SSAValue) -> SSAValue:
        b = self.b
        ax = b.fabs(x)
        e = self.expm1(ax)
        small = b.fmul(self.c(0.5), b.fadd(e, b.fdiv(e, b.fadd(e, self.c(1.0)))))
        h = self.m.exp(b.fsub(ax, self.c(pymath.log(2))))
        large = b.fsub(h, b.fdiv(self.c(0.25), h))
        return self.sign(b.select(self.lt(ax, 1.0), small, large), x)

    def cosh(self, x: SSAValue) -> SSAValue:
        b = self.b
        h = self.m.exp(b.fsub(b.fabs(x), self.c(pymath.log(2))))
        return b.fadd(h, b.fdiv(self.c(0.25), h))

    def asinh(self, x: SSAValue) -> SSAValue:
        b = self.b
        ax = b.fabs(x)
        sq = b.fmul(ax, ax)
        root = self.sqrt(b.fadd(sq, self.c(1.0)))
        moderate = self.log1p(b.fadd(ax, b.fdiv(sq, b.fadd(root, self.c(1.0)))))
        huge = b.fadd(self.m.log(ax), self.c(pymath.log(2)))
        return self.sign(b.select(self.lt(ax, 1e18), moderate, huge), x)

    def acosh(self, x: SSAValue) -> SSAValue:
        b = self.b
        t = b.fsub(x, self.c(1.0))
        moderate = self.log1p(b.fadd(t, self.sqrt(b.fmul(t, b.fadd(x, self.c(1.0))))))
        huge = b.fadd(self.m.log(x), self.c(pymath.log(2)))
        return b.select(self.lt(x, 1e18), moderate, huge)

    def atanh(self, x: SSAValue) -> SSAValue:
        b = self.b
        ratio = b.fdiv(b.fmul(self.c(2.0), x), b.fsub(self.c(1.0), x))
        return b.fmul(self.c(0.5), self.log1p(ratio))

    def log2(self, x: SSAValue) -> SSAValue:
        return self.b.fmul(self.m.log(x), self.c(1 / pymath.log(2)))

    def log10(self, x: SSAValue) -> SSAValue:
        return self.b.fmul(self.m.log(x), self.c(1 / pymath.log(10)))

    def cbrt(self, x: SSAValue) -> SSAValue:
        b = self.b
        r = self.m.exp(b.fmul(self.m.log(b.fabs(x)), self.c(1 / 3)))
        return self.sign(r, x)

    def pow(self, x: SSAValue, y: SSAValue) -> SSAValue:
        """exp(y log|x|), negative for x < 0 and odd integer y, NaN for x < 0 and fractional y;
        x^0 = 1 for every x."""
        b = self.b
        mag = self.m.exp(b.fmul(y, self.m.log(b.fabs(x))))
        half = b.fmul(y, self.c(0.5))
        integer = self.eq(b.emit(llvm.FFloorOp(y)), y)
        odd = b.and_(integer, b.fcmp("une", b.emit(llvm.FFloorOp(half)), half))
        negative = self.lt(x, 0.0)
        signed = b.select(odd, b.fneg(mag), mag)
        r = b.select(negative, b.select(integer, signed, self.c(pymath.nan)), mag)
        return b.select(self.eq(y, 0.0), self.c(1.0), r)


def pow_f64(b: LLVMBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """x^y in f64 for integer y (square and multiply over the 63 bits of |y|; 1/x^|y| for
    y < 0), NaN otherwise: f64 reaches a GPU kernel only through integer pow, computed in f64."""
    n = b.fptosi(y, i64)
    negative = b.icmp("slt", n, b.const(0, i64))
    m = b.select(negative, b.sub(b.const(0, i64), n), n)
    result, base = b.const(1.0, f64), x
    for bit in range(63):
        on = b.icmp("ne", b.and_(b.lshr(m, b.const(bit, i64)), b.const(1, i64)), b.const(0, i64))
        result = b.select(on, b.fmul(result, base), result)
        base = b.fmul(base, base)
    result = b.select(negative, b.fdiv(b.const(1.0, f64), result), result)
    integer = b.fcmp("oeq", b.emit(llvm.FFloorOp(y)), y)
    return b.select(integer, result, b.const(pymath.nan, f64))


def _pow(op: math.PowFOp, b: LLVMBuilder):
    t = op.results[0].type
    lhs, rhs = (b.to_llvm(v) for v in op.operands)
    if isinstance(t, Float32Type):
        return [DeviceMath(b).pow(lhs, rhs)]
    if isinstance(t, Float64Type):
        return [pow_f64(b, lhs, rhs)]
    return None


def _unary(method: str) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        if not isinstance(op.results[0].type, Float32Type):
            return None
        return [getattr(DeviceMath(b), method)(b.to_llvm(op.operands[0]))]

    return handler


def _binary(method: str) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        if not isinstance(op.results[0].type, Float32Type):
            return None
        lhs, rhs = (b.to_llvm(v) for v in op.operands)
        return [getattr(DeviceMath(b), method)(lhs, rhs)]

    return handler


def _powi(op: math.FPowIOp, b: LLVMBuilder):
    if not isinstance(op.results[0].type, Float32Type):
        return None
    x, n = (b.to_llvm(v) for v in op.operands)
    return [DeviceMath(b).pow(x, b.sitofp(n, Float32Type()))]


DEVICE_MATH_TABLE: dict[type[Operation], Handler] = {
    math.SinOp: _unary("sin"),
    math.CosOp: _unary("cos"),
    math.TanOp: _unary("tan"),
    math.AtanOp: _unary("atan"),
    math.AsinOp: _unary("asin"),
    math.AcosOp: _unary("acos"),
    math.SinhOp: _unary("sinh"),
    math.CoshOp: _unary("cosh"),
    math.AsinhOp: _unary("asinh"),
    math.AcoshOp: _unary("acosh"),
    math.AtanhOp: _unary("atanh"),
    math.ExpM1Op: _unary("expm1"),
    math.Log1pOp: _unary("log1p"),
    math.Log2Op: _unary("log2"),
    math.Log10Op: _unary("log10"),
    math.CbrtOp: _unary("cbrt"),
    math.PowFOp: _pow,
    math.Atan2Op: _binary("atan2"),
    math.FPowIOp: _powi,
}

__all__ = ["DEVICE_MATH_TABLE", "DeviceMath"]
