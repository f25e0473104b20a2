"""convert-vector-to-llvm: 1-D vector ops to LLVM vector types.

Loads and stores address their first element with a GEP and carry `align` = the scalar's size
(vector alignment is not assumed: numpy buffers are 16-byte aligned). Transfers that may run
past the end of a dimension (`in_bounds = [false]`) and masked loads/stores become
`llvm.masked.load/store` with a lane mask `lane < dim - index` (and'ed with an explicit mask),
which is how tails of vectorized loops stay in bounds. Only 1-D vectors are supported; the
translator to LLVM IR has no multi-dimensional vectors either.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    MemRefType,
    ModuleOp,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr
from xdsl.passes import ModulePass

from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.convert_memref_to_llvm import linear_index, static_strides
from nnvm.lowering.to_llvm.llvm_builder import (
    LLVMBuilder,
    convert_type,
    element_type,
    intrinsic_suffix,
    scalar_align,
    to_llvm_fastmath,
)
from nnvm.support.errors import UserError


def _vector_1d(t, what: str) -> VectorType:
    if not isinstance(t, VectorType) or len(t.get_shape()) != 1:
        raise UserError(f"{what}: only 1-D vectors are supported, got {t}")
    if t.get_num_scalable_dims():
        raise UserError(f"{what}: scalable vectors are not supported")
    return t


def _pointer(b: LLVMBuilder, ref: SSAValue, indices, what: str, inbounds: bool = True) -> SSAValue:
    t = ref.type
    assert isinstance(t, MemRefType)
    strides = static_strides(t, what)
    lin = linear_index(b, indices, strides)
    base = b.to_llvm(ref)
    if isinstance(lin, int) and lin == 0:
        return base
    elem = convert_type(t.element_type)
    return b.emit(llvm.GEPOp.from_mixed_indices(base, [lin], elem, inbounds=inbounds))


def _masked_load(b: LLVMBuilder, ptr, mask, passthru, vt) -> SSAValue:
    """llvm.masked.load in LLVM 22's form (no alignment operand: the pointer is assumed only
    element-aligned, which is all numpy promises); the pointer may be past the end where the
    mask is all false."""
    name = f"llvm.masked.load.{intrinsic_suffix(vt)}.p0"
    return b.call_intrinsic(name, [ptr, mask, passthru], vt)


def _masked_store(b: LLVMBuilder, value, ptr, mask) -> None:
    vt = value.type
    name = f"llvm.masked.store.{intrinsic_suffix(vt)}.p0"
    b.call_intrinsic(name, [value, ptr, mask], None)


def _load(op: vector.LoadOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.result.type, op.name))
    ptr = _pointer(b, op.base, op.indices, op.name)
    return [b.load(ptr, vt, scalar_align(vt))]


def _store(op: vector.StoreOp, b: LLVMBuilder):
    _vector_1d(op.vector.type, op.name)
    ptr = _pointer(b, op.base, op.indices, op.name)
    value = b.to_llvm(op.vector)
    b.store(value, ptr, scalar_align(value.type))
    return []


def _broadcast(op: vector.BroadcastOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.vector.type, op.name))
    src = b.to_llvm(op.source)
    if src.type == vt:
        return [src]
    if isinstance(src.type, VectorType):
        if src.type.get_shape() == (1,):
            src = b.extract_lane(src, 0)
        else:
            raise UserError(f"{op.name}: cannot broadcast {src.type} to {vt}")
    return [b.splat(src, vt)]


def _fma(op: vector.FMAOp, b: LLVMBuilder):
    """llvm.fmuladd, as upstream MLIR lowers vector.fma: one fused instruction where the CPU
    has FMA, a multiply and an add where it has none (an exact llvm.fma would be a software
    fmaf call per lane there). math.fma stays exactly rounded."""
    _vector_1d(op.res.type, op.name)
    return [b.fmuladd(b.to_llvm(op.lhs), b.to_llvm(op.rhs), b.to_llvm(op.acc))]


_INT_REDUCE = {
    "add": ("add", LLVMBuilder.add),
    "mul": ("mul", LLVMBuilder.mul),
    "and": ("and", LLVMBuilder.and_),
    "or": ("or", LLVMBuilder.or_),
    "xor": ("xor", LLVMBuilder.xor),
    "minsi": ("smin", LLVMBuilder.smin),
    "maxsi": ("smax", LLVMBuilder.smax),
    "minui": ("umin", lambda b, x, y: b.select(b.icmp("ult", x, y), x, y)),
    "maxui": ("umax", lambda b, x, y: b.select(b.icmp("ugt", x, y), x, y)),
}
_FLOAT_REDUCE = {
    "maxnumf": ("fmax", LLVMBuilder.maxnum),
    "minnumf": ("fmin", LLVMBuilder.minnum),
    "maximumf": ("fmaximum", None),
    "minimumf": ("fminimum", None),
}


def _reduction(op: vector.ReductionOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.vector.type, op.name))
    v = b.to_llvm(op.vector)
    acc = b.to_llvm(op.acc) if op.acc is not None else None
    kind = op.kind.data.value
    e = element_type(vt)
    fm = to_llvm_fastmath(op.fastmath)
    if isinstance(e, AnyFloat) and kind in ("add", "mul"):
        start = acc if acc is not None else b.const(-0.0 if kind == "add" else 1.0, e)
        ctor = llvm.VectorReduceFAddOp if kind == "add" else llvm.VectorReduceFMulOp
        return [b.emit(ctor(start, v, fm))]
    if isinstance(e, AnyFloat) and kind in _FLOAT_REDUCE:
        name, combine = _FLOAT_REDUCE[kind]
        r = b.call_intrinsic(f"llvm.vector.reduce.{name}.{intrinsic_suffix(vt)}", [v], e, fm)
        if acc is not None:
            if combine is None:
                scalar = "maximum" if kind == "maximumf" else "minimum"
                r = b.call_intrinsic(f"llvm.{scalar}.{intrinsic_suffix(e)}", [r, acc], e)
            else:
                r = combine(b, r, acc)
        return [r]
    if not isinstance(e, AnyFloat) and kind in _INT_REDUCE:
        name, combine = _INT_REDUCE[kind]
        r = b.call_intrinsic(f"llvm.vector.reduce.{name}.{intrinsic_suffix(vt)}", [v], e)
        if acc is not None:
            r = combine(b, r, acc)
        return [r]
    raise UserError(f"{op.name}: reduction kind '{kind}' is not supported on {vt}")


def _static_position(op, what: str) -> int:
    if op.dynamic_position:
        raise UserError(f"{what}: dynamic positions are not supported")
    pos = list(op.static_position.iter_values())
    if len(pos) != 1:
        raise UserError(f"{what}: only 1-D vectors are supported")
    return pos[0]


def _extract(op: vector.ExtractOp, b: LLVMBuilder):
    _vector_1d(op.vector.type, op.name)
    lane = _static_position(op, op.name)
    return [b.extract_lane(b.to_llvm(op.vector), lane)]


def _insert(op: vector.InsertOp, b: LLVMBuilder):
    _vector_1d(op.dest.type, op.name)
    lane = _static_position(op, op.name)
    dest = b.to_llvm(op.dest)
    src = b.to_llvm(op.source)
    return [b.emit(llvm.InsertElementOp(dest, src, b.i32(lane)))]


def _shuffle(op: vector.ShuffleOp, b: LLVMBuilder):
    rt = convert_type(_vector_1d(op.result.type, op.name))
    v1 = b.to_llvm(op.operands[0])
    v2 = b.to_llvm(op.operands[1])
    mask = DenseArrayBase.from_list(i32, list(op.mask.iter_values()))
    return [b.emit(llvm.ShuffleVectorOp(v1, v2, mask, rt))]


def _lanes_below(b: LLVMBuilder, n: int, bound: SSAValue) -> SSAValue:
    """<n x i1>: lane < bound (bound is an i64; negative bounds give an all-false mask)."""
    it = VectorType(i64, [n])
    return b.icmp("slt", b.step_vector(it), b.splat(bound, it))


def _create_mask(op: vector.CreateMaskOp, b: LLVMBuilder):
    vt = _vector_1d(op.mask_vector.type, op.name)
    return [_lanes_below(b, vt.get_shape()[0], b.to_llvm(op.mask_dim_sizes[0]))]


def _masked_load_op(op: vector.MaskedLoadOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.result.type, op.name))
    ptr = _pointer(b, op.base, op.indices, op.name, inbounds=False)
    return [_masked_load(b, ptr, b.to_llvm(op.mask), b.to_llvm(op.pass_thru), vt)]


def _masked_store_op(op: vector.MaskedStoreOp, b: LLVMBuilder):
    _vector_1d(op.value_to_store.type, op.name)
    ptr = _pointer(b, op.base, op.indices, op.name, inbounds=False)
    _masked_store(b, b.to_llvm(op.value_to_store), ptr, b.to_llvm(op.mask))
    return []


def _transfer_dim(op, what: str) -> int | None:
    """The memref dim the vector runs along, or None for a broadcast (`-> (0)`)."""
    results = op.permutation_map.data.results
    if len(results) != 1:
        raise UserError(f"{what}: only 1-D transfers are supported")
    expr = results[0]
    if isinstance(expr, AffineDimExpr):
        return expr.position
    if isinstance(expr, AffineConstantExpr) and expr.value == 0:
        return None
    raise UserError(f"{what}: unsupported permutation map {op.permutation_map}")


def _transfer_mask(b: LLVMBuilder, op, n: int, dim: int) -> SSAValue | None:
    """Lanes inside the memref (unless in_bounds) and'ed with the op's own mask."""
    mask = b.to_llvm(op.mask) if op.mask is not None else None
    in_bounds = op.in_bounds.data[0].value.data if op.in_bounds.data else False
    if not in_bounds:
        t = op.source.type
        size = b.i64(t.get_shape()[dim])
        remaining = b.sub(size, b.to_llvm(op.indices[dim]))
        bounds = _lanes_below(b, n, remaining)
        mask = bounds if mask is None else b.and_(mask, bounds)
    return mask


def _check_transfer(op, vt: VectorType, what: str) -> int | None:
    t = op.source.type
    if not isinstance(t, MemRefType):
        raise UserError(f"{what}: transfers on tensors must be bufferized first")
    if element_type(vt) != convert_type(t.element_type):
        raise UserError(f"{what}: memrefs of vectors are not supported")
    dim = _transfer_dim(op, what)
    if dim is not None and static_strides(t, what)[dim] != 1:
        raise UserError(f"{what}: only transfers along a unit-stride dimension are supported")
    return dim


def _transfer_read(op: vector.TransferReadOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.result.type, op.name))
    assert isinstance(vt, VectorType)
    dim = _check_transfer(op, vt, op.name)
    if dim is None:
        ptr = _pointer(b, op.source, op.indices, op.name)
        scalar = b.load(ptr, element_type(vt), scalar_align(vt))
        return [b.splat(scalar, vt)]
    mask = _transfer_mask(b, op, vt.get_shape()[0], dim)
    if mask is None:
        return [b.load(_pointer(b, op.source, op.indices, op.name), vt, scalar_align(vt))]
    ptr = _pointer(b, op.source, op.indices, op.name, inbounds=False)
    passthru = b.splat(b.to_llvm(op.padding), vt)
    return [_masked_load(b, ptr, mask, passthru, vt)]


def _transfer_write(op: vector.TransferWriteOp, b: LLVMBuilder):
    vt = convert_type(_vector_1d(op.vector.type, op.name))
    assert isinstance(vt, VectorType)
    dim = _check_transfer(op, vt, op.name)
    if dim is None:
        raise UserError(f"{op.name}: broadcasting writes are not supported")
    value = b.to_llvm(op.vector)
    mask = _transfer_mask(b, op, vt.get_shape()[0], dim)
    if mask is None:
        b.store(value, _pointer(b, op.source, op.indices, op.name), scalar_align(vt))
    else:
        _masked_store(b, value, _pointer(b, op.source, op.indices, op.name, False), mask)
    return []


def _bitcast(op: vector.BitcastOp, b: LLVMBuilder):
    rt = convert_type(_vector_1d(op.result.type, op.name))
    return [b.bitcast(b.to_llvm(op.source), rt)]


VECTOR_TABLE: dict[type[Operation], Handler] = {
    vector.LoadOp: _load,
    vector.StoreOp: _store,
    vector.BroadcastOp: _broadcast,
    vector.FMAOp: _fma,
    vector.ReductionOp: _reduction,
    vector.ExtractOp: _extract,
    vector.InsertOp: _insert,
    vector.ShuffleOp: _shuffle,
    vector.CreateMaskOp: _create_mask,
    vector.MaskedLoadOp: _masked_load_op,
    vector.MaskedStoreOp: _masked_store_op,
    vector.TransferReadOp: _transfer_read,
    vector.TransferWriteOp: _transfer_write,
    vector.BitcastOp: _bitcast,
}


@dataclass(frozen=True)
class ConvertVectorToLLVM(ModulePass):
    """Lower 1-D vector ops to LLVM vectors, masked intrinsics for tails."""

    name = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_table(op, VECTOR_TABLE)
