"""convert-math-to-llvm: math ops to LLVM intrinsics, libm calls or inline polynomials.

exp, log, tanh and erf on f32 (scalars and vectors; f16 through f32) become the polynomial
approximations of `math_approx.py`, because LLVM scalarizes their vector intrinsics into libm
calls here. Everything else, and f64, uses the LLVM intrinsic or the libm function (vectors of
libm-only functions are unrolled lane by lane). `approximate=false` turns the polynomials off.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    ModuleOp,
    VectorType,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.llvm_builder import (
    LLVMBuilder,
    element_type,
    enclosing_module,
    ensure_function_declaration,
    intrinsic_suffix,
    same_shape,
    to_llvm_fastmath,
)
from nnvm.lowering.to_llvm.math_approx import AVX512_LANES, F32Math
from nnvm.support.errors import UserError


def _supported(t: Attribute) -> bool:
    if isinstance(t, VectorType):
        return len(t.get_shape()) == 1 and isinstance(t.element_type, AnyFloat | IntegerType)
    return isinstance(t, AnyFloat | IntegerType)


def _args(op: Operation, b: LLVMBuilder) -> list[SSAValue] | None:
    if not all(_supported(v.type) for v in (*op.operands, *op.results)):
        return None
    return [b.to_llvm(v) for v in op.operands]


def _xdsl_op(ctor) -> Handler:
    """Ops xDSL's llvm dialect has (llvm.intr.fabs, sqrt, floor, ...)."""

    def handler(op: Operation, b: LLVMBuilder):
        args = _args(op, b)
        if args is None:
            return None
        fm = to_llvm_fastmath(op.properties.get("fastmath"))
        if ctor is llvm.FAbsOp:
            return [b.emit(ctor(args[0], args[0].type, fm))]
        return [b.emit(ctor(*args, fm))]

    return handler


def _intrinsic(name: str, extra_false_flag: bool = False) -> Handler:
    """`llvm.<name>.<type>` through llvm.call_intrinsic (round, trunc, tan, ctlz, ...)."""

    def handler(op: Operation, b: LLVMBuilder):
        args = _args(op, b)
        if args is None:
            return None
        t = op.results[0].type
        if extra_false_flag:
            args = [*args, b.const(0, i1)]
        fm = to_llvm_fastmath(op.properties.get("fastmath"))
        return [b.call_intrinsic(f"llvm.{name}.{intrinsic_suffix(t)}", args, t, fm)]

    return handler


def _libm(name: str) -> Handler:
    """A libm function (`name` + 'f' for f32), lane by lane for vectors."""

    def handler(op: Operation, b: LLVMBuilder):
        args = _args(op, b)
        if args is None:
            return None
        t = op.results[0].type
        e = element_type(t)
        if not isinstance(e, Float32Type | Float64Type):
            raise UserError(f"{op.name} on {t} is not supported (f32 or f64 only)")
        fname = name + ("f" if isinstance(e, Float32Type) else "")
        ensure_function_declaration(enclosing_module(op), fname, [e] * len(args), e)
        if not isinstance(t, VectorType):
            return [b.call(fname, args, e)]
        result = b.emit(llvm.UndefOp(t))
        for lane in range(t.get_shape()[0]):
            lanes = [b.extract_lane(a, lane) for a in args]
            value = b.call(fname, lanes, e)
            result = b.emit(llvm.InsertElementOp(result, value, b.i32(lane)))
        return [result]

    return handler


def _rsqrt(op: math.RsqrtOp, b: LLVMBuilder):
    args = _args(op, b)
    if args is None:
        return None
    x = args[0]
    return [b.fdiv(b.const(1.0, x.type), b.emit(llvm.FSqrtOp(x)))]


def _fma(op: math.FmaOp, b: LLVMBuilder):
    args = _args(op, b)
    return None if args is None else [b.fma(*args)]


def _fpowi(op: math.FPowIOp, b: LLVMBuilder):
    args = _args(op, b)
    if args is None:
        return None
    x, n = args
    t = x.type
    n32 = b.int_resize(n, same_shape(n.type, i32))
    name = f"llvm.powi.{intrinsic_suffix(t)}.{intrinsic_suffix(n32.type)}"
    return [b.call_intrinsic(name, [x, n32], t)]


@dataclass(frozen=True)
class _Approx:
    """exp/log/tanh/erf: polynomial for f32 (and f16 via f32), intrinsic or libm otherwise."""

    method: str
    fallback: Handler
    approximate: bool
    ldexp: bool = False

    def __call__(self, op: Operation, b: LLVMBuilder):
        args = _args(op, b)
        if args is None:
            return None
        x = args[0]
        e = element_type(x.type)
        if not self.approximate or isinstance(e, Float64Type):
            return self.fallback(op, b)
        if isinstance(e, Float16Type):
            wide = b.fpext(x, same_shape(x.type, f32))
            r = self._in_registers(b, wide, lambda m, v: getattr(m, self.method)(v))
            return [b.fptrunc(r, x.type)]
        if isinstance(e, Float32Type):
            source = op.operands[0].owner  # arith.negf, or the llvm.fneg that replaced it
            if self.method == "exp" and isinstance(source, arith.NegfOp | llvm.FNegOp):
                # exp(-y) from y: the negation folds into the constants (a sigmoid's exp)
                y = b.to_llvm(source.operands[0])
                return [self._in_registers(b, y, lambda m, v: m.exp(v, negate=True))]
            return [self._in_registers(b, x, lambda m, v: getattr(m, self.method)(v))]
        return None

    def _in_registers(self, b: LLVMBuilder, x: SSAValue, fn) -> SSAValue:
        """fn(F32Math, x), on 16-lane slices of a wider vector where AVX-512's instructions
        serve (a matmul epilogue over two vectors of columns is one 32-lane vector): the
        16-lane forms use vscalefps and x86's NaN-keeping min/max directly. The slices are
        the registers LLVM would split the vector into; the shuffles cost nothing."""
        t = x.type
        n = t.get_shape()[0] if isinstance(t, VectorType) and t.get_num_dims() == 1 else 0
        if not self.ldexp or n <= AVX512_LANES or n % AVX512_LANES:
            return fn(F32Math(b, t, self.ldexp), x)
        math16 = F32Math(b, VectorType(t.element_type, [AVX512_LANES]), self.ldexp)
        return b.sliced([x], AVX512_LANES, lambda p: fn(math16, p))


def math_table(approximate: bool = True, ldexp: bool = False) -> dict[type[Operation], Handler]:
    """`ldexp`: the target has an instruction for llvm.ldexp (AVX-512's vscalefps), which
    scales exp's result (also inside tanh and erf) in one step."""
    return {
        math.ExpOp: _Approx("exp", _xdsl_op(llvm.FExpOp), approximate, ldexp),
        math.LogOp: _Approx("log", _xdsl_op(llvm.FLogOp), approximate),
        math.TanhOp: _Approx("tanh", _intrinsic("tanh"), approximate, ldexp),
        math.ErfOp: _Approx("erf", _libm("erf"), approximate, ldexp),
        math.AbsFOp: _xdsl_op(llvm.FAbsOp),
        math.SqrtOp: _xdsl_op(llvm.FSqrtOp),
        math.RsqrtOp: _rsqrt,
        math.CeilOp: _xdsl_op(llvm.FCeilOp),
        math.FloorOp: _xdsl_op(llvm.FFloorOp),
        math.SinOp: _xdsl_op(llvm.FSinOp),
        math.CosOp: _xdsl_op(llvm.FCosOp),
        math.Exp2Op: _xdsl_op(llvm.FExp2Op),
        math.Log2Op: _xdsl_op(llvm.FLog2Op),
        math.PowFOp: _xdsl_op(llvm.FPowOp),
        math.CopySignOp: _xdsl_op(llvm.FCopySignOp),
        math.FmaOp: _fma,
        math.FPowIOp: _fpowi,
        math.Log10Op: _intrinsic("log10"),
        math.RoundOp: _intrinsic("round"),
        math.RoundEvenOp: _intrinsic("roundeven"),
        math.TruncOp: _intrinsic("trunc"),
        math.TanOp: _intrinsic("tan"),
        math.AtanOp: _intrinsic("atan"),
        math.AsinOp: _intrinsic("asin"),
        math.AcosOp: _intrinsic("acos"),
        math.SinhOp: _intrinsic("sinh"),
        math.CoshOp: _intrinsic("cosh"),
        math.AbsIOp: _intrinsic("abs", extra_false_flag=True),
        math.CountLeadingZerosOp: _intrinsic("ctlz", extra_false_flag=True),
        math.CountTrailingZerosOp: _intrinsic("cttz", extra_false_flag=True),
        math.CtPopOp: _intrinsic("ctpop"),
        math.ExpM1Op: _libm("expm1"),
        math.Log1pOp: _libm("log1p"),
        math.AcoshOp: _libm("acosh"),
        math.AsinhOp: _libm("asinh"),
        math.AtanhOp: _libm("atanh"),
        math.CbrtOp: _libm("cbrt"),
        math.Atan2Op: _libm("atan2"),
    }


@dataclass(frozen=True)
class ConvertMathToLLVM(ModulePass):
    """Lower math ops; f32 exp/log/tanh/erf become vectorizable polynomials."""

    name = "convert-math-to-llvm"

    approximate: bool = True
    """Use the polynomial approximations (else LLVM intrinsics / libm for everything)."""
    ldexp: bool = False
    """The target has an ldexp instruction (AVX-512): exp scales by it in one step."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_table(op, math_table(self.approximate, self.ldexp))
