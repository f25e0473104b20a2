"""Parallel kernel compilation (nnvm/compiler/parallel_compile.py): a cold build compiles its
kernels in worker processes, gives the same library as a serial build, and a worker that dies
costs nothing but time (the build compiles that kernel itself)."""

from __future__ import annotations

import numpy as np
import pytest

import nnvm
import nnvm.compiler.parallel_compile as parallel_compile
from nnvm.compiler import build
from nnvm.frontend import from_onnx
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.testing import onnx_models

MODEL = onnx_models.resnet_like(image=16, width=8, stages=(1, 1))


def _build_and_run():
    module, params = from_onnx(MODEL)
    graph, lib, p = build(module, params=params)
    m = graph_runtime.create(graph, lib, nnvm.cpu(0))
    m.set_input(**p)
    m.run(**onnx_models.random_inputs(MODEL, seed=2))
    return lib.build_times, m.get_output(0)


def test_a_cold_build_compiles_in_workers_and_matches_a_serial_one(monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", "off")
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "1")
    serial, want = _build_and_run()
    assert serial.kernels_compiled_parallel == 0
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "2")
    times, got = _build_and_run()
    assert times.kernels_compiled >= parallel_compile.MIN_KERNELS
    assert times.kernels_compiled_parallel == times.kernels_compiled
    np.testing.assert_array_equal(got, want)


def test_a_dying_worker_leaves_its_kernels_to_the_build(monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", "off")
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "2")
    monkeypatch.setattr(parallel_compile, "WORKER", "faulthandler:_sigsegv")  # every call: SIGSEGV
    times, got = _build_and_run()
    assert times.kernels_compiled_parallel == 0 and times.kernels_compiled > 0
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "1")
    _, want = _build_and_run()
    np.testing.assert_array_equal(got, want)


def test_compile_jobs_must_be_a_number(monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", "off")
    monkeypatch.setenv("NNVM_COMPILE_JOBS", "many")
    with pytest.raises(UserError, match="NNVM_COMPILE_JOBS must be a number"):
        _build_and_run()
