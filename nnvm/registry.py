"""What the tools know: the dialects a context loads, the passes a pipeline may name and the
targets a build may use: nnvm's own, xDSL's, and every plugin's (nnvm.support.plugins).

Everything is registered lazily (by factory), so `nnvm-opt` starts fast and only imports the
dialects and passes a run actually uses."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from nnvm.support.errors import UserError
from nnvm.support.plugins import PassFactory, registry


def dialect_factories() -> dict[str, Callable[[], Dialect]]:
    """xDSL's dialects (builtin, func, arith, affine, scf, memref, vector, llvm, ...), ours, and
    the plugins'."""
    return {name: factory for name, (factory, _) in registry().dialects.items()}


def make_context(allow_unregistered: bool = False) -> Context:
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in dialect_factories().items():
        ctx.register_dialect(name, factory)
    return ctx


def pass_factories() -> dict[str, PassFactory]:
    """Every pass a pipeline may name, by its command-line name."""
    return {name: factory for name, (factory, _) in registry().passes.items()}


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
