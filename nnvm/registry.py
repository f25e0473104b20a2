"""What the tools know: the dialects a context loads and the passes a pipeline may name.

Everything is registered lazily (by factory), so `nnvm-opt` starts fast and only imports the
dialects and passes a run actually uses."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.ir import Dialect
from xdsl.passes import ModulePass

PassFactory = Callable[[], type[ModulePass]]


def _nnvm_dialect() -> Dialect:
    from nnvm.dialects.nnvm import NNVM

    return NNVM


def dialect_factories() -> dict[str, Callable[[], Dialect]]:
    """xDSL's dialects (builtin, func, arith, affine, scf, memref, vector, llvm, ...) and ours."""
    factories = dict(get_all_dialects())
    factories["nnvm"] = _nnvm_dialect
    try:
        from nnvm.dialects import DIALECTS as extra  # e.g. te, once it exists
    except ImportError:
        extra = {}
    factories.update(extra)
    return factories


def make_context(allow_unregistered: bool = False) -> Context:
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in dialect_factories().items():
        ctx.register_dialect(name, factory)
    return ctx


def lazy_pass(module: str, cls: str) -> PassFactory:
    """A factory that imports `module` and returns its pass class `cls` only when asked."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load


#: The xDSL passes we reuse as they are.
XDSL_PASSES: dict[str, PassFactory] = {
    "cse": lazy_pass(
        "xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"
    ),
    "dce": lazy_pass("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
    "canonicalize": lazy_pass("xdsl.transforms.canonicalize", "CanonicalizePass"),
    "lower-affine": lazy_pass("xdsl.transforms.lower_affine", "LowerAffinePass"),
    "convert-scf-to-cf": lazy_pass("xdsl.transforms.convert_scf_to_cf", "ConvertScfToCf"),
    "reconcile-unrealized-casts": lazy_pass(
        "xdsl.transforms.reconcile_unrealized_casts", "ReconcileUnrealizedCastsPass"
    ),
}


def pass_factories() -> dict[str, PassFactory]:
    """Every pass a pipeline may name, by its command-line name."""
    from nnvm import lowering, passes

    found = dict(XDSL_PASSES)
    for package in (passes, lowering):
        found.update(getattr(package, "PASSES", {}))
    return found
