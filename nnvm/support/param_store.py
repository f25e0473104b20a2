"""The params store that travels beside a module through the pass manager (docs/design.md,
"Params"): weights stay out of the IR, and passes that rewrite weights read and write here."""

from __future__ import annotations

from weakref import WeakKeyDictionary

import numpy as np
from xdsl.dialects.builtin import ModuleOp

_STORES: WeakKeyDictionary[ModuleOp, dict[str, np.ndarray]] = WeakKeyDictionary()


def params_of(module: ModuleOp) -> dict[str, np.ndarray]:
    """The (mutable) params store of a module; an empty one if none was attached."""
    store = _STORES.get(module)
    if store is None:
        store = _STORES[module] = {}
    return store


def attach_params(module: ModuleOp, params: dict[str, np.ndarray]) -> ModuleOp:
    """Make `params` the store of `module` (the dict itself, not a copy) and return the module."""
    _STORES[module] = params
    return module
