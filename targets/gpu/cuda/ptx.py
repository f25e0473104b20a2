"""PTX from kernels in the llvm dialect (after convert-gpu-to-llvm): llvmlite's NVPTX backend at O3.

Functions marked `nvvm.kernel` take the `ptx_kernel` convention (`.entry`) and their
`nvvm.maxntid` becomes `.maxntid`; a call to anything but an NVVM/LLVM intrinsic is refused here,
since a PTX module links nothing else. A global with `addr_space = 3` (a block's shared buffer)
is declared in address space 3 and referenced through an `addrspacecast` to the generic `ptr`
the kernel's code uses (the llvm dialect translation drops global address spaces), which
NVPTX's address-space inference turns back into `ld.shared` / `st.shared`."""

from __future__ import annotations

import re
from functools import cache

import llvmlite.binding as binding
import llvmlite.ir as ir
from xdsl.dialects import gpu, llvm
from xdsl.dialects.builtin import ModuleOp

from nnvm.lowering.gpu_to_llvm.convert_gpu_to_llvm import KERNEL_ATTR, MAXNTID_ATTR, SHARED_SPACE
from nnvm.support.errors import UserError
from nnvm.targets.llvm.translate import to_llvmlite_module

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
ARCHES = ("sm_80", "sm_86", "sm_89", "sm_90")
"""Compute capabilities a build may name (sm_80 and up: PTX ISA 8.0 covers them all)."""
PTX_FEATURES = "+ptx80"


@cache
def initialize_nvptx() -> None:
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()


@cache
def target_machine(arch: str) -> binding.TargetMachine:
    if arch not in ARCHES:
        raise UserError(f"unknown CUDA architecture {arch!r} (known: {', '.join(ARCHES)})")
    initialize_nvptx()
    target = binding.Target.from_triple(NVPTX_TRIPLE)
    return target.create_target_machine(cpu=arch, features=PTX_FEATURES, opt=3)


def device_module(module: ModuleOp) -> ModuleOp:
    """The llvm functions and globals of every gpu.module in `module` (copies), as one module."""
    out = ModuleOp([])
    for op in module.walk():
        if isinstance(op, gpu.ModuleOp):
            for inner in op.body.block.ops:
                out.body.block.add_op(inner.clone())
    if out.body.block.first_op is None:
        raise UserError("no gpu.module kernels to emit PTX for (run lower-te-to-gpu first)")
    return out


def device_ir(module: ModuleOp) -> ir.Module:
    """LLVM IR of the kernels: NVPTX triple, kernels as ptx_kernel with their maxntid."""
    kernels = device_module(module)
    for fn in kernels.ops:
        if isinstance(fn, llvm.FuncOp) and not fn.body.blocks:
            name = fn.sym_name.data
            if not name.startswith("llvm."):
                raise UserError(
                    f"a GPU kernel calls the host function '{name}', which PTX cannot link "
                    "(an op without a device lowering)"
                )
    out = to_llvmlite_module(kernels, triple=NVPTX_TRIPLE)
    annotations = None
    for fn in kernels.ops:
        if not isinstance(fn, llvm.FuncOp) or KERNEL_ATTR not in fn.attributes:
            continue
        llfn = out.get_global(fn.sym_name.data)
        llfn.calling_convention = "ptx_kernel"
        sizes = fn.attributes.get(MAXNTID_ATTR)
        if sizes is None:
            continue
        if annotations is None:
            annotations = out.add_named_metadata("nvvm.annotations")
        for axis, n in zip("xyz", sizes.get_values(), strict=True):  # type: ignore[attr-defined]
            entry = [llfn, ir.MetaDataString(out, f"maxntid{axis}"), ir.Constant(ir.IntType(32), n)]
            annotations.add(out.add_metadata(entry))
    return out


def shared_globals(module: ModuleOp) -> list[str]:
    """Names of the addr_space 3 globals (shared buffers) of the module's gpu.modules."""
    return [
        op.sym_name.data
        for op in module.walk()
        if isinstance(op, llvm.GlobalOp) and op.addr_space.value.data == SHARED_SPACE
    ]


def in_shared_space(text: str, names: list[str]) -> str:
    """LLVM IR text with the globals `names` in address space 3 (uninitialized) and every use
    `ptr @g` (llvmlite may print `[N x T]* @g`) an `addrspacecast (ptr addrspace(3) @g to
    ptr)` constant."""
    for name in names:
        ref = rf'@"?{re.escape(name)}"?'
        text, n = re.subn(
            rf"^({ref}) = internal global (.*?) zeroinitializer",
            r"\1 = internal addrspace(3) global \2 undef",
            text,
            flags=re.M,
        )
        if n != 1:
            raise UserError(f"shared buffer {name} is not a global of the kernels' LLVM IR")
        text = re.sub(
            rf"(?:ptr|\[\d+ x [^\]]+\]\*) ({ref})(?=[,\s)])",
            r"ptr addrspacecast (ptr addrspace(3) \1 to ptr)",
            text,
        )
    return text


def device_ir_text(module: ModuleOp) -> str:
    """The kernels' LLVM IR text (device_ir) with shared buffers in address space 3."""
    return in_shared_space(str(device_ir(module)), shared_globals(module))


def emit_ptx(module: ModuleOp, arch: str = "sm_90") -> str:
    """PTX text of every kernel in `module` for `arch`, optimized at O3."""
    tm = target_machine(arch)
    text = device_ir_text(module)
    mod = binding.parse_assembly(text)
    mod.triple = NVPTX_TRIPLE
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = binding.create_pipeline_tuning_options(speed_level=3)
    pb = binding.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


__all__ = ["ARCHES", "NVPTX_TRIPLE", "device_ir", "device_ir_text", "emit_ptx", "target_machine"]
