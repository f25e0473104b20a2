"""CPU code generation: llvm dialect -> LLVM IR -> llvmlite (O3, host CPU) -> JIT or .so.

from nnvm.targets.llvm import compile_jit, build_shared_library, load_library
mod = compile_jit(lowered_module)            # or target="llvm -mcpu=x86-64-v3"
mod["kernel"](a, b, out)                     # numpy arrays in, kernel ABI underneath
"""

from nnvm.targets.cpu.target import CPUTarget, host_features, host_target, parse_target
from nnvm.targets.llvm.compile import (
    CompiledModule,
    JITModule,
    Kernel,
    SharedLibrary,
    build_shared_library,
    compile_jit,
    emit_assembly,
    emit_object,
    load_library,
    optimized_ir,
)
from nnvm.targets.llvm.translate import to_llvmlite_module, translate_to_llvm_ir

__all__ = [
    "CPUTarget",
    "CompiledModule",
    "JITModule",
    "Kernel",
    "SharedLibrary",
    "build_shared_library",
    "compile_jit",
    "emit_assembly",
    "emit_object",
    "host_features",
    "host_target",
    "load_library",
    "optimized_ir",
    "parse_target",
    "to_llvmlite_module",
    "translate_to_llvm_ir",
]
