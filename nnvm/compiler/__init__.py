"""Compile graph-level modules for a target: `build(...) -> (graph, lib, params)`."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from nnvm.compiler.build import build
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph
from nnvm.support.params import load_params, load_params_file, save_params


def save_param_dict(params: Mapping[str, np.ndarray], model_hash: str = "") -> bytes:
    """Params as bytes in the params file format (docs/params-format.md), which the C entry
    point `nnvm_create` reads. Pass the build's `graph.model_hash` to tie them to that build:
    a library of another build then refuses them."""
    return save_params(params, model_hash)


def load_param_dict(
    data: bytes | bytearray | memoryview | str | os.PathLike[str],
) -> dict[str, np.ndarray]:
    """Params from a params file: its path (str or PathLike), or its bytes as
    `save_param_dict` returns them. A missing, unreadable or malformed file is a UserError
    naming it. Set them with `m.set_input(**params)` (or `m.load_params(path)`, which also
    refuses a file tied to another build)."""
    if isinstance(data, str | os.PathLike):
        return load_params_file(data)
    if not isinstance(data, bytes | bytearray | memoryview):
        raise UserError(
            f"load_param_dict takes a params file's path or bytes, not a {type(data).__name__}"
        )
    return load_params(data)


__all__ = ["build", "ExecutorGraph", "save_param_dict", "load_param_dict"]
