"""Running models on the wasm target in tests: build(target="wasm"), export model.wasm and
model.params, run them under node through nnvm.js (run_node.js), read the outputs back.
`requires_wasm` skips where node, clang, wasm-ld, wasi-libc or compiler-rt is missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nnvm.compiler import build, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError

WASM_DIR = Path(str(resources.files("nnvm.targets.wasm")))
RUN_NODE = WASM_DIR / "run_node.js"
NODE_MIN = (20, 19)
"""node runs nnvm.js (ES module syntax in a .js file) by module detection from 20.19 on."""


def node_version() -> tuple[int, ...] | None:
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    found = re.match(r"v(\d+)\.(\d+)", out.strip())
    return tuple(int(x) for x in found.groups()) if found else None


def missing_tools() -> str | None:
    """Why the wasm tests cannot run here, or None."""
    version = node_version()
    if version is None:
        return "needs node (apt-get install nodejs)"
    if version < NODE_MIN:
        return f"needs node >= {NODE_MIN[0]}.{NODE_MIN[1]} (found {version})"
    from nnvm.targets.wasm.link import builtins_lib, wasi_libs, wasm_clang, wasm_ld

    try:
        wasm_clang()
        wasm_ld()
        wasi_libs()
        builtins_lib()
    except UserError as err:
        return str(err)
    return None


MISSING = missing_tools()
requires_wasm = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@dataclass
class WasmBuild:
    """An exported wasm model: its folder (model.wasm, model.params) and the executor graph."""

    folder: Path
    graph: Any

    @property
    def wasm(self) -> Path:
        return self.folder / "model.wasm"

    @property
    def params(self) -> Path:
        return self.folder / "model.params"


def build_wasm(
    module: Any, params: dict[str, np.ndarray], folder: Path, target: str = "wasm"
) -> WasmBuild:
    graph, lib, built_params = build(module, target=target, params=params)
    folder.mkdir(parents=True, exist_ok=True)
    lib.export_library(folder / "model.wasm")
    (folder / "model.params").write_bytes(save_param_dict(built_params, graph.model_hash))
    return WasmBuild(folder, graph)


def write_inputs(built: WasmBuild, inputs: Sequence[np.ndarray]) -> list[Path]:
    paths = []
    for k, (info, value) in enumerate(zip(built.graph.inputs, inputs, strict=True)):
        path = built.folder / f"in{k}.bin"
        np.ascontiguousarray(value, dtype=info["dtype"]).tofile(path)
        paths.append(path)
    return paths


def run_node(
    built: WasmBuild, inputs: Sequence[np.ndarray], repeat: int = 1
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """The model's outputs under node (inputs in graph input order) and run_node.js's timing
    record (instantiate_ms, run_ms)."""
    ins = write_inputs(built, inputs)
    outs = [built.folder / f"out{k}.bin" for k in range(len(built.graph.outputs))]
    cmd = ["node", str(RUN_NODE), str(built.wasm), str(built.params), *map(str, ins)]
    for p in outs:
        cmd += ["-o", str(p)]
    proc = subprocess.run([*cmd, "--repeat", str(repeat)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"node failed ({proc.returncode}): {proc.stderr.strip()}")
    timing = json.loads(proc.stdout.strip().splitlines()[-1])
    results = [
        np.fromfile(p, dtype=info.dtype).reshape(info.shape)
        for p, info in zip(outs, built.graph.outputs, strict=True)
    ]
    return results, timing


def run_js(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an ES module script (text) in node from `cwd`, where nnvm.js is copied."""
    shutil.copy(WASM_DIR / "nnvm.js", cwd / "nnvm.js")
    path = cwd / "script.mjs"
    path.write_text(script)
    return subprocess.run(["node", str(path)], capture_output=True, text=True, cwd=cwd)


def on_cpu(model: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The ONNX model's outputs built for the CPU target (the reference the wasm runs match)."""
    module, params = from_onnx(model)
    graph, lib, params = build(module, target="llvm", params=params)
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    m.run(**inputs)
    return [m.get_output(k) for k in range(len(graph.outputs))]
