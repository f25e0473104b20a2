"""The compiled entry point, the C runtime and the graph runtime, independent of kernel
generation: kernels are written by hand in LLVM IR for a small fused and planned graph."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from nnvm.compiler.executor_graph import executor_graph
from nnvm.registry import build_pipeline, make_context
from nnvm.runtime import graph_runtime, load_module
from nnvm.runtime.module import Module
from nnvm.support.diagnostics import parse_module
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, model_hash
from nnvm.support.param_store import attach_params
from nnvm.support.params import save_params
from nnvm.targets.cpu.target import parse_target
from nnvm.targets.llvm.compile import emit_object

GRAPH = """
func.func @main(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %w = nnvm.param "w" : tensor<16xf32>
  %a = nnvm.add %x, %w : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %r = nnvm.relu %a : (tensor<16xf32>) -> tensor<16xf32>
  func.return %r, %x : tensor<16xf32>, tensor<16xf32>
}
"""

# out[i] = f(a[i], b[i]) over 16 floats, with the kernel ABI (pointers only).
KERNEL_IR = """
define void @{name}({params}) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
{body}
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 16
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
"""

ADD_BODY = """  %pa = getelementptr float, ptr %a, i64 %i
  %pb = getelementptr float, ptr %b, i64 %i
  %po = getelementptr float, ptr %out, i64 %i
  %va = load float, ptr %pa
  %vb = load float, ptr %pb
  %s = fadd float %va, %vb
  store float %s, ptr %po"""

RELU_BODY = """  %pa = getelementptr float, ptr %a, i64 %i
  %po = getelementptr float, ptr %out, i64 %i
  %va = load float, ptr %pa
  %s = call float @llvm.maxnum.f32(float %va, float 0.0)
  store float %s, ptr %po"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[ExecutorGraph, Module, dict[str, np.ndarray], Path]:
    workdir = tmp_path_factory.mktemp("entry")
    module = parse_module(make_context(), GRAPH, "graph.mlir")
    params = {"w": np.linspace(-1, 1, 16, dtype=np.float32)}
    attach_params(module, params)
    for p in build_pipeline(["fuse{enable=false}", "plan-memory"]):
        p.apply(make_context(), module)
    graph = executor_graph(module)
    target = parse_target("llvm")
    graph.target = target.description
    graph.model_hash = model_hash("entry-point-test")
    objects = []
    for name in graph.kernels:
        if "add" in name:
            ir = KERNEL_IR.format(name=name, params="ptr %a, ptr %b, ptr %out", body=ADD_BODY)
        else:
            ir = KERNEL_IR.format(name=name, params="ptr %a, ptr %out", body=RELU_BODY)
            ir = "declare float @llvm.maxnum.f32(float, float)\n" + ir
        objects.append(emit_object(ir, target, target_record=False))
    lib_path = target.link(graph, objects, workdir / "model.so", {})
    return graph, Module.load(lib_path), params, workdir


def _expected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.maximum(x + w, 0)


def test_graph_has_two_kernels_an_arena_and_a_copy(built):
    graph, _, _, _ = built
    assert len(graph.kernels) == 2
    assert graph.arena_bytes == 64  # the add's result; relu writes the caller's output
    assert [n.outputs[0].kind for n in graph.nodes] == ["arena", "output"]
    assert len(graph.copies) == 1 and graph.copies[0].source.kind == "input"


def test_entry_point_runs_the_graph(built):
    graph, lib, params, _ = built
    m = graph_runtime.create(graph, lib)
    m.set_input(**params)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    m.run(x=x)
    assert m.get_num_outputs() == 2
    np.testing.assert_allclose(m.get_output(0), _expected(x, params["w"]))
    np.testing.assert_array_equal(m.get_output(1), x)
    out = np.empty(16, np.float32)
    assert m.get_output(0, out) is out
    np.testing.assert_array_equal(m.get_input("x"), x)
    stats = m.benchmark(number=3, repeat=2)
    assert stats["median_ms"] > 0


def test_debug_runtime_times_and_checks_kernels(built):
    graph, lib, params, _ = built
    graph.extra["kernel_ir"] = {}
    m = graph_runtime.create(graph, lib, debug=True)
    m.set_input(**params)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), _expected(x, params["w"]))
    report = m.profile(number=2)
    table = str(report)
    assert all(k in table for k in graph.kernels) and "total" in table
    assert [r.kernel for r in report.rows] == [n.kernel for n in graph.nodes]


def test_wrong_inputs_are_clear_errors(built):
    graph, lib, params, _ = built
    m = graph_runtime.create(graph, lib)
    with pytest.raises(UserError, match="params not set: w"):
        m.run(x=np.zeros(16, np.float32))
    m.set_input(**params)
    with pytest.raises(UserError, match="must have shape \\[16\\]"):
        m.set_input("x", np.zeros(15, np.float32))
    with pytest.raises(UserError, match="must have dtype float32"):
        m.set_input("x", np.zeros(16, np.float64))
    with pytest.raises(UserError, match="neither an input"):
        m.set_input("y", np.zeros(16, np.float32))
    with pytest.raises(UserError, match="must have shape"):
        m.set_input(w=np.zeros(3, np.float32))


def test_mismatched_builds_are_refused(built):
    graph, lib, _, _ = built
    other = ExecutorGraph.from_json(graph.to_json())
    other.model_hash = "0" * 32
    with pytest.raises(UserError, match="different builds"):
        graph_runtime.create(other, lib)


def test_graph_json_round_trips(built):
    graph, lib, params, _ = built
    again = ExecutorGraph.from_json(graph.to_json())
    assert again == graph
    m = graph_runtime.create(graph.to_json(), lib)
    m.set_input(**params)
    m.run(x=np.ones(16, np.float32))
    with pytest.raises(UserError, match="format version"):
        ExecutorGraph.from_json('{"format_version": 99}')
    with pytest.raises(UserError, match="malformed"):
        ExecutorGraph.from_json("{")


def test_export_and_load_library(built, tmp_path):
    graph, lib, params, _ = built
    lib.export_library(tmp_path / "m.so")
    again = load_module(tmp_path / "m.so")
    assert again.model_hash == lib.model_hash
    m = graph_runtime.create(graph, again)
    m.set_input(**params)
    x = np.arange(16, dtype=np.float32) - 8
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), _expected(x, params["w"]))


def test_bad_params_blob_is_refused_by_the_c_runtime(built):
    _, lib, params, _ = built
    blob = save_params({"w": np.zeros(4, np.float32)})
    assert lib.lib.nnvm_create(blob, len(blob)) is None
    assert "another dtype or shape" in lib.last_error()
    blob = b"garbage!" * 4
    assert lib.lib.nnvm_create(blob, len(blob)) is None
    assert "bad magic" in lib.last_error()
    blob = save_params({"v": np.zeros(16, np.float32)})
    assert lib.lib.nnvm_create(blob, len(blob)) is None
    assert 'param "w" is missing' in lib.last_error()


def test_bound_params_are_read_in_place_and_checked(built):
    """nnvm_create_bound: the model reads the caller's params where they are (no copy: a change
    to them shows in the next run), as the blob-created model computes; a wrong count or a
    NULL param is refused with an error naming it."""
    import ctypes

    graph, lib, params, _ = built
    w = params["w"].copy()
    pointers = (ctypes.c_void_p * 1)(w.ctypes.data)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    outputs = [np.empty(16, np.float32), np.empty(16, np.float32)]
    in_ptrs = (ctypes.c_void_p * 1)(x.ctypes.data)
    out_ptrs = (ctypes.c_void_p * 2)(*[o.ctypes.data for o in outputs])
    handle = lib.lib.nnvm_create_bound(pointers, 1)
    assert handle, lib.last_error()
    try:
        assert lib.lib.nnvm_run(handle, in_ptrs, out_ptrs) == 0
        np.testing.assert_allclose(outputs[0], _expected(x, w))
        w += 1.0
        assert lib.lib.nnvm_run(handle, in_ptrs, out_ptrs) == 0
        np.testing.assert_allclose(outputs[0], _expected(x, w))
    finally:
        lib.lib.nnvm_destroy(handle)
    assert lib.lib.nnvm_create_bound(pointers, 2) is None
    assert "the graph has 1 params, got 2" in lib.last_error()
    assert lib.lib.nnvm_create_bound((ctypes.c_void_p * 1)(None), 1) is None
    assert 'param "w" is NULL' in lib.last_error()


def test_a_params_file_is_read_in_place_by_a_view(built):
    """nnvm_create_view: the params file's bytes checked as nnvm_create checks them, then read
    where they are (a change to them shows in the next run); a damaged file is refused."""
    import ctypes

    graph, lib, params, _ = built
    blob = bytearray(save_params(params, graph.model_hash))
    buffer = (ctypes.c_char * len(blob)).from_buffer(blob)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    outputs = [np.empty(16, np.float32), np.empty(16, np.float32)]
    in_ptrs = (ctypes.c_void_p * 1)(x.ctypes.data)
    out_ptrs = (ctypes.c_void_p * 2)(*[o.ctypes.data for o in outputs])
    handle = lib.lib.nnvm_create_view(buffer, len(blob))
    assert handle, lib.last_error()
    try:
        assert lib.lib.nnvm_run(handle, in_ptrs, out_ptrs) == 0
        np.testing.assert_allclose(outputs[0], _expected(x, params["w"]))
        w = params["w"].tobytes()
        at = bytes(blob).index(w)
        blob[at : at + len(w)] = (params["w"] + 1).tobytes()
        assert lib.lib.nnvm_run(handle, in_ptrs, out_ptrs) == 0
        np.testing.assert_allclose(outputs[0], _expected(x, params["w"] + 1))
    finally:
        lib.lib.nnvm_destroy(handle)
    # the weights changed after the file's checksum was taken: refused
    assert lib.lib.nnvm_create_view(buffer, len(blob)) is None
    assert "checksum mismatch" in lib.last_error()
    del buffer


def test_the_runtime_keeps_its_own_params(built):
    """set_input copies a param: changing or dropping the caller's array after it changes
    nothing, on every thread's model."""
    import threading

    graph, lib, params, _ = built
    w = params["w"].copy()
    m = graph_runtime.create(graph, lib)
    m.set_input(w=w)
    w[:] = 100.0
    del w
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    results = {}

    def run(key):
        m.run(x=x)
        results[key] = m.get_output(0)

    run("main")
    worker = threading.Thread(target=run, args=("worker",))
    worker.start()
    worker.join()
    for got in results.values():
        np.testing.assert_allclose(got, _expected(x, params["w"]))


C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "nnvm_runtime.h"
#ifdef VIEW /* the params file mapped, read in place (nnvm_create_view) */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

int main(int argc, char **argv) {
#ifdef VIEW
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) return 2;
  size_t size = (size_t)st.st_size;
  void *blob = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (blob == MAP_FAILED) return 2;
  nnvm_model *m = nnvm_create_view(blob, size);
#else
  FILE *f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *blob = malloc(size);
  if (fread(blob, 1, size, f) != (size_t)size) return 2;
  fclose(f);
  nnvm_model *m = nnvm_create(blob, size);
#endif
  if (!m) { printf("error: %s\n", nnvm_last_error()); return 1; }
  float x[16], y[16], copy[16];
  for (int i = 0; i < 16; ++i) x[i] = (float)i - 8.0f;
  const void *inputs[] = {x};
  void *outputs[] = {y, copy};
  if (nnvm_run(m, inputs, outputs) != 0) return 3;
  for (int i = 0; i < 16; ++i) printf("%.9g\n", y[i]);
  nnvm_destroy(m);
#ifdef VIEW
  munmap(blob, size);
#else
  free(blob);
#endif
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("load", ["copied", "mapped"])
def test_c_program_runs_the_library_without_python(built, tmp_path, load):
    """A C program loads the params file and runs: read and copied (nnvm_create), or mapped
    and read in place (nnvm_create_view)."""
    graph, lib, params, _ = built
    lib.export_library(tmp_path / "libmodel.so")
    lib.export_header(tmp_path / "nnvm_runtime.h")
    (tmp_path / "model.params").write_bytes(save_params(params))
    (tmp_path / "main.c").write_text(C_PROGRAM)
    subprocess.run(
        [
            "cc",
            "-O2",
            *(["-DVIEW"] if load == "mapped" else []),
            "-o",
            "main",
            "main.c",
            f"-I{tmp_path}",
            "-L.",
            "-lmodel",
            "-Wl,-rpath,$ORIGIN",
        ],
        cwd=tmp_path,
        check=True,
    )
    proc = subprocess.run(
        [str(tmp_path / "main"), "model.params"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    got = np.array([float(v) for v in proc.stdout.split()], dtype=np.float32)
    x = np.arange(16, dtype=np.float32) - 8
    np.testing.assert_allclose(got, _expected(x, params["w"]), rtol=1e-6)


def test_params_of_another_build_are_refused(built):
    _, lib, params, _ = built
    blob = save_params(params, model_hash="f" * 32)
    assert lib.lib.nnvm_create(blob, len(blob)) is None
    assert "belongs to model ffff" in lib.last_error()
    blob = save_params(params, model_hash=lib.model_hash)
    handle = lib.lib.nnvm_create(blob, len(blob))
    assert handle
    lib.lib.nnvm_destroy(handle)
