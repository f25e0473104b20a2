"""Conversions between levels, one folder per family: to_te (graph -> te), te_to_loops (te ->
scf/memref/vector loop nests), to_llvm (loops -> llvm dialect).

`PASSES` maps each command-line name to a lazy factory, so a tool imports only what it runs."""

from __future__ import annotations

from nnvm.support.plugins import PassFactory, lazy_pass

PASSES: dict[str, PassFactory] = {
    "lower-to-te": lazy_pass(".to_te.lower_to_te", "LowerToTE", __name__),
    "lower-te-to-loops": lazy_pass(".te_to_loops.lower_te_to_loops", "LowerTEToLoops", __name__),
    "lower-te-to-gpu": lazy_pass(".te_to_gpu.lower_te_to_gpu", "LowerTEToGpu", __name__),
    "convert-gpu-to-llvm": lazy_pass(
        ".gpu_to_llvm.convert_gpu_to_llvm", "ConvertGpuToLLVM", __name__
    ),
    "lower-te-to-affine": lazy_pass(".te_to_loops.lower_te_to_loops", "LowerTEToAffine", __name__),
    "convert-affine-to-scf": lazy_pass(
        ".to_llvm.convert_affine_to_scf", "ConvertAffineToScf", __name__
    ),
    "convert-arith-to-llvm": lazy_pass(
        ".to_llvm.convert_arith_to_llvm", "ConvertArithToLLVM", __name__
    ),
    "convert-math-to-llvm": lazy_pass(
        ".to_llvm.convert_math_to_llvm", "ConvertMathToLLVM", __name__
    ),
    "convert-memref-to-llvm": lazy_pass(
        ".to_llvm.convert_memref_to_llvm", "ConvertMemRefToLLVM", __name__
    ),
    "convert-func-to-llvm": lazy_pass(
        ".to_llvm.convert_func_to_llvm", "ConvertFuncToLLVM", __name__
    ),
    "convert-cf-to-llvm": lazy_pass(".to_llvm.convert_cf_to_llvm", "ConvertCfToLLVM", __name__),
    "convert-vector-to-llvm": lazy_pass(
        ".to_llvm.convert_vector_to_llvm", "ConvertVectorToLLVM", __name__
    ),
    "convert-to-llvm": lazy_pass(".to_llvm.convert_to_llvm", "ConvertToLLVM", __name__),
}
