"""convert-arith-to-llvm: integer and float arithmetic, casts, compares, select, min/max.

Index values become i64 (the kernel ABI is 64-bit). Float to int casts use the saturating
`llvm.fpto{s,u}i.sat` intrinsics because the dialect has no plain `fptosi`; they agree with
`fptosi` wherever that is defined and give 0 for NaN instead of poison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.llvm_builder import (
    LLVMBuilder,
    convert_type,
    element_type,
    to_llvm_fastmath,
)
from nnvm.lowering.to_llvm.math_approx import AVX512_LANES, avx512_minmax


def _is_supported(t) -> bool:
    """Scalars and 1-D vectors; tensors are left for a bufferizing lowering to handle."""
    if isinstance(t, VectorType):
        return len(t.get_shape()) == 1
    return isinstance(t, IntegerType | IndexType | AnyFloat)


def _operands(op: Operation, b: LLVMBuilder) -> list[SSAValue] | None:
    if not all(_is_supported(v.type) for v in (*op.operands, *op.results)):
        return None
    return [b.to_llvm(v) for v in op.operands]


def _constant(op: arith.ConstantOp, b: LLVMBuilder):
    t = op.result.type
    if not _is_supported(t):
        return None
    lt = convert_type(t)
    value = op.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        assert isinstance(lt, VectorType)
        values = list(value.get_values())
        if isinstance(element_type(lt), IntegerType) and element_type(lt).width.data == 1:
            values = [-1 if v else 0 for v in values]
        if value.is_splat():
            values = values[:1]
        return [b.emit(llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(lt, values), lt))]
    if isinstance(value, IntegerAttr):
        return [b.const(value.value.data, lt)]
    if isinstance(value, FloatAttr):
        return [b.const(value.value.data, lt)]
    return None


def _int_binary(ctor: Callable[[SSAValue, SSAValue], Operation]) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        ops = _operands(op, b)
        if ops is None:
            return None
        new = ctor(ops[0], ops[1])
        flags = op.properties.get("overflowFlags")
        if flags is not None and getattr(flags, "data", None) and hasattr(new, "overflowFlags"):
            names = {f.value for f in flags.data}
            llvm_flags = tuple(f for f in llvm.OverflowFlag if f.value in names)
            new.properties["overflowFlags"] = IntegerAttr(
                llvm.OverflowAttr(llvm_flags).to_int(), 32
            )
        return [b.emit(new)]

    return handler


def _float_binary(ctor: type[llvm.AbstractFloatArithOp]) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        ops = _operands(op, b)
        if ops is None:
            return None
        return [b.emit(ctor(ops[0], ops[1], to_llvm_fastmath(op.properties.get("fastmath"))))]

    return handler


def _negf(op: arith.NegfOp, b: LLVMBuilder):
    ops = _operands(op, b)
    return None if ops is None else [b.fneg(ops[0])]


def _int_minmax(pred: str) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        ops = _operands(op, b)
        if ops is None:
            return None
        return [b.select(b.icmp(pred, ops[0], ops[1]), ops[0], ops[1])]

    return handler


def _float_minmax(intrinsic: str | None, ctor=None) -> Handler:
    """maxnumf/minnumf map to llvm.intr.maxnum/minnum; maximumf/minimumf (NaN-propagating)
    to llvm.maximum/minimum through call_intrinsic."""

    def handler(op: Operation, b: LLVMBuilder):
        ops = _operands(op, b)
        if ops is None:
            return None
        if ctor is not None:
            return [b.emit(ctor(ops[0], ops[1]))]
        from nnvm.lowering.to_llvm.llvm_builder import intrinsic_suffix

        t = ops[0].type
        return [b.call_intrinsic(f"{intrinsic}.{intrinsic_suffix(t)}", ops, t)]

    return handler


def _floordivsi(op: arith.FloorDivSIOp, b: LLVMBuilder):
    """q = a / b rounded toward -inf: truncating quotient, minus one when the remainder is
    nonzero and its sign differs from the divisor's."""
    return _rounded_sdiv(op, b, toward_ceiling=False)


def _ceildivsi(op: arith.CeilDivSIOp, b: LLVMBuilder):
    """Truncating quotient, plus one when the remainder is nonzero with the divisor's sign."""
    return _rounded_sdiv(op, b, toward_ceiling=True)


def _rounded_sdiv(op: Operation, b: LLVMBuilder, toward_ceiling: bool):
    """The truncating quotient moved one step toward +inf (ceiling) or -inf (floor) when the
    remainder is nonzero and its sign agrees (ceiling) or disagrees (floor) with the divisor's."""
    ops = _operands(op, b)
    if ops is None:
        return None
    x, y = ops
    zero = b.const(0, x.type)
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    nonzero = b.icmp("ne", r, zero)
    signs = b.icmp("eq" if toward_ceiling else "ne", b.icmp("slt", r, zero), b.icmp("slt", y, zero))
    adjust = b.and_(nonzero, signs)
    one = b.const(1, x.type)
    return [b.select(adjust, b.add(q, one) if toward_ceiling else b.sub(q, one), q)]


def _ceildivui(op: arith.CeilDivUIOp, b: LLVMBuilder):
    ops = _operands(op, b)
    if ops is None:
        return None
    x, y = ops
    q = b.udiv(x, y)
    r = b.urem(x, y)
    nonzero = b.icmp("ne", r, b.const(0, x.type))
    return [b.add(q, b.zext(nonzero, x.type) if x.type != nonzero.type else nonzero)]


def _cmpi(op: arith.CmpiOp, b: LLVMBuilder):
    ops = _operands(op, b)
    if ops is None:
        return None
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    return [b.icmp(pred, ops[0], ops[1])]


def _cmpf(op: arith.CmpfOp, b: LLVMBuilder):
    ops = _operands(op, b)
    if ops is None:
        return None
    pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    return [b.fcmp(pred, ops[0], ops[1])]


def _select(op: arith.SelectOp, b: LLVMBuilder):
    ops = _operands(op, b)
    if ops is None:
        return None
    return [b.select(ops[0], ops[1], ops[2])]


def _cast(fn: Callable[[LLVMBuilder, SSAValue, object], SSAValue]) -> Handler:
    def handler(op: Operation, b: LLVMBuilder):
        ops = _operands(op, b)
        if ops is None:
            return None
        return [fn(b, ops[0], convert_type(op.results[0].type))]

    return handler


def _index_cast(op: arith.IndexCastOp, b: LLVMBuilder):
    """index <-> iN: sign-extending or truncating through i64."""
    ops = _operands(op, b)
    if ops is None:
        return None
    return [b.int_resize(ops[0], convert_type(op.result.type), signed=True)]


ARITH_TABLE: dict[type[Operation], Handler] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _int_binary(llvm.AddOp),
    arith.SubiOp: _int_binary(llvm.SubOp),
    arith.MuliOp: _int_binary(llvm.MulOp),
    arith.DivSIOp: _int_binary(llvm.SDivOp),
    arith.DivUIOp: _int_binary(llvm.UDivOp),
    arith.RemSIOp: _int_binary(llvm.SRemOp),
    arith.RemUIOp: _int_binary(llvm.URemOp),
    arith.AndIOp: _int_binary(llvm.AndOp),
    arith.OrIOp: _int_binary(llvm.OrOp),
    arith.XOrIOp: _int_binary(llvm.XOrOp),
    arith.ShLIOp: _int_binary(llvm.ShlOp),
    arith.ShRSIOp: _int_binary(llvm.AShrOp),
    arith.ShRUIOp: _int_binary(llvm.LShrOp),
    arith.FloorDivSIOp: _floordivsi,
    arith.CeilDivSIOp: _ceildivsi,
    arith.CeilDivUIOp: _ceildivui,
    arith.MinSIOp: _int_minmax("slt"),
    arith.MaxSIOp: _int_minmax("sgt"),
    arith.MinUIOp: _int_minmax("ult"),
    arith.MaxUIOp: _int_minmax("ugt"),
    arith.AddfOp: _float_binary(llvm.FAddOp),
    arith.SubfOp: _float_binary(llvm.FSubOp),
    arith.MulfOp: _float_binary(llvm.FMulOp),
    arith.DivfOp: _float_binary(llvm.FDivOp),
    arith.NegfOp: _negf,
    arith.MaxnumfOp: _float_minmax(None, llvm.VectorFMaxOp),
    arith.MinnumfOp: _float_minmax(None, llvm.VectorFMinOp),
    arith.MaximumfOp: _float_minmax("llvm.maximum"),
    arith.MinimumfOp: _float_minmax("llvm.minimum"),
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    arith.ExtFOp: _cast(LLVMBuilder.fpext),
    arith.TruncFOp: _cast(LLVMBuilder.fptrunc),
    arith.ExtSIOp: _cast(LLVMBuilder.sext),
    arith.ExtUIOp: _cast(LLVMBuilder.zext),
    arith.TruncIOp: _cast(LLVMBuilder.trunc),
    arith.SIToFPOp: _cast(LLVMBuilder.sitofp),
    arith.UIToFPOp: _cast(LLVMBuilder.uitofp),
    arith.FPToSIOp: _cast(LLVMBuilder.fptosi),
    arith.FPToUIOp: _cast(LLVMBuilder.fptoui),
    arith.BitcastOp: _cast(LLVMBuilder.bitcast),
    arith.IndexCastOp: _index_cast,
}


def _constant_floats(value: SSAValue) -> list[float] | None:
    """The values of a float constant (a scalar or a dense vector), looking through
    broadcasts of it; None when `value` is not one. The walk may already have replaced the
    operand (a value whose type does not change is replaced at once), so the llvm forms count
    as well as arith's and vector's: llvm.mlir.constant, and a splat (insertelement of a
    scalar, then a shufflevector of zeros)."""
    op = value.owner
    while True:
        if isinstance(op, vector.BroadcastOp):
            op = op.source.owner
        elif isinstance(op, llvm.ShuffleVectorOp) and set(op.mask.get_values()) == {0}:
            op = op.v1.owner
        elif isinstance(op, llvm.InsertElementOp) and _constant_floats(op.index) == [0.0]:
            op = op.value.owner
        else:
            break
    if isinstance(op, arith.ConstantOp | llvm.ConstantOp):
        attr = op.value
        if isinstance(attr, FloatAttr):
            return [attr.value.data]
        if isinstance(attr, DenseIntOrFPElementsAttr) and isinstance(
            element_type(attr.get_type()), AnyFloat
        ):
            return [float(v) for v in attr.get_values()]
    if isinstance(op, llvm.ConstantOp | arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return [float(op.value.value.data)]
    return None


def _x86_minmax(which: str, fallback: Handler) -> Handler:
    """maximumf/minimumf of a value and a constant that is no NaN (ReLU's 0, ReLU6's 6, a
    Clip's bounds), as AVX-512's vmaxps/vminps with the constant first: x86 returns the second
    operand where either is a NaN, so a NaN in the value passes through, in one instruction.
    LLVM's llvm.maximum keeps the NaN with a compare and a blend after the max (three
    instructions). Where both are zeros x86 also returns the second operand: max(+0, -0) is
    -0 here, +0 by llvm.maximum; IEEE 754's maxNum allows either."""

    def handler(op: Operation, b: LLVMBuilder):
        t = op.results[0].type
        lanes = t.get_shape()[0] if isinstance(t, VectorType) and t.get_num_dims() == 1 else 0
        if not lanes or lanes % AVX512_LANES or not isinstance(t.element_type, Float32Type):
            return fallback(op, b)
        for k in (0, 1):
            values = _constant_floats(op.operands[k])
            if values is not None and not any(v != v for v in values):
                break
        else:
            return fallback(op, b)
        const, x = b.to_llvm(op.operands[k]), b.to_llvm(op.operands[1 - k])
        return [b.sliced([const, x], AVX512_LANES, lambda c, v: avx512_minmax(b, which, c, v))]

    return handler


def x86_minmax_table() -> dict[type[Operation], Handler]:
    """The AVX-512 forms of maximumf/minimumf against a constant (the CPU target asks for
    them where it has AVX-512)."""
    return {
        arith.MaximumfOp: _x86_minmax("max", ARITH_TABLE[arith.MaximumfOp]),
        arith.MinimumfOp: _x86_minmax("min", ARITH_TABLE[arith.MinimumfOp]),
    }


# arith.remf has no xDSL op; llvm.frem is reachable from the llvm dialect directly.

SUPPORTED_OPS: Sequence[str] = sorted(op.name for op in ARITH_TABLE)


@dataclass(frozen=True)
class ConvertArithToLLVM(ModulePass):
    """Lower arith to the llvm dialect (index -> i64)."""

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_table(op, ARITH_TABLE)
