"""convert-to-llvm: loops and ops to the llvm dialect, gathering the conversions plugins register
(Plugin.llvm_conversions, as MLIR dialects register ConvertToLLVM patterns):

    convert-affine-to-scf, [stage 'loops': e.g. convert-parallel-to-threads], convert-scf-to-cf
    (xDSL), convert-math/vector/memref/arith/func/cf-to-llvm, [stage 'ops'],
    reconcile-unrealized-casts (xDSL)

The six op conversions run as one walk over their merged tables (each is also a pass of its
own, for nnvm-opt): one visit per op, and no casts between ops the walk converts.

The result is pure llvm dialect (checked: anything left over is a user error naming the ops),
ready for `nnvm.targets.llvm` or `mlir-translate --mlir-to-llvmir`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, UnrankedTensorType
from xdsl.passes import ModulePass
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.to_llvm.conversion import apply_table
from nnvm.lowering.to_llvm.convert_affine_to_scf import ConvertAffineToScf
from nnvm.lowering.to_llvm.convert_arith_to_llvm import ARITH_TABLE, x86_minmax_table
from nnvm.lowering.to_llvm.convert_cf_to_llvm import CF_TABLE, retype_successor_block_args
from nnvm.lowering.to_llvm.convert_func_to_llvm import FUNC_TABLE, convert_func_signatures
from nnvm.lowering.to_llvm.convert_math_to_llvm import math_table
from nnvm.lowering.to_llvm.convert_memref_to_llvm import MEMREF_TABLE, scratch_table
from nnvm.lowering.to_llvm.convert_vector_to_llvm import VECTOR_TABLE
from nnvm.support.errors import UserError
from nnvm.support.plugins import registry


def registered_conversions(stage: str) -> list[ModulePass]:
    """The plugins' conversions of one stage (nnvm's own CPU target registers its thread pool's)."""
    reg = registry()
    return [
        reg.passes[name][0]()() for name, (st, _) in reg.llvm_conversions.items() if st == stage
    ]


def leftover_ops(module: ModuleOp) -> list[str]:
    """Names of ops that are not in the llvm dialect (casts included), sorted."""
    names = set()
    for op in module.walk():
        if op is not module and not op.name.startswith("llvm."):
            names.add(op.name)
    return sorted(names)


@dataclass(frozen=True)
class ConvertToLLVM(ModulePass):
    """Run every CPU conversion in order; fail with the names of ops nothing could lower."""

    name = "convert-to-llvm"

    approximate_math: bool = True
    """f32 exp/log/tanh/erf as inline polynomials (else LLVM intrinsics and libm)."""
    ldexp: bool = False
    """The target has an ldexp instruction (AVX-512's vscalefps) for exp's scaling."""
    x86_minmax: bool = False
    """maximumf/minimumf against a constant as AVX-512's vmaxps/vminps (one instruction that
    keeps a NaN, where llvm.maximum takes three): ReLU, ReLU6 and Clip epilogues."""
    scratch: str = ""
    """"ALLOC,FREE": the functions kernels get and return heap scratch with (aligned_alloc's
    and free's signatures); empty: aligned_alloc and free."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.scratch and self.scratch.count(",") != 1:
            raise UserError(f"convert-to-llvm: scratch={self.scratch!r} is not 'ALLOC,FREE'")
        check_lowerable_signatures(op)
        for p in [ConvertAffineToScf(), *registered_conversions("loops"), ConvertScfToCf()]:
            p.apply(ctx, op)
        retype_successor_block_args(op)
        table = {
            **math_table(self.approximate_math, self.ldexp),
            **VECTOR_TABLE,
            **MEMREF_TABLE,
            **ARITH_TABLE,
            **FUNC_TABLE,
            **CF_TABLE,
            **(x86_minmax_table() if self.x86_minmax else {}),
            **(scratch_table(*self.scratch.split(",")) if self.scratch else {}),
        }
        apply_table(op, table)
        convert_func_signatures(op)
        for p in [*registered_conversions("ops"), ReconcileUnrealizedCastsPass()]:
            p.apply(ctx, op)
        left = leftover_ops(op)
        if left:
            first = next(o for o in op.walk() if o is not op and not o.name.startswith("llvm."))
            raise LoweringError(
                first,
                "convert-to-llvm could not lower: "
                + ", ".join(left)
                + " (unsupported op, type or layout)",
            )


def check_lowerable_signatures(module: ModuleOp) -> None:
    """Functions take and return scalars, vectors and memrefs by now; a tensor (or any other
    type without an LLVM form) is a located error at its function, not an xDSL failure later."""
    for fn in module.walk():
        if not isinstance(fn, func.FuncOp):
            continue
        kinds = [("argument", i, t) for i, t in enumerate(fn.function_type.inputs)]
        kinds += [("result", i, t) for i, t in enumerate(fn.function_type.outputs)]
        for kind, i, t in kinds:
            if isinstance(t, TensorType | UnrankedTensorType):
                raise LoweringError(
                    fn,
                    f"convert-to-llvm: @{fn.sym_name.data} {kind} #{i} is a tensor ({t}); "
                    "lower to loops first (lower-to-te, apply-default-schedule, lower-te-to-loops)",
                )
