"""Target strings, shared libraries that refuse foreign CPUs, objects, threads, the LLVM IR text."""

from __future__ import annotations

import os

import numpy as np
import pytest
from kernel_builder import KernelBuilder, lower, memref_of
from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i32

import nnvm.targets.cpu.target as target_mod
import nnvm.threads
from nnvm.support.errors import UserError
from nnvm.targets.llvm import (
    build_shared_library,
    compile_jit,
    emit_object,
    host_features,
    load_library,
    parse_target,
    translate_to_llvm_ir,
)

N = 37


def add_kernel():
    kb = KernelBuilder("k", [memref_of([N])] * 3)
    a, b, out = kb.args
    with kb.affine_for(0, N, step=8) as i:
        x = kb.transfer_read(a, [i], 8)
        y = kb.transfer_read(b, [i], 8)
        kb.transfer_write(kb.addf(x, y), out, [i])
    return lower(kb.finish())


def _run_add(mod) -> None:
    a, b = np.arange(N, dtype=np.float32), np.ones(N, np.float32)
    out = np.zeros(N, np.float32)
    mod["k"](a, b, out)
    np.testing.assert_array_equal(out, a + b)


# ---- target strings ---------------------------------------------------------------------------
def test_default_target_is_the_host():
    t = parse_target(None)
    assert t.cpu == target_mod.host_cpu_name()
    assert t.required == {k for k, v in host_features().items() if v}


def test_portable_cpu_level():
    t = parse_target("llvm -mcpu=x86-64-v3 -O2")
    assert t.cpu == "x86-64-v3" and t.opt_level == 2
    assert {"avx2", "fma", "bmi2", "sse4.2"} <= t.required
    assert "avx512f" not in t.required


def test_mattr_adds_and_removes():
    t = parse_target("llvm -mcpu=x86-64-v3 -mattr=+avx512f,-fma")
    assert "avx512f" in t.required and "fma" not in t.required
    assert t.features.endswith("+avx512f,-fma")


@pytest.mark.parametrize("spec", ["cuda", "llvm -mfoo=1"])
def test_bad_target_strings(spec):
    with pytest.raises(UserError):
        parse_target(spec)


# ---- shared libraries and objects ---------------------------------------------------------------
def test_shared_library_records_its_target(tmp_path):
    path = build_shared_library(add_kernel(), tmp_path / "libadd.so")
    lib = load_library(path)
    assert lib.target.required == parse_target(None).required
    _run_add(lib)


def test_portable_library_runs_here(tmp_path):
    if not all(host_features().get(f) for f in ("avx2", "fma", "bmi2", "movbe")):
        pytest.skip("host below x86-64-v3")
    path = build_shared_library(add_kernel(), tmp_path / "libv3.so", "llvm -mcpu=x86-64-v3")
    lib = load_library(path)
    assert lib.target.cpu == "x86-64-v3"
    _run_add(lib)


def test_library_refused_on_host_missing_a_feature(tmp_path, monkeypatch):
    """Built here, then 'moved' to a host without AVX2: refused with a clear message."""
    path = build_shared_library(add_kernel(), tmp_path / "libhost.so")
    fake = dict(host_features())
    fake["avx2"] = False
    monkeypatch.setattr(target_mod, "host_features", lambda: fake)
    with pytest.raises(UserError, match=r"needs CPU features this host lacks: .*avx2"):
        load_library(path)


def test_library_for_a_real_missing_feature_is_refused(tmp_path):
    have = host_features()
    candidates = ["avx512vp2intersect", "amx-tile", "xop", "fma4", "avx512f", "sse4a", "tbm"]
    missing = next((f for f in candidates if not have.get(f, False)), None)
    if missing is None:
        pytest.skip("host has every candidate feature")
    path = build_shared_library(
        add_kernel(), tmp_path / "libforeign.so", f"llvm -mcpu=x86-64 -mattr=+{missing}"
    )
    with pytest.raises(UserError, match=missing):
        load_library(path)
    with pytest.raises(UserError, match=missing):
        compile_jit(add_kernel(), f"llvm -mattr=+{missing}")


def test_object_file_is_relocatable_elf():
    obj = emit_object(add_kernel())
    assert obj[:4] == b"\x7fELF"


def test_llvm_ir_text():
    text = translate_to_llvm_ir(add_kernel())
    assert "define void" in text and "<8 x float>" in text
    assert "llvm.masked.load" in text  # the tail


def test_unlowered_module_is_a_user_error():
    kb = KernelBuilder("k", [memref_of([4])])
    module = kb.finish()
    with pytest.raises(UserError, match="not fully lowered"):
        translate_to_llvm_ir(module)


# ---- threads -------------------------------------------------------------------------------------
def test_num_threads_settings(monkeypatch):
    monkeypatch.setattr(nnvm.threads, "_num_threads", None)
    monkeypatch.setenv("NNVM_NUM_THREADS", "3")
    assert nnvm.threads.get_num_threads() == 3
    nnvm.threads.set_num_threads(2)
    assert nnvm.threads.get_num_threads() == 2
    with pytest.raises(ValueError):
        nnvm.threads.set_num_threads(0)
    monkeypatch.setattr(nnvm.threads, "_num_threads", None)
    monkeypatch.delenv("NNVM_NUM_THREADS")
    assert nnvm.threads.get_num_threads() == len(os.sched_getaffinity(0))


def thread_id_kernel(n: int):
    """out[i] = 16 * (team size) + the team thread that ran iteration i of a parallel loop
    (targets/cpu/nnvm_threads.c)."""
    kb = KernelBuilder("k", [MemRefType(i32, [n])])
    (out,) = kb.args
    for name in ("nnvm_thread_index", "nnvm_team_size"):
        kb.module.body.block.add_op(
            llvm.FuncOp(name, llvm.LLVMFunctionType([], i32), linkage=llvm.LinkageAttr("external"))
        )
    with kb.parallel([(0, n)]) as (i,):
        tid = kb.op(llvm.CallOp("nnvm_thread_index", return_type=i32))
        nth = kb.op(llvm.CallOp("nnvm_team_size", return_type=i32))
        sixteen = kb.op(arith.ConstantOp(IntegerAttr(16, i32)))
        team = kb.op(arith.MuliOp(nth, sixteen))
        kb.op(memref.StoreOp.get(kb.op(arith.AddiOp(team, tid)), out, [i]))
    return lower(kb.finish())


@pytest.mark.parametrize("threads", [1, 2])
def test_parallel_loop_uses_the_requested_threads(threads, tmp_path, monkeypatch):
    monkeypatch.setattr(nnvm.threads, "_num_threads", None)
    nnvm.threads.set_num_threads(threads)
    module = thread_id_kernel(64)
    for mod in (compile_jit(module), load_library(build_shared_library(module, tmp_path / "t.so"))):
        out = np.full(64, -1, np.int32)
        mod["k"](out)
        # every iteration ran once, on a team of the requested size
        np.testing.assert_array_equal(out // 16, np.full(64, threads))
        assert set((out % 16).tolist()) <= set(range(threads))
        # dynamic schedule: contiguous chunks of ceil(64 / (4 * threads)) iterations
        chunks = (out % 16).reshape(-1, 64 // (4 * threads))
        assert (chunks == chunks[:, :1]).all()
