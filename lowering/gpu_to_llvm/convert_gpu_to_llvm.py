"""convert-gpu-to-llvm: the kernels of each `gpu.module` (as lower-te-to-gpu outlines them) become
llvm dialect functions for the NVPTX backend, in place inside their gpu.module.

Each `gpu.func` turns into a `func.func` and goes through the CPU conversions (scf, math with the
f32 polynomials, vector, memref, arith, func, cf), so a kernel takes bare `!llvm.ptr` buffers like
a CPU kernel (NVPTX's lower-args then reads kernel pointer parameters as global memory). GPU
indices become NVVM special-register reads (`llvm.nvvm.read.ptx.sreg.tid.x` ... zero-extended to
index), `gpu.barrier` becomes `llvm.nvvm.barrier0`, and a kernel is marked `nvvm.kernel` with
`nvvm.maxntid` from `gpu.known_block_size` (the PTX emitter turns these into the `ptx_kernel`
convention and `.maxntid`). A block's shared buffer (a `memref.alloca` in memory space 3, as
lower-te-to-gpu makes it) becomes an internal `llvm.mlir.global` with `addr_space = 3` that the
kernel reaches through `llvm.mlir.addressof` (ptx.py gives the global its address space in the
LLVM IR). The host functions are left to the device target's launcher."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, gpu, llvm, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.gpu_to_llvm.device_math import DEVICE_MATH_TABLE
from nnvm.lowering.to_llvm.conversion import Handler, apply_table
from nnvm.lowering.to_llvm.convert_affine_to_scf import ConvertAffineToScf
from nnvm.lowering.to_llvm.convert_arith_to_llvm import ConvertArithToLLVM
from nnvm.lowering.to_llvm.convert_cf_to_llvm import ConvertCfToLLVM
from nnvm.lowering.to_llvm.convert_func_to_llvm import ConvertFuncToLLVM
from nnvm.lowering.to_llvm.convert_math_to_llvm import ConvertMathToLLVM
from nnvm.lowering.to_llvm.convert_memref_to_llvm import ConvertMemRefToLLVM
from nnvm.lowering.to_llvm.convert_to_llvm import leftover_ops
from nnvm.lowering.to_llvm.convert_vector_to_llvm import ConvertVectorToLLVM
from nnvm.lowering.to_llvm.llvm_builder import LLVMBuilder, convert_type

SREG = "llvm.nvvm.read.ptx.sreg"
SHARED_SPACE = 3
"""The memref memory space (and NVPTX address space) of a block's shared buffers."""
KERNEL_ATTR = "nvvm.kernel"
MAXNTID_ATTR = "nvvm.maxntid"


def _sreg(register: str) -> Handler:
    """An index op read from the special register `register`.<dim> (an i32, zero-extended)."""

    def handler(op: Operation, b: LLVMBuilder):
        dim = op.dimension.data.value  # type: ignore[attr-defined]
        value = b.call_intrinsic(f"{SREG}.{register}.{dim}", [], i32)
        return [b.zext(value, i64)]

    return handler


def _barrier(op: gpu.BarrierOp, b: LLVMBuilder):
    b.call_intrinsic("llvm.nvvm.barrier0", [], None)
    return []


def _lane_id(op: gpu.LaneIdOp, b: LLVMBuilder):
    return [b.zext(b.call_intrinsic(f"{SREG}.laneid", [], i32), i64)]


GPU_TABLE: dict[type[Operation], Handler] = {
    gpu.ThreadIdOp: _sreg("tid"),
    gpu.BlockIdOp: _sreg("ctaid"),
    gpu.BlockDimOp: _sreg("ntid"),
    gpu.GridDimOp: _sreg("nctaid"),
    gpu.LaneIdOp: _lane_id,
    gpu.BarrierOp: _barrier,
}


NVPTX_INTRINSICS = (
    "llvm.nvvm.", "llvm.fmuladd.", "llvm.fma.", "llvm.fabs.", "llvm.sqrt.", "llvm.floor.",
    "llvm.ceil.", "llvm.trunc.", "llvm.round.", "llvm.roundeven.", "llvm.rint.", "llvm.minnum.",
    "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.", "llvm.copysign.", "llvm.exp2.f32",
    "llvm.smin.", "llvm.smax.", "llvm.umin.", "llvm.umax.", "llvm.abs.", "llvm.ctlz.",
    "llvm.cttz.", "llvm.ctpop.", "llvm.memcpy.", "llvm.memset.", "llvm.memmove.",
    "llvm.fptosi.sat.", "llvm.fptoui.sat.",
)  # fmt: skip
"""Intrinsics the NVPTX backend lowers itself; any other call would need a library PTX does not
link (and some, llvm.sin.f32 or llvm.pow.f32, abort LLVM instead of failing)."""
NO_DEVICE_OPS = (
    llvm.FSinOp, llvm.FCosOp, llvm.FPowOp, llvm.FLogOp, llvm.FLog2Op, llvm.FExpOp
)  # fmt: skip


def _space(t: MemRefType) -> int | None:
    """A memref type's memory space as an integer (0 when it has none; None: not an integer)."""
    space = t.memory_space
    if isinstance(space, NoneAttr):
        return 0
    if isinstance(space, IntegerAttr):
        return space.value.data
    return None


def lower_shared_buffers(device: ModuleOp) -> None:
    """Each `memref.alloca` in memory space 3 -> an internal addr_space 3 `llvm.mlir.global`
    of its elements (one per kernel and buffer, uninitialized as shared memory must be), read
    through `llvm.mlir.addressof` and cast back to a memref of the default space."""
    taken = {op.sym_name.data for op in device.ops if hasattr(op, "sym_name")}
    for fn in list(device.ops):
        if not isinstance(fn, func.FuncOp):
            continue
        for op in list(fn.walk()):
            if not isinstance(op, memref.AllocaOp):
                continue
            t = op.memref.type
            assert isinstance(t, MemRefType)
            if _space(t) != SHARED_SPACE:
                continue
            base = f"{fn.sym_name.data}.{op.memref.name_hint or 'shared'}"
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}.{k}"
            taken.add(name)
            n = 1
            for d in t.get_shape():
                n *= d
            align = op.alignment.value.data if op.alignment is not None else None
            array = llvm.LLVMArrayType(n, convert_type(t.element_type))
            glob = llvm.GlobalOp(
                array,
                name,
                "internal",
                addr_space=SHARED_SPACE,
                alignment=align,
            )
            glob.location = op.location
            device.body.block.insert_op_before(glob, fn)
            addr = llvm.AddressOfOp(name, llvm.LLVMPointerType())
            # an opaque `ptr` (llvmlite types a global's address by its array type, which a
            # store of one element would reject)
            first = llvm.BitcastOp(addr, llvm.LLVMPointerType())
            plain = MemRefType(t.element_type, t.get_shape())
            cast = UnrealizedConversionCastOp.get([first.result], [plain])
            block = op.parent_block()
            assert block is not None
            block.insert_ops_before([addr, first, cast], op)
            op.memref.replace_all_uses_with(cast.results[0])
            block.erase_op(op)


def check_memory_spaces(device: ModuleOp) -> None:
    """Buffers a kernel allocates are private to its thread (llvm.alloca) or, in memory space 3,
    its block's (lower_shared_buffers); one in any other space would silently become private,
    so it is an error."""
    for op in device.walk():
        if isinstance(op, memref.AllocOp | memref.AllocaOp):
            space = _space(op.memref.type)  # type: ignore[arg-type]
            if space not in (0, SHARED_SPACE):
                raise LoweringError(
                    op,
                    f"convert-gpu-to-llvm: a buffer in memory space "
                    f"{op.memref.type.memory_space} is not supported for CUDA (0: the "  # type: ignore[attr-defined]
                    f"thread's, {SHARED_SPACE}: the block's shared memory)",
                )


def check_device_calls(device: ModuleOp) -> None:
    """A located error for the first call a PTX module could not resolve."""
    defined = {
        op.sym_name.data for op in device.ops if isinstance(op, llvm.FuncOp) and op.body.blocks
    }
    for op in device.walk():
        what = None
        if isinstance(op, llvm.CallIntrinsicOp) and not op.intrin.data.startswith(NVPTX_INTRINSICS):
            what = op.intrin.data
        elif isinstance(op, llvm.CallOp) and op.callee.string_value() not in defined:
            what = op.callee.string_value()
        elif isinstance(op, NO_DEVICE_OPS):
            what = f"{op.name} on {op.results[0].type}"
        if what is not None:
            raise LoweringError(
                op, f"convert-gpu-to-llvm: {what} has no GPU lowering (PTX links no math library)"
            )


def _as_func(kernel: gpu.FuncOp) -> func.FuncOp:
    """The gpu.func's body as a func.func of the same name and signature."""
    body = Region()
    kernel.body.clone_into(body)
    for block in body.blocks:
        last = block.last_op
        if isinstance(last, gpu.ReturnOp):
            ret = func.ReturnOp(*last.operands)
            ret.location = last.location
            block.insert_op_before(ret, last)
            block.erase_op(last)
    fn = func.FuncOp(kernel.sym_name.data, kernel.function_type, body)
    fn.location = kernel.location
    return fn


def _mark_kernel(fn: llvm.FuncOp, kernel: gpu.FuncOp) -> None:
    fn.attributes[KERNEL_ATTR] = UnitAttr()
    size = kernel.known_block_size
    if size is not None:
        fn.attributes[MAXNTID_ATTR] = DenseArrayBase.from_list(i32, list(size.get_values()))


def lower_gpu_module(ctx: Context, module: gpu.ModuleOp) -> None:
    """Convert the kernels of one gpu.module to llvm functions, in place."""
    kernels: dict[str, gpu.FuncOp] = {}
    device = ModuleOp([])
    for op in list(module.body.block.ops):
        if isinstance(op, gpu.FuncOp):
            if op.kernel is not None:
                kernels[op.sym_name.data] = op
            device.body.block.add_op(_as_func(op))
        elif not isinstance(op, llvm.FuncOp | llvm.GlobalOp):
            raise LoweringError(op, f"convert-gpu-to-llvm: unexpected {op.name} in a gpu.module")
        else:
            op.detach()
            device.body.block.add_op(op)
    check_memory_spaces(device)
    lower_shared_buffers(device)
    apply_table(device, GPU_TABLE)
    apply_table(device, DEVICE_MATH_TABLE)
    for p in (
        ConvertAffineToScf(),
        ConvertScfToCf(),
        ConvertMathToLLVM(approximate=True),
        ConvertVectorToLLVM(),
        ConvertMemRefToLLVM(),
        ConvertArithToLLVM(),
        ConvertFuncToLLVM(),
        ConvertCfToLLVM(),
        ReconcileUnrealizedCastsPass(),
    ):
        p.apply(ctx, device)
    cast = "builtin.unrealized_conversion_cast"
    left = [n for n in leftover_ops(device) if n != cast] or leftover_ops(device)
    if left:
        first = next(o for o in device.walk() if o.name in left)
        raise LoweringError(
            first, "convert-gpu-to-llvm could not lower: " + ", ".join(left) + " in a GPU kernel"
        )
    check_device_calls(device)
    for op in list(module.body.block.ops):
        module.body.block.erase_op(op)
    for op in list(device.body.block.ops):
        op.detach()
        if isinstance(op, llvm.FuncOp) and op.sym_name.data in kernels:
            _mark_kernel(op, kernels[op.sym_name.data])
        module.body.block.add_op(op)


@dataclass(frozen=True)
class ConvertGpuToLLVM(ModulePass):
    """Every gpu.module's kernels -> llvm dialect functions with NVVM intrinsics."""

    name = "convert-gpu-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for module in [o for o in op.walk() if isinstance(o, gpu.ModuleOp)]:
            lower_gpu_module(ctx, module)


__all__ = ["KERNEL_ATTR", "MAXNTID_ATTR", "ConvertGpuToLLVM"]
