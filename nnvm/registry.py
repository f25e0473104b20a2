"""What the tools know: the dialects a context loads and the passes a pipeline may name.

Everything is registered lazily (by factory), so `nnvm-opt` starts fast and only imports the
dialects and passes a run actually uses."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from nnvm.support.errors import UserError

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


# -- pipelines -----------------------------------------------------------------------------

_ANCHOR = re.compile(r"^\s*[A-Za-z_][\w$]*\.[\w.$]+\((.*)\)\s*$", re.S)


def strip_anchors(spec: str) -> str:
    """Accept MLIR's nested spelling `builtin.module(func.func(cse),dce)` for our flat pipeline."""
    while (m := _ANCHOR.match(spec)) is not None:
        spec = m.group(1)
    return re.sub(r"[A-Za-z_][\w$]*\.[\w.$]+\(([^(){}]*)\)", r"\1", spec)


def build_pipeline(specs: Sequence[str]) -> list[ModulePass]:
    """Pass instances for the requested pipeline, or UserError for unknown names and options."""
    available = pass_factories()
    passes: list[ModulePass] = []
    for text in specs:
        try:
            arg_specs = list(parse_pipeline(strip_anchors(text)))
        except BaseException as err:  # xDSL raises a BaseException subclass for bad specs
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            raise UserError(f"invalid pass pipeline {text!r}: {one_line(err)}") from None
        for spec in arg_specs:
            if spec.name not in available:
                close = [n for n in available if spec.name in n or n in spec.name]
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise UserError(
                    f"unknown pass '{spec.name}'{hint}; `nnvm-opt --list-passes` lists them"
                )
            cls = available[spec.name]()
            try:
                instance = cls.from_pass_spec(spec)
            except BaseException as err:
                if isinstance(err, KeyboardInterrupt | SystemExit):
                    raise
                raise UserError(f"bad options for pass '{spec.name}': {one_line(err)}") from None
            passes.extend(expand_pipeline(instance))
    return passes


def expand_pipeline(p: ModulePass) -> list[ModulePass]:
    """A pass that stands for a pipeline (it has `inner_passes()`, as nnvm-O3) as the passes it
    runs, recursively; any other pass as itself."""
    inner = getattr(p, "inner_passes", None)
    if inner is None:
        return [p]
    return [q for sub in inner() for q in expand_pipeline(sub)]


def one_line(err: BaseException) -> str:
    text = str(err).strip()
    return " ".join(text.split()) or type(err).__name__
