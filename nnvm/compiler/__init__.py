"""Compile graph-level modules for a target: `build(...) -> (graph, lib, params)`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from nnvm.compiler.build import build
from nnvm.support.executor_graph import ExecutorGraph
from nnvm.support.params import load_params, save_params


def save_param_dict(params: Mapping[str, np.ndarray], model_hash: str = "") -> bytes:
    """Params as bytes in the params file format (docs/params-format.md), which the C entry
    point `nnvm_create` reads. Pass the build's `graph.model_hash` to tie them to that build:
    a library of another build then refuses them."""
    return save_params(params, model_hash)


def load_param_dict(data: bytes) -> dict[str, np.ndarray]:
    return load_params(data)


__all__ = ["build", "ExecutorGraph", "save_param_dict", "load_param_dict"]
