"""The build cache (nnvm/compiler/build_cache.py): an identical build comes back whole, with the
same graph, params and results; anything build() reads that differs (a param's values, the
options, the tuning log) is another build; a build that dumps its IR is never cached."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.compiler.build_cache import build_key
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.params import params_fingerprint
from nnvm.support.target import parse_target
from nnvm.testing import onnx_models

MODEL = onnx_models.resnet_like()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("NNVM_CACHE_DIR", str(cache))
    return cache


def _run(graph, lib, params, inputs) -> np.ndarray:
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**params)
    m.run(**inputs)
    return m.get_output(0)


def test_an_identical_build_comes_from_the_cache() -> None:
    inputs = onnx_models.random_inputs(MODEL, seed=1)
    module, params = from_onnx(MODEL)
    graph1, lib1, params1 = build(module, params=params)
    graph2, lib2, params2 = build(module, params=params)
    assert not lib1.build_times.build_cached and lib2.build_times.build_cached
    assert lib2.build_times.kernels_compiled == 0 and lib2.build_times.graph_passes == 0.0
    assert graph2.to_json() == graph1.to_json() and lib2.model_hash == lib1.model_hash
    assert list(params2) == list(params1)
    for name, array in params1.items():
        np.testing.assert_array_equal(params2[name], array)
        assert params2[name].dtype == array.dtype
    np.testing.assert_array_equal(
        _run(graph2, lib2, params2, inputs), _run(graph1, lib1, params1, inputs)
    )


def test_other_param_values_are_another_build() -> None:
    inputs = onnx_models.random_inputs(MODEL, seed=2)
    module, params = from_onnx(MODEL)
    _, lib1, _ = build(module, params=params)
    name = max(params, key=lambda k: params[k].size)
    changed = {**params, name: params[name] * np.float32(0.5)}
    graph2, lib2, params2 = build(module, params=changed)
    assert not lib2.build_times.build_cached
    graph3, lib3, params3 = build(module, params=params)
    assert lib3.build_times.build_cached and lib3.model_hash == lib1.model_hash
    assert not np.array_equal(
        _run(graph2, lib2, params2, inputs), _run(graph3, lib3, params3, inputs)
    )


def test_other_options_are_another_build(tmp_path) -> None:
    module, params = from_onnx(MODEL)
    build(module, params=params, opt_level=3)
    _, lib, _ = build(module, params=params, opt_level=2)
    assert not lib.build_times.build_cached
    host = parse_target("llvm")
    log = tmp_path / "tune.jsonl"
    keys = set()
    for text in ["", '{"a": 1}\n']:
        log.write_text(text)
        keys.add(build_key("m", params, "f", [host], {}, log))
    keys.add(build_key("m", params, "f", [host], {}, None))
    keys.add(build_key("m", params, "f", [host], {"opt_level": 1}, None))
    keys.add(build_key("m2", params, "f", [host], {}, None))
    assert len(keys) == 5


def test_a_build_that_dumps_its_ir_is_not_cached(tmp_path, private_cache) -> None:
    module, params = from_onnx(MODEL)
    build(module, params=params, dump_ir=tmp_path / "dump")
    assert not list(private_cache.glob("*.build.kc"))
    _, lib, _ = build(module, params=params, dump_ir=tmp_path / "dump2")
    assert not lib.build_times.build_cached


def test_an_untouched_param_comes_back_as_the_one_given() -> None:
    """A param no pass changed is not stored in the entry: the cached build returns the
    caller's array, as the uncached build does."""
    module, params = from_onnx(MODEL)
    _, _, first = build(module, params=params)
    _, lib, second = build(module, params=params)
    assert lib.build_times.build_cached
    same = [k for k in first if any(first[k] is v for v in params.values())]
    assert all(second[k] is first[k] for k in same)


def test_a_strided_param_is_fingerprinted_by_its_values() -> None:
    """A transposed view is hashed as the buffer it views and how: equal views hash equal,
    views of other elements or of other values do not."""
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = a.copy()
    b[0, 0] = -1
    prints = {
        params_fingerprint({"w": a.T}),
        params_fingerprint({"w": b.T}),
        params_fingerprint({"w": a[:, ::2]}),
        params_fingerprint({"w": a[:, 1::2]}),
    }
    assert len(prints) == 4
    assert params_fingerprint({"w": a.T}) == params_fingerprint({"w": a.copy().T})


def test_build_entries_stay_under_their_limit(private_cache, monkeypatch) -> None:
    """NNVM_BUILD_CACHE_BYTES bounds the build entries (least recently used go first); 0
    turns the build cache off."""
    module, params = from_onnx(MODEL)
    build(module, params=params)
    (entry,) = private_cache.glob("*.build.kc")
    monkeypatch.setenv("NNVM_BUILD_CACHE_BYTES", str(entry.stat().st_size + 100))
    build(module, params=params, opt_level=2)  # a second entry: the first goes
    (kept,) = private_cache.glob("*.build.kc")
    assert kept != entry
    _, lib, _ = build(module, params=params, opt_level=2)
    assert lib.build_times.build_cached
    monkeypatch.setenv("NNVM_BUILD_CACHE_BYTES", "0")
    _, lib, _ = build(module, params=params, opt_level=2)
    assert not lib.build_times.build_cached and lib.build_times.library_cached
