"""Bad input to nnvm.js throws an NNVMError with a clear message, never a wrong result: inputs of
the wrong size or dtype, params of another model (by hash, or by shape when the file has no
hash), corrupt or truncated params, a run before params or inputs, a file that is not a model.
A refused params file leaves the loaded params in place."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from wasm_harness import build_wasm, requires_wasm, run_js

from nnvm.compiler import build, load_param_dict, save_param_dict
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.testing import onnx_models

pytestmark = requires_wasm

SCRIPT = r"""
import { readFileSync } from "node:fs";
import { loadModel, NNVMError } from "./nnvm.js";

const wasm = readFileSync("model.wasm");
const params = new Uint8Array(readFileSync("model.params"));
const x = new Float32Array(new Uint8Array(readFileSync("x.bin")).buffer);
const results = {};

async function attempt(name, fn) {
  try {
    await fn();
    results[name] = { ok: true };
  } catch (err) {
    results[name] = { ok: false, error: err.name, message: err.message, nnvm: err instanceof NNVMError };
  }
}

const model = await loadModel(wasm);
await attempt("run_before_params", () => model.run({ input: x }));
model.loadParams(params);
await attempt("unhashed_own_params", () => model.loadParams(readFileSync("unhashed_own.params")));
await attempt("run_before_inputs", () => model.run());
await attempt("short_input", () => model.setInput("input", new Float32Array(x.length - 1)));
await attempt("long_input", () => model.setInput(0, new Float32Array(x.length + 1)));
await attempt("float64_input", () => model.setInput("input", new Float64Array(x.length)));
await attempt("plain_array_input", () => model.setInput("input", Array.from(x)));
await attempt("unknown_input", () => model.setInput("data", x));
await attempt("input_index", () => model.setInput(3, x));
await attempt("other_model_params", () => model.loadParams(readFileSync("other.params")));
await attempt("unhashed_other_params", () => model.loadParams(readFileSync("unhashed_other.params")));
const flipped = params.slice();
flipped[flipped.length >> 1] ^= 4;
await attempt("corrupt_params", () => model.loadParams(flipped));
await attempt("truncated_params", () => model.loadParams(params.slice(0, 100)));
await attempt("not_params", () => model.loadParams(wasm));
await attempt("params_type", () => model.loadParams("model.params"));
await attempt("not_a_model", () => loadModel(params));
const [y] = model.run({ input: x });
results.output = Array.from(y);
results.spec = { inputs: model.inputs.map(({ name, dtype, shape }) => ({ name, dtype, shape })),
                 modelHash: model.modelHash };
console.log(JSON.stringify(results));
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory) -> tuple[dict, np.ndarray, str]:
    folder: Path = tmp_path_factory.mktemp("js-errors")
    module, params = from_onnx(onnx_models.mlp(seed=0))
    built = build_wasm(module, params, folder)
    other_module, other_params = from_onnx(onnx_models.mlp(sizes=(64, 16, 10), seed=1))
    graph, _, other_built = build(other_module, target="wasm", params=other_params)
    (folder / "other.params").write_bytes(save_param_dict(other_built, graph.model_hash))
    (folder / "unhashed_other.params").write_bytes(save_param_dict(other_built))
    own = build_wasm(*from_onnx(onnx_models.mlp(seed=0)), folder / "own")
    (folder / "unhashed_own.params").write_bytes(
        save_param_dict(load_param_dict(own.params.read_bytes()))
    )
    x = onnx_models.random_inputs(onnx_models.mlp(), seed=2)["input"]
    x.astype(np.float32).tofile(folder / "x.bin")
    proc = run_js(SCRIPT, folder)
    assert proc.returncode == 0, proc.stderr
    module, params = from_onnx(onnx_models.mlp(seed=0))
    g, lib, p = build(module, target="llvm", params=params)
    m = graph_runtime.create(g, lib)
    m.set_input(**p)
    m.run(input=x)
    return json.loads(proc.stdout), m.get_output(0), built.graph.model_hash


ERRORS = {
    "run_before_params": "load the params first",
    "run_before_inputs": 'input "input" not set',
    "short_input": 'input "input" (float32[1, 64]) takes 64 elements, got 63',
    "long_input": "takes 64 elements, got 65",
    "float64_input": "takes a Float32Array, got Float64Array",
    "plain_array_input": "takes a Float32Array, got Array",
    "unknown_input": 'no input named "data"',
    "input_index": "no input #3: the model has 1",
    "other_model_params": "these params belong to model",
    "unhashed_other_params": "the model expects float32",
    "corrupt_params": "checksum mismatch",
    "truncated_params": "params:",
    "not_params": "bad magic",
    "params_type": "must be an ArrayBuffer or a typed array",
    "not_a_model": "not a loadable nnvm wasm module",
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_bad_input_throws(case: str, outcome) -> None:
    results, _, _ = outcome
    got = results[case]
    assert not got["ok"], f"{case}: no error"
    assert got["nnvm"] and got["error"] == "NNVMError", got
    assert ERRORS[case] in got["message"], got["message"]


def test_params_tied_to_no_build_load_when_they_fit(outcome) -> None:
    results, _, _ = outcome
    assert results["unhashed_own_params"] == {"ok": True}


def test_other_models_hash_is_named(outcome) -> None:
    results, _, model_hash = outcome
    assert f"this module is model {model_hash}" in results["other_model_params"]["message"]


def test_refused_params_leave_the_loaded_ones(outcome) -> None:
    """After every refusal above, a run gives the CPU target's result."""
    results, want, _ = outcome
    np.testing.assert_allclose(np.array(results["output"]).reshape(want.shape), want, 1e-3, 1e-4)
    assert results["spec"]["inputs"] == [{"name": "input", "dtype": "float32", "shape": [1, 64]}]
