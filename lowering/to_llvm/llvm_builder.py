"""Shared helpers of the conversions to the `llvm` dialect.

The conversions are written against one small builder so that every pattern emits the same
shapes of IR: index becomes i64, memrefs become bare `!llvm.ptr` (kernel ABI), and values that
cross between converted and unconverted ops travel through `builtin.unrealized_conversion_cast`,
removed at the end by `reconcile-unrealized-casts`.

xDSL 0.74's llvm dialect has no vector `llvm.fcmp`/`llvm.select` (both are scalar-only there),
no `fptosi`/`fptoui`/`uitofp` and no `extractelement`; the builder works around each with ops
the dialect does have (integer compares on the float bits, and/or blends, saturating cast
intrinsics, a one-lane shufflevector plus bitcast) so that the output stays plain upstream LLVM
dialect that `mlir-translate` also accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.llvm import FastMathAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from nnvm.support.errors import UserError

PTR = llvm.LLVMPointerType()


def convert_type(t: Attribute) -> Attribute:
    """The llvm-dialect type of a value of type `t` (index -> i64, memref -> ptr)."""
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return PTR
    if isinstance(t, VectorType) and isinstance(t.element_type, IndexType):
        return VectorType(i64, t.get_shape())
    return t


def element_type(t: Attribute) -> Attribute:
    """The scalar type of a scalar or vector type."""
    return t.element_type if isinstance(t, VectorType) else t


def byte_size(t: Attribute) -> int:
    """Storage size in bytes of a scalar or vector element of a memref."""
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if isinstance(t, Float16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, VectorType):
        n = 1
        for d in t.get_shape():
            n *= d
        return n * byte_size(t.element_type)
    raise UserError(f"cannot lower memrefs of element type {t} to the llvm dialect")


def scalar_align(t: Attribute) -> int:
    """Alignment promised on loads and stores: the scalar's size, never the vector's.

    Buffers from numpy are only 16-byte aligned, and vector loads without an explicit small
    alignment are emitted as `vmovaps`, which faults on them (docs/reference/llvmlite-ceilings.md, pitfall 6).
    """
    return byte_size(element_type(t))


def intrinsic_suffix(t: Attribute) -> str:
    """LLVM's overload suffix for a type: f32, v8f32, i64, v8i1."""
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{intrinsic_suffix(t.element_type)}"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, llvm.LLVMPointerType):
        return "p0"
    raise UserError(f"no LLVM intrinsic overload for type {t}")


def same_shape(t: Attribute, elem: Attribute) -> Attribute:
    """`elem`, or a vector of `elem` with the shape of `t` when `t` is a vector."""
    if isinstance(t, VectorType):
        return VectorType(elem, t.get_shape())
    return elem


def int_type_like(t: Attribute) -> Attribute:
    """The integer type with the same bit width (and shape) as float type `t`."""
    e = element_type(t)
    width = {Float16Type: 16, Float32Type: 32, Float64Type: 64}[type(e)]
    return same_shape(t, IntegerType(width))


def to_llvm_fastmath(flags: Attribute | None) -> FastMathAttr:
    """arith/math fastmath flags as llvm fastmath flags (same names)."""
    if flags is None:
        return FastMathAttr(None)
    names = tuple(getattr(flags, "data", ()))
    return FastMathAttr(names if names else None)


def _new(
    cls: type[Operation],
    operands: Sequence[SSAValue],
    results: Sequence[Attribute],
    properties: dict[str, Attribute],
) -> Operation:
    """An op of class `cls` with exactly these operands, result types and properties, built
    with `Operation.create`: the builder's arguments are right by construction, and IRDL's
    keyword constructors re-check and convert every argument (about six times slower; most of
    a kernel's lowering time went to them)."""
    return cls.create(operands=operands, result_types=results, properties=properties)


@cache
def _int_attr(value: int, t: IntegerType) -> IntegerAttr:
    """Attributes are immutable: one instance per integer constant and type."""
    return IntegerAttr(value, t)


_NO_FASTMATH = FastMathAttr(None)
_GEP_ONE_INDEX = DenseArrayBase.from_list(i32, [llvm.GEP_USE_SSA_VAL])
_UNIT = UnitAttr()


@dataclass
class ConversionState:
    """What one conversion walk shares between the ops it lowers."""

    lowered: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """The llvm value standing for each value whose op the walk already lowered."""
    constants: dict[tuple[Block, Attribute, object], SSAValue] = field(default_factory=dict)
    """Scalar constants made so far, one per block, type and value (at the block's start, in
    the order they were made)."""
    last_constant: dict[Block, Operation] = field(default_factory=dict)
    sums: dict[tuple[Block, tuple[tuple[SSAValue, int], ...]], SSAValue] = field(
        default_factory=dict
    )
    """sum(x * stride) address parts made so far in a block, by terms: the accesses of an
    unrolled tile differ only in constant offsets, so they share one."""


class LLVMBuilder:
    """Collects new llvm-dialect ops in order; patterns then insert or replace with `ops`.

    Inside a conversion walk (`state` given, `block` the block of the op being lowered) scalar
    constants and address sums are made once per block and reused."""

    def __init__(self, state: ConversionState | None = None, block: Block | None = None):
        self.ops: list[Operation] = []
        self.state = state if state is not None else ConversionState()
        self.block = block

    def add_op(self, op: Operation) -> Operation:
        self.ops.append(op)
        return op

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    # ---- crossing between converted and unconverted values -------------------------------
    def to_llvm(self, value: SSAValue) -> SSAValue:
        """`value` with its llvm-dialect type, looking through a cast that made it."""
        found = self.state.lowered.get(value)
        if found is not None:
            return found
        target = convert_type(value.type)
        if target == value.type:
            return value
        owner = value.owner
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == 1
            and owner.inputs[0].type == target
        ):
            return owner.inputs[0]
        return self.emit(UnrealizedConversionCastOp.get([value], [target]))

    # ---- constants ------------------------------------------------------------------------
    def const(self, value: int | float, t: Attribute) -> SSAValue:
        """A scalar constant, or a splat when `t` is a vector type."""
        e = element_type(t)
        if (
            isinstance(e, IntegerType)
            and e.signedness.data == Signedness.UNSIGNED
            and int(value) < 0
        ):
            value = int(value) % (1 << e.width.data)  # LLVM's integers are signless: all ones
        if isinstance(t, VectorType):
            if isinstance(e, IntegerType) and e.width.data == 1:
                value = -1 if value else 0
            attr = DenseIntOrFPElementsAttr.from_list(t, [value])
            return self.emit(llvm.ConstantOp(attr, t))
        if isinstance(e, AnyFloat):
            return self.emit(llvm.ConstantOp(FloatAttr(float(value), e), t))
        assert isinstance(e, IntegerType)
        v = (-1 if value else 0) if e.width.data == 1 else int(value)
        key = (self.block, t, v)
        found = self.state.constants.get(key) if self.block is not None else None
        if found is not None:
            return found
        op = _new(llvm.ConstantOp, (), (t,), {"value": _int_attr(v, e)})
        if self.block is None:
            return self.emit(op)
        last = self.state.last_constant.get(self.block)
        if last is not None:
            self.block.insert_op_after(op, last)
        elif self.block.first_op is not None:
            self.block.insert_op_before(op, self.block.first_op)
        else:
            self.block.add_op(op)
        self.state.last_constant[self.block] = op
        self.state.constants[key] = op.results[0]
        return op.results[0]

    def i64(self, value: int) -> SSAValue:
        return self.const(value, i64)

    def i32(self, value: int) -> SSAValue:
        return self.const(value, i32)

    # ---- integer arithmetic ---------------------------------------------------------------
    def add(self, a: SSAValue, b: SSAValue, nsw: bool = False) -> SSAValue:
        return self.emit(
            _new(llvm.AddOp, (a, b), (a.type,), {"overflowFlags": _overflow_flags(nsw)})
        )

    def sub(self, a: SSAValue, b: SSAValue, nsw: bool = False) -> SSAValue:
        return self.emit(
            _new(llvm.SubOp, (a, b), (a.type,), {"overflowFlags": _overflow_flags(nsw)})
        )

    def mul(self, a: SSAValue, b: SSAValue, nsw: bool = False) -> SSAValue:
        return self.emit(
            _new(llvm.MulOp, (a, b), (a.type,), {"overflowFlags": _overflow_flags(nsw)})
        )

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.AndOp(a, b))

    def or_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.OrOp(a, b))

    def xor(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.XOrOp(a, b))

    def shl(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.ShlOp(a, b))

    def ashr(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.AShrOp(a, b))

    def lshr(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.LShrOp(a, b))

    def sdiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.SDivOp(a, b))

    def srem(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.SRemOp(a, b))

    def udiv(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.UDivOp(a, b))

    def urem(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.URemOp(a, b))

    def icmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        t = a.type
        result = VectorType(i1, t.get_shape()) if isinstance(t, VectorType) else i1
        predicate = _int_attr(llvm.ICmpPredicateFlag(pred).to_int(), i64)
        return self.emit(_new(llvm.ICmpOp, (a, b), (result,), {"predicate": predicate}))

    def smin(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.select(self.icmp("slt", a, b), a, b)

    def smax(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.select(self.icmp("sgt", a, b), a, b)

    # ---- casts ----------------------------------------------------------------------------
    def bitcast(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.BitcastOp(a, t))

    def sext(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.SExtOp(a, t))

    def zext(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.ZExtOp(a, t))

    def trunc(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.TruncOp(a, t))

    def int_resize(self, a: SSAValue, t: Attribute, signed: bool = True) -> SSAValue:
        """Truncate or extend an integer to type `t`."""
        src = element_type(a.type)
        dst = element_type(t)
        assert isinstance(src, IntegerType) and isinstance(dst, IntegerType)
        if src.width.data > dst.width.data:
            return self.trunc(a, t)
        if src.width.data < dst.width.data:
            return self.sext(a, t) if signed else self.zext(a, t)
        return a

    def sitofp(self, a: SSAValue, t: Attribute) -> SSAValue:
        return self.emit(llvm.SIToFPOp(a, t))

    def uitofp(self, a: SSAValue, t: Attribute) -> SSAValue:
        """Unsigned int -> float without the missing `llvm.uitofp`.

        Narrow ints are zero-extended to i64 and converted signed (exact). For i64 a value with
        the top bit set is halved (keeping the sticky bit so rounding stays correct), converted,
        and doubled.
        """
        src = element_type(a.type)
        assert isinstance(src, IntegerType)
        if src.width.data < 64:
            return self.sitofp(self.zext(a, same_shape(a.type, i64)), t)
        one = self.const(1, a.type)
        half = self.or_(self.lshr(a, one), self.and_(a, one))
        f_half = self.sitofp(half, t)
        big = self.fadd(f_half, f_half)
        small = self.sitofp(a, t)
        neg = self.icmp("slt", a, self.const(0, a.type))
        return self.select(neg, big, small)

    def fptosi(self, a: SSAValue, t: Attribute) -> SSAValue:
        """float -> signed int; saturating (NaN -> 0), where plain fptosi would give poison."""
        name = f"llvm.fptosi.sat.{intrinsic_suffix(t)}.{intrinsic_suffix(a.type)}"
        return self.call_intrinsic(name, [a], t)

    def fptoui(self, a: SSAValue, t: Attribute) -> SSAValue:
        name = f"llvm.fptoui.sat.{intrinsic_suffix(t)}.{intrinsic_suffix(a.type)}"
        return self.call_intrinsic(name, [a], t)

    def fpext(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.FPExtOp(a, t))

    def fptrunc(self, a: SSAValue, t: Attribute) -> SSAValue:
        return a if a.type == t else self.emit(llvm.FPTruncOp(a, t))

    # ---- float arithmetic -----------------------------------------------------------------
    def fadd(self, a: SSAValue, b: SSAValue, fm: FastMathAttr | None = None) -> SSAValue:
        flags = fm if fm is not None else _NO_FASTMATH
        return self.emit(_new(llvm.FAddOp, (a, b), (a.type,), {"fastmathFlags": flags}))

    def fsub(self, a: SSAValue, b: SSAValue, fm: FastMathAttr | None = None) -> SSAValue:
        flags = fm if fm is not None else _NO_FASTMATH
        return self.emit(_new(llvm.FSubOp, (a, b), (a.type,), {"fastmathFlags": flags}))

    def fmul(self, a: SSAValue, b: SSAValue, fm: FastMathAttr | None = None) -> SSAValue:
        flags = fm if fm is not None else _NO_FASTMATH
        return self.emit(_new(llvm.FMulOp, (a, b), (a.type,), {"fastmathFlags": flags}))

    def fdiv(self, a: SSAValue, b: SSAValue, fm: FastMathAttr | None = None) -> SSAValue:
        flags = fm if fm is not None else _NO_FASTMATH
        return self.emit(_new(llvm.FDivOp, (a, b), (a.type,), {"fastmathFlags": flags}))

    def fneg(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.FNegOp(a))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """Exactly rounded a*b+c (math.fma; vector.fma lowers to fmuladd)."""
        return self.emit(llvm.FMAOp(a, b, c))

    def fmuladd(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """a*b+c, fused where the target has FMA and not a libcall where it has not."""
        return self.call_intrinsic(f"llvm.fmuladd.{intrinsic_suffix(a.type)}", [a, b, c], a.type)

    def fabs(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.FAbsOp(a, a.type))

    def minnum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.VectorFMinOp(a, b))

    def maxnum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.VectorFMaxOp(a, b))

    def copysign(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FCopySignOp(a, b))

    def polynomial(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """c0 + c1 x + c2 x^2 + ... by Horner's rule with fmuladd."""
        acc = self.const(coefficients[-1], x.type)
        for c in reversed(coefficients[:-1]):
            acc = self.fmuladd(acc, x, self.const(c, x.type))
        return acc

    def fcmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """Scalar float compare (xDSL's llvm.fcmp is scalar-only)."""
        key = {"false": "_false", "true": "_true"}.get(pred, pred)
        flag = llvm.FCmpPredicateFlag(key)
        if isinstance(a.type, VectorType):
            raise UserError("vector float compares are not expressible in xDSL's llvm dialect")
        return self.emit(llvm.FCmpOp(a, b, IntegerAttr(flag.to_int(), i64)))

    # ---- selection ------------------------------------------------------------------------
    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        """cond ? a : b, lane-wise for vectors.

        xDSL's llvm.select takes only a scalar i1 condition, so vector selects are emitted as
        `(a & m) | (b & ~m)` over the integer bits with `m = sext(cond)`; InstCombine turns that
        back into a `select` (one `vblendvps`).
        """
        if not isinstance(cond.type, VectorType):
            return self.emit(llvm.SelectOp(cond, a, b))
        t = a.type
        e = element_type(t)
        it = int_type_like(t) if isinstance(e, AnyFloat) else t
        mask = self.sext(cond, it)
        ones = self.const(-1, it)
        ai = self.bitcast(a, it)
        bi = self.bitcast(b, it)
        r = self.or_(self.and_(ai, mask), self.and_(bi, self.xor(mask, ones)))
        return self.bitcast(r, t)

    # ---- vectors --------------------------------------------------------------------------
    def splat(self, scalar: SSAValue, t: VectorType) -> SSAValue:
        """Broadcast a scalar to all lanes: insertelement + zero-mask shufflevector."""
        undef = self.emit(llvm.UndefOp(t))
        zero = self.i32(0)
        one_lane = self.emit(llvm.InsertElementOp(undef, scalar, zero))
        n = t.get_shape()[0]
        mask = DenseArrayBase.from_list(i32, [0] * n)
        return self.emit(llvm.ShuffleVectorOp(one_lane, one_lane, mask, t))

    def extract_lane(self, v: SSAValue, lane: int) -> SSAValue:
        """Lane `lane` of a 1-D vector, as a scalar (no `llvm.extractelement` in xDSL)."""
        vt = v.type
        assert isinstance(vt, VectorType)
        one = VectorType(vt.element_type, [1])
        mask = DenseArrayBase.from_list(i32, [lane])
        single = self.emit(llvm.ShuffleVectorOp(v, v, mask, one))
        return self.bitcast(single, vt.element_type)

    def lanes(self, v: SSAValue, start: int, count: int) -> SSAValue:
        """Lanes start .. start + count - 1 of a 1-D vector, as a vector of `count` lanes."""
        vt = v.type
        assert isinstance(vt, VectorType)
        part = VectorType(vt.element_type, [count])
        mask = DenseArrayBase.from_list(i32, list(range(start, start + count)))
        return self.emit(llvm.ShuffleVectorOp(v, v, mask, part))

    def sliced(self, operands: Sequence[SSAValue], lanes: int, fn) -> SSAValue:
        """fn on `lanes`-lane slices of 1-D vectors of a multiple of that many lanes (one
        slice each from every operand, in step), the results joined: an instruction of one
        register's width over a wider vector (the slices are the registers LLVM would split
        it into; the shuffles cost nothing)."""
        n = operands[0].type.get_shape()[0]  # type: ignore[attr-defined]
        if n == lanes:
            return fn(*operands)
        return self.concat(
            [fn(*(self.lanes(v, s, lanes) for v in operands)) for s in range(0, n, lanes)]
        )

    def concat(self, parts: Sequence[SSAValue]) -> SSAValue:
        """One vector of the lanes of `parts` (1-D vectors of one element type and any
        lengths), in order. Pairs are joined round by round, so three 16-lane parts join as
        32 + 16: LLVM's shufflevector takes two operands of one type, and the shorter one is
        first widened (its lanes, then copies of its lane 0 that the join does not select)."""
        parts = list(parts)
        while len(parts) > 1:
            joined = []
            for a, c in zip(parts[::2], parts[1::2], strict=False):
                la, lc = a.type.get_shape()[0], c.type.get_shape()[0]
                width = max(la, lc)
                a, c = self._widened(a, width), self._widened(c, width)
                mask = DenseArrayBase.from_list(i32, [*range(la), *range(width, width + lc)])
                wide = VectorType(a.type.element_type, [la + lc])
                joined.append(self.emit(llvm.ShuffleVectorOp(a, c, mask, wide)))
            if len(parts) % 2:
                joined.append(parts[-1])
            parts = joined
        return parts[0]

    def _widened(self, v: SSAValue, lanes: int) -> SSAValue:
        """`v` (a 1-D vector) as `lanes` lanes: its own, then copies of its lane 0."""
        vt = v.type
        assert isinstance(vt, VectorType)
        n = vt.get_shape()[0]
        if n == lanes:
            return v
        mask = DenseArrayBase.from_list(i32, [*range(n), *[0] * (lanes - n)])
        wide = VectorType(vt.element_type, [lanes])
        return self.emit(llvm.ShuffleVectorOp(v, v, mask, wide))

    def step_vector(self, t: VectorType) -> SSAValue:
        """<0, 1, ..., n-1> of integer vector type `t`."""
        n = t.get_shape()[0]
        attr = DenseIntOrFPElementsAttr.from_list(t, list(range(n)))
        return self.emit(llvm.ConstantOp(attr, t))

    # ---- memory and calls -----------------------------------------------------------------
    def gep(
        self, ptr: SSAValue, index: SSAValue | int, elem: Attribute, inbounds: bool = True
    ) -> SSAValue:
        """&ptr[index] for elements of type `elem` (GEP, never ptrtoint arithmetic); `inbounds`
        false for an address that may lie outside the object (a prefetch's)."""
        elem = convert_type(elem)
        if isinstance(index, int) and index == 0:
            return ptr
        if isinstance(index, int):
            return self.emit(llvm.GEPOp.from_mixed_indices(ptr, [index], elem, inbounds=inbounds))
        props = {
            "rawConstantIndices": _GEP_ONE_INDEX,
            "elem_type": elem,
            "noWrapFlags": _int_attr(0, i32),
        }
        if inbounds:
            props["inbounds"] = _UNIT
        return self.emit(_new(llvm.GEPOp, (ptr, index), (ptr.type,), props))

    def load(self, ptr: SSAValue, t: Attribute, align: int) -> SSAValue:
        props = {"ordering": _int_attr(0, i64), "alignment": _int_attr(align, i64)}
        return self.emit(_new(llvm.LoadOp, (ptr,), (t,), props))

    def store(self, value: SSAValue, ptr: SSAValue, align: int) -> None:
        props = {"ordering": _int_attr(0, i64), "alignment": _int_attr(align, i64)}
        self.add_op(_new(llvm.StoreOp, (value, ptr), (), props))

    def call_intrinsic(
        self,
        name: str,
        args: Sequence[SSAValue],
        result: Attribute | None,
        fastmath: FastMathAttr | None = None,
    ) -> SSAValue:
        op = llvm.CallIntrinsicOp(name, list(args), [] if result is None else [result])
        if fastmath is not None and fastmath.data:
            op.properties["fastmathFlags"] = fastmath
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def call(self, callee: str, args: Sequence[SSAValue], result: Attribute | None) -> SSAValue:
        op = llvm.CallOp(callee, *args, return_type=result)
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]


@cache
def _overflow_flags(nsw: bool) -> IntegerAttr:
    """The `overflowFlags` property of an integer add/sub/mul (nsw or none)."""
    return IntegerAttr(_overflow(nsw).to_int(), 32)


def _overflow(nsw: bool) -> llvm.OverflowAttr:
    if nsw:
        return llvm.OverflowAttr((llvm.OverflowFlag.NO_SIGNED_WRAP,))
    return llvm.OverflowAttr(None)


def ensure_function_declaration(
    module_op: ModuleOp, name: str, inputs: Sequence[Attribute], output: Attribute | None
) -> None:
    """Declare external function `name` in the module unless something of that name exists."""
    for op in module_op.ops:
        sym = getattr(op, "sym_name", None)
        if sym is not None and sym.data == name:
            return
    ftype = llvm.LLVMFunctionType(list(inputs), output)
    module_op.body.block.add_op(llvm.FuncOp(name, ftype, linkage=llvm.LinkageAttr("external")))


def enclosing_module(op: Operation) -> ModuleOp:
    """The outermost builtin.module around `op` (where declarations go)."""
    found: ModuleOp | None = None
    cur: Operation | None = op
    while cur is not None:
        if isinstance(cur, ModuleOp):
            found = cur
        cur = cur.parent_op()
    if found is None:
        raise UserError(f"{op.name} is not inside a builtin.module")
    return found


def constant_int(value: SSAValue) -> int | None:
    """The integer a value is known to hold (arith/llvm constants, through casts), else None."""
    owner = value.owner
    while isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        owner = owner.inputs[0].owner
    attr = getattr(owner, "value", None)
    if isinstance(owner, Operation) and isinstance(attr, IntegerAttr):
        return attr.value.data
    return None
