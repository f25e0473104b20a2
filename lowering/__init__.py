"""Conversions between levels, one folder per family: to_te (graph -> te), te_to_loops (te ->
scf/memref/vector loop nests), to_llvm (loops -> llvm dialect).

`PASSES` maps each command-line name to a lazy factory, so a tool imports only what it runs."""

from __future__ import annotations

from nnvm.support.plugins import PassFactory, lazy_pass


def _here(module: str, cls: str) -> PassFactory:
    return lazy_pass(f"nnvm.lowering.{module}", cls)


PASSES: dict[str, PassFactory] = {
    "lower-to-te": _here("to_te.lower_to_te", "LowerToTE"),
    "lower-te-to-loops": _here("te_to_loops.lower_te_to_loops", "LowerTEToLoops"),
    "lower-te-to-affine": _here("te_to_loops.lower_te_to_loops", "LowerTEToAffine"),
    "convert-affine-to-scf": _here("to_llvm.convert_affine_to_scf", "ConvertAffineToScf"),
    "convert-arith-to-llvm": _here("to_llvm.convert_arith_to_llvm", "ConvertArithToLLVM"),
    "convert-math-to-llvm": _here("to_llvm.convert_math_to_llvm", "ConvertMathToLLVM"),
    "convert-memref-to-llvm": _here("to_llvm.convert_memref_to_llvm", "ConvertMemRefToLLVM"),
    "convert-func-to-llvm": _here("to_llvm.convert_func_to_llvm", "ConvertFuncToLLVM"),
    "convert-cf-to-llvm": _here("to_llvm.convert_cf_to_llvm", "ConvertCfToLLVM"),
    "convert-vector-to-llvm": _here("to_llvm.convert_vector_to_llvm", "ConvertVectorToLLVM"),
    "convert-to-llvm": _here("to_llvm.convert_to_llvm", "ConvertToLLVM"),
}
