"""nnvm: a deep-learning compiler in the spirit of NNVM + TVM, built on xDSL.

The public face: `nnvm.frontend.from_onnx`, `nnvm.compiler.build`,
`nnvm.runtime.graph_runtime.create(graph, lib, nnvm.cpu(0))`, `nnvm.set_num_threads`.
Submodules are imported on first use, so `import nnvm` stays cheap for the command-line tools.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "cpu": ("nnvm.runtime.graph_runtime", "cpu"),
    "opencl": ("nnvm.runtime.graph_runtime", "opencl"),
    "cuda": ("nnvm.runtime.graph_runtime", "cuda"),
    "gpu": ("nnvm.runtime.graph_runtime", "gpu"),
    "set_num_threads": ("nnvm.threads", "set_num_threads"),
    "get_num_threads": ("nnvm.threads", "get_num_threads"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in ("compiler", "frontend", "runtime"):
        return importlib.import_module(f"nnvm.{name}")
    raise AttributeError(f"module 'nnvm' has no attribute {name!r}")


__all__ = ["__version__", "cpu", "opencl", "cuda", "gpu", "set_num_threads", "get_num_threads"]
