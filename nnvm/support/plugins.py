"""Lazy factories for passes and dialects: a tool imports only what a run names."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

PassFactory = Callable[[], type[ModulePass]]
DialectFactory = Callable[[], Dialect]


def lazy_pass(module: str, cls: str) -> PassFactory:
    """A factory that imports `module` and returns its pass class `cls` only when asked."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module), cls)

    return load
