"""Running compiled models: the graph runtime and model libraries."""

from nnvm.runtime import graph_runtime
from nnvm.runtime.module import Module, load_module

__all__ = ["graph_runtime", "Module", "load_module"]
