"""convert-memref-to-llvm: memrefs as bare pointers, addresses by GEP.

A lowered memref is one `!llvm.ptr` to the first element of the view; its static shape and
strides live in the type and are folded into each access as `getelementptr inbounds elem, ptr,
i64 (sum of index * stride)`, never as ptrtoint/inttoptr arithmetic (which hides the access from
LLVM's alias analysis). Subviews, casts and reshapes only move or keep that pointer, so a view's
static `offset` in its layout is already inside the pointer and ignored at access time.

Heap buffers come from `aligned_alloc(64, size rounded up to 64)` and go back with `free`
(or from the functions of the same signatures a target names: the CPU target's kernel runtime
keeps large scratch buffers for the next call, targets/cpu/nnvm_scratch.c);
`memref.alloca` is a 64-byte aligned `llvm.alloca`; `memref.global` becomes a 64-byte aligned
`llvm.mlir.global` over a flat array.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    TensorType,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from nnvm.dialects.hint import PrefetchOp
from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.llvm_builder import (
    PTR,
    LLVMBuilder,
    byte_size,
    constant_int,
    convert_type,
    enclosing_module,
    ensure_function_declaration,
    scalar_align,
)
from nnvm.support.errors import UserError

BUFFER_ALIGNMENT = 64
"""Alignment of every buffer this lowering allocates (the kernel ABI's 64-byte buffers)."""


def static_strides(t: MemRefType, what: str) -> Sequence[int]:
    """The static strides of a memref type, or a user error naming the op."""
    layout = t.layout
    if not isinstance(layout, NoneAttr | StridedLayoutAttr):
        raise UserError(f"{what}: memref layout {layout} is not supported (use strided<...>)")
    strides = t.get_strides()
    if strides is None or any(s is None for s in strides):
        raise UserError(f"{what}: dynamic strides are not supported ({t})")
    if any(d == DYNAMIC_INDEX for d in t.get_shape()):
        raise UserError(f"{what}: dynamic shapes are not supported ({t})")
    return [int(s) for s in strides]  # type: ignore[arg-type]


def split_offset(value: SSAValue) -> tuple[SSAValue | None, int]:
    """`value` as `x + c` with the constant `c` taken out of arith add/sub chains (the
    constant offsets of an unrolled tile); x is None when the value is a constant."""
    c = 0
    while True:
        k = constant_int(value)
        if k is not None:
            return None, c + k
        owner = value.owner
        if isinstance(owner, arith.AddiOp):
            if (k := constant_int(owner.rhs)) is not None:
                c, value = c + k, owner.lhs
                continue
            if (k := constant_int(owner.lhs)) is not None:
                c, value = c + k, owner.rhs
                continue
        elif isinstance(owner, arith.SubiOp) and (k := constant_int(owner.rhs)) is not None:
            c, value = c - k, owner.lhs
            continue
        return value, c


def linear_index(
    b: LLVMBuilder, indices: Sequence[SSAValue], strides: Sequence[int]
) -> SSAValue | int:
    """sum(index_i * stride_i) over i64 values (nsw: in-bounds offsets cannot overflow), for
    indices not yet converted: their constant offsets fold into one constant, and the rest,
    sum(x_i * stride_i), is made once per block for all accesses that share it."""
    terms: list[tuple[SSAValue, int]] = []
    offset = 0
    for idx, stride in zip(indices, strides, strict=True):
        if stride == 0:
            continue
        x, c = split_offset(idx)
        offset += c * stride
        if x is not None:
            terms.append((b.to_llvm(x), stride))
    total: SSAValue | None = None
    if terms:
        key = (b.block, tuple(terms))
        total = b.state.sums.get(key) if b.block is not None else None
        if total is None:
            for x, stride in terms:
                term = x if stride == 1 else b.mul(x, b.i64(stride), nsw=True)
                total = term if total is None else b.add(total, term, nsw=True)
            if b.block is not None:
                b.state.sums[key] = total
    if offset == 0:
        return 0 if total is None else total
    return b.i64(offset) if total is None else b.add(total, b.i64(offset), nsw=True)


def element_pointer(
    b: LLVMBuilder, ref: SSAValue, indices: Sequence[SSAValue], what: str, inbounds: bool = True
) -> SSAValue:
    """GEP to element `indices` of memref value `ref` (operands not yet converted)."""
    t = ref.type
    assert isinstance(t, MemRefType)
    strides = static_strides(t, what)
    base = b.to_llvm(ref)
    lin = linear_index(b, indices, strides)
    return b.gep(base, lin, t.element_type, inbounds)


def _load(op: memref.LoadOp, b: LLVMBuilder):
    ptr = element_pointer(b, op.memref, op.indices, op.name)
    t = convert_type(op.res.type)
    return [b.load(ptr, t, scalar_align(t))]


def _prefetch(op: PrefetchOp, b: LLVMBuilder):
    """llvm.prefetch(ptr, read, locality, data cache); the address need not be in bounds."""
    ptr = element_pointer(b, op.memref, op.indices, op.name, inbounds=False)
    i32 = IntegerType(32)
    args = [ptr, b.const(0, i32), b.const(op.locality.value.data, i32), b.const(1, i32)]
    b.call_intrinsic("llvm.prefetch.p0", args, None)
    return []


def _store(op: memref.StoreOp, b: LLVMBuilder):
    ptr = element_pointer(b, op.memref, op.indices, op.name)
    value = b.to_llvm(op.value)
    b.store(value, ptr, scalar_align(value.type))
    return []


def _num_elements(t: MemRefType, what: str) -> int:
    if any(d == DYNAMIC_INDEX for d in t.get_shape()):
        raise UserError(f"{what}: dynamic shapes are not supported ({t})")
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _alloc(op: memref.AllocOp, b: LLVMBuilder, allocate: str = "aligned_alloc"):
    t = op.memref.type
    assert isinstance(t, MemRefType)
    size = _num_elements(t, op.name) * byte_size(t.element_type)
    align = max(BUFFER_ALIGNMENT, op.alignment.value.data if op.alignment else 0)
    rounded = max(align, (size + align - 1) // align * align)
    ensure_function_declaration(enclosing_module(op), allocate, [i64, i64], PTR)
    return [b.call(allocate, [b.i64(align), b.i64(rounded)], PTR)]


def _alloca(op: memref.AllocaOp, b: LLVMBuilder):
    t = op.memref.type
    assert isinstance(t, MemRefType)
    n = _num_elements(t, op.name)
    align = max(BUFFER_ALIGNMENT, op.alignment.value.data if op.alignment else 0)
    elem = convert_type(t.element_type)
    return [b.emit(llvm.AllocaOp(b.i64(n), elem, alignment=align))]


def _dealloc(op: memref.DeallocOp, b: LLVMBuilder, release: str = "free"):
    ensure_function_declaration(enclosing_module(op), release, [PTR], None)
    b.call(release, [b.to_llvm(op.memref)], None)
    return []


def _global(op: memref.GlobalOp, b: LLVMBuilder):
    t = op.type
    n = _num_elements(t, op.name)
    elem = convert_type(t.element_type)
    array = llvm.LLVMArrayType(n, elem)
    init = op.initial_value
    flat_type = TensorType(elem, [n])
    if isinstance(init, DenseIntOrFPElementsAttr):
        values = list(init.get_values())
        if elem == i1:
            values = [-1 if v else 0 for v in values]
        value: Attribute = DenseIntOrFPElementsAttr.from_list(flat_type, values)
    else:
        assert isinstance(init, UnitAttr)
        value = DenseIntOrFPElementsAttr.from_list(flat_type, [0])
    private = op.sym_visibility.data == "private"
    align = max(BUFFER_ALIGNMENT, op.alignment.value.data if op.alignment else 0)
    b.add_op(
        llvm.GlobalOp(
            array,
            op.sym_name.data,
            "internal" if private else "external",
            constant=op.constant is not None,
            value=value,
            alignment=align,
        )
    )
    return []


def _get_global(op: memref.GetGlobalOp, b: LLVMBuilder):
    return [b.emit(llvm.AddressOfOp(op.name_.root_reference, PTR))]


def _subview(op: memref.SubviewOp, b: LLVMBuilder):
    """The view starts at sum(offset_i * source_stride_i) elements past the source pointer."""
    src_t = op.source.type
    assert isinstance(src_t, MemRefType)
    strides = static_strides(src_t, op.name)
    dynamic = iter(op.offsets)
    offsets: list[SSAValue | int] = []
    for off in op.static_offsets.iter_values():
        offsets.append(b.to_llvm(next(dynamic)) if off == DYNAMIC_INDEX else off)
    total: SSAValue | None = None
    const_total = 0
    for off, stride in zip(offsets, strides, strict=True):
        if isinstance(off, int):
            const_total += off * stride
            continue
        term = off if stride == 1 else b.mul(off, b.i64(stride), nsw=True)
        total = term if total is None else b.add(total, term, nsw=True)
    if const_total:
        c = b.i64(const_total)
        total = c if total is None else b.add(total, c, nsw=True)
    base = b.to_llvm(op.source)
    return [b.gep(base, 0 if total is None else total, src_t.element_type)]


def _same_pointer(op: Operation, b: LLVMBuilder):
    """Casts and reshapes keep the first element where it is."""
    return [b.to_llvm(op.operands[0])]


def _reinterpret_cast(op: memref.ReinterpretCastOp, b: LLVMBuilder):
    """Offsets are relative to the allocation; the pointer is the source view's start."""
    src_t = op.source.type
    res_t = op.result.type
    assert isinstance(src_t, MemRefType) and isinstance(res_t, MemRefType)
    src_off = src_t.get_offset() if isinstance(src_t.layout, StridedLayoutAttr) else 0
    offsets = list(op.static_offsets.iter_values())
    if src_off is None or any(o == DYNAMIC_INDEX for o in offsets):
        raise UserError(f"{op.name}: dynamic offsets are not supported")
    delta = (offsets[0] if offsets else 0) - src_off
    return [b.gep(b.to_llvm(op.source), b.i64(delta) if delta else 0, src_t.element_type)]


def _copy(op: memref.CopyOp, b: LLVMBuilder):
    src_t = op.source.type
    dst_t = op.destination.type
    assert isinstance(src_t, MemRefType) and isinstance(dst_t, MemRefType)
    for t in (src_t, dst_t):
        if not _is_contiguous(t):
            raise UserError(f"{op.name}: only copies between contiguous memrefs are supported")
    size = _num_elements(src_t, op.name) * byte_size(src_t.element_type)
    b.call_intrinsic(
        "llvm.memcpy.p0.p0.i64",
        [b.to_llvm(op.destination), b.to_llvm(op.source), b.i64(size), b.const(0, i1)],
        None,
    )
    return []


def _is_contiguous(t: MemRefType) -> bool:
    strides = static_strides(t, "memref.copy")
    expected = 1
    for dim, stride in zip(reversed(t.get_shape()), reversed(strides), strict=True):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _dim(op: memref.DimOp, b: LLVMBuilder):
    t = op.source.type
    index = constant_int(op.index)
    if not isinstance(t, MemRefType) or index is None:
        raise UserError(f"{op.name}: only constant dimensions of static memrefs are supported")
    size = t.get_shape()[index]
    if size == DYNAMIC_INDEX:
        raise UserError(f"{op.name}: dynamic shapes are not supported ({t})")
    return [b.i64(size)]


MEMREF_TABLE: dict[type[Operation], Handler] = {
    PrefetchOp: _prefetch,
    memref.LoadOp: _load,
    memref.StoreOp: _store,
    memref.AllocOp: _alloc,
    memref.AllocaOp: _alloca,
    memref.DeallocOp: _dealloc,
    memref.GlobalOp: _global,
    memref.GetGlobalOp: _get_global,
    memref.SubviewOp: _subview,
    memref.CastOp: _same_pointer,
    memref.MemorySpaceCastOp: _same_pointer,
    memref.AssumeAlignmentOp: _same_pointer,
    memref.CollapseShapeOp: _same_pointer,
    memref.ExpandShapeOp: _same_pointer,
    memref.ReinterpretCastOp: _reinterpret_cast,
    memref.CopyOp: _copy,
    memref.DimOp: _dim,
}


def scratch_table(allocate: str, release: str) -> dict[type[Operation], Handler]:
    """memref.alloc / memref.dealloc as calls of `allocate(align, size)` and `release(ptr)`
    (aligned_alloc's and free's signatures) instead of those two."""
    return {
        memref.AllocOp: lambda op, b: _alloc(op, b, allocate),
        memref.DeallocOp: lambda op, b: _dealloc(op, b, release),
    }


@dataclass(frozen=True)
class ConvertMemRefToLLVM(ModulePass):
    """Lower memref ops to GEP-addressed loads and stores on bare pointers."""

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_table(op, MEMREF_TABLE)
