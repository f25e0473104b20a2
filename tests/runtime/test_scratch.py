"""The kernels' scratch allocator (targets/cpu/nnvm_scratch.c): large buffers a kernel frees are
kept for its next call, so a model run does not fault its scratch in again page by page."""

from __future__ import annotations

import ctypes
import resource

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.registry import make_context
from nnvm.support.errors import UserError
from nnvm.targets.cpu.link import threads_library
from nnvm.targets.cpu.target import CPUTarget
from nnvm.targets.llvm import build_shared_library, compile_jit, load_library

MB = 1 << 20


@pytest.fixture(scope="module")
def scratch():
    lib = ctypes.CDLL(str(threads_library()))
    lib.nnvm_scratch_alloc.restype = ctypes.c_void_p
    lib.nnvm_scratch_alloc.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.nnvm_scratch_free.argtypes = [ctypes.c_void_p]
    lib.nnvm_scratch_release()
    yield lib
    lib.nnvm_scratch_release()


def test_buffers_are_aligned_and_large_ones_come_back(scratch):
    for align in (64, 128, 4096):
        for size in (1, 1000, 300_000, 3 * MB):
            p = scratch.nnvm_scratch_alloc(align, size)
            assert p and p % align == 0
            ctypes.memset(p, 0xAB, size)  # all of it is the caller's
            scratch.nnvm_scratch_free(p)
    big = scratch.nnvm_scratch_alloc(64, 8 * MB)
    scratch.nnvm_scratch_free(big)
    assert scratch.nnvm_scratch_alloc(64, 6 * MB) == big  # kept: at least the size, < 2x it
    other = scratch.nnvm_scratch_alloc(64, 6 * MB)  # the kept one is taken: a new one
    assert other not in (None, big)
    scratch.nnvm_scratch_free(big)
    small = scratch.nnvm_scratch_alloc(64, 3 * MB)  # 8 MB would waste more than it holds
    assert small != big
    assert scratch.nnvm_scratch_alloc(4096, 8 * MB) != big  # another alignment
    scratch.nnvm_scratch_release()
    assert scratch.nnvm_scratch_alloc(64, -1) is None
    assert scratch.nnvm_scratch_alloc(48, 64) is None  # not a power of two
    scratch.nnvm_scratch_free(None)


FLOATS = 48 * MB // 4
PAGES = 48 * MB // 4096
TOUCH = f"""
func.func @k(%x: memref<4xf32>, %o: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %page = arith.constant 1024 : index
  %n = arith.constant {FLOATS} : index
  %buf = memref.alloc() : memref<{FLOATS}xf32>
  scf.for %i = %c0 to %n step %page {{
    %v = memref.load %x[%c1] : memref<4xf32>
    memref.store %v, %buf[%i] : memref<{FLOATS}xf32>
  }}
  scf.for %i = %c0 to %c4 step %c1 {{
    %v = memref.load %buf[%i] : memref<{FLOATS}xf32>
    memref.store %v, %o[%i] : memref<4xf32>
  }}
  memref.dealloc %buf : memref<{FLOATS}xf32>
  return
}}
"""


def faults_per_call(kernel, calls: int = 3) -> float:
    x = np.arange(4, dtype=np.float32)
    o = np.zeros(4, np.float32)
    kernel(x, o)  # the first call faults its scratch in
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        kernel(x, o)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    assert o[0] == 1.0  # what the first loop stored
    return (after - before) / calls


def test_a_kernel_scratch_buffer_is_not_faulted_in_again(tmp_path):
    """48 MB of scratch (above glibc's largest mmap threshold, 32 MB: malloc maps it afresh
    for every call and unmaps it on free): 12,288 pages. Through the kernel runtime's
    allocator, calls after the first fault almost none of them in, JIT and library alike."""
    module = Parser(make_context(), TOUCH).parse_module()
    ConvertToLLVM(scratch=CPUTarget.scratch_functions).apply(Context(), module)
    text = str(module)
    assert "nnvm_scratch_alloc" in text and "aligned_alloc" not in text
    jit = compile_jit(module.clone())
    lib = load_library(build_shared_library(module, tmp_path / "scratch.so"))
    for kernel in (jit["k"], lib["k"]):
        assert faults_per_call(kernel) < PAGES // 10


def test_a_malformed_scratch_option_is_a_user_error():
    module = Parser(make_context(), TOUCH).parse_module()
    with pytest.raises(UserError, match="ALLOC,FREE"):
        ConvertToLLVM(scratch="only_one").apply(Context(), module)
