"""Conversions between levels: affine/scf/arith/math/memref/func/cf/vector -> llvm (ours).

`PASSES` maps each command-line name to a factory that imports the pass lazily, so `nnvm-opt`
only imports the conversions a pipeline names.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(f"nnvm.lowering.{module}"), cls)

    return load


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "convert-affine-to-scf": _lazy("convert_affine_to_scf", "ConvertAffineToScf"),
    "convert-parallel-to-gomp": _lazy("convert_parallel_to_gomp", "ConvertParallelToGomp"),
    "convert-arith-to-llvm": _lazy("convert_arith_to_llvm", "ConvertArithToLLVM"),
    "convert-math-to-llvm": _lazy("convert_math_to_llvm", "ConvertMathToLLVM"),
    "convert-memref-to-llvm": _lazy("convert_memref_to_llvm", "ConvertMemRefToLLVM"),
    "convert-func-to-llvm": _lazy("convert_func_to_llvm", "ConvertFuncToLLVM"),
    "convert-cf-to-llvm": _lazy("convert_cf_to_llvm", "ConvertCfToLLVM"),
    "convert-vector-to-llvm": _lazy("convert_vector_to_llvm", "ConvertVectorToLLVM"),
    "convert-to-llvm": _lazy("convert_to_llvm", "ConvertToLLVM"),
    "lower-to-te": _lazy("lower_to_te", "LowerToTE"),
    "lower-te-to-affine": _lazy("lower_te_to_affine", "LowerTEToAffine"),
}
