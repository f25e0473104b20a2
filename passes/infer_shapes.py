"""infer-shapes: give every graph value its concrete type, computed by each op's own shape and
dtype inference, and make function signatures agree with what the bodies return.

Declared types may be partially known (`tensor<?x8xf32>`) or unranked (`tensor<*xf32>`); they
are refined. A declared type that contradicts the inferred one is an error at that op."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from nnvm.dialects.nnvm.base import NNVMOp, ShapeError, compatible, is_static
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.pass_statistics import record_statistic


def infer_function(fn: func.FuncOp) -> int:
    """Refine the types in one function; returns how many values got a more precise type."""
    refined = 0
    for op in fn.body.walk():
        if isinstance(op, func.ReturnOp):
            continue
        if not isinstance(op, NNVMOp) or not all(is_static(o.type) for o in op.operands):
            continue
        try:
            inferred = op.infer_result_types([o.type for o in op.operands])  # type: ignore[misc]
        except ShapeError as err:
            raise DiagnosticError(op, str(err)) from None
        if len(inferred) != len(op.results):
            raise DiagnosticError(
                op, f"{op.name} infers {len(inferred)} results but declares {len(op.results)}"
            )
        for result, want in zip(list(op.results), inferred, strict=True):
            if result.type == want:
                continue
            if not compatible(result.type, want):
                raise DiagnosticError(
                    op, f"inferred type {want} disagrees with the declared {result.type}"
                )
            Rewriter.replace_value_with_new_type(result, want)
            refined += 1
    returns = [op for op in fn.body.walk() if isinstance(op, func.ReturnOp)]
    if returns:
        outputs = [v.type for v in returns[0].operands]
        fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), outputs)
    return refined


@dataclass(frozen=True)
class InferShapesPass(ModulePass):
    """Refine every nnvm value's type from its operands and update function result types."""

    name = "infer-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        refined = 0
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                refined += infer_function(fn)
        record_statistic(op, self.name, "refined-values", refined, "values given a precise type")
