"""The wasm target's kernel-IR changes (targets/wasm/kernel_ir.py) keep the meaning of what
they replace: min/max as compares and a select return the non-NaN operand as llvm.minnum and
maxnum do (checked by running the rewritten IR on the host with LLVM's JIT, no wasm tools
needed), the fma and scratch-allocator renames touch only those calls."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np

from nnvm.targets.cpu.target import host_target
from nnvm.targets.wasm.kernel_ir import wasm_kernel_ir

V4 = "<4 x float>"
ONES = "<float 1.0, float 1.0, float 1.0, float 1.0>"
MIN_MAX_IR = f"""
define void @k(ptr %pa, ptr %pb, ptr %pmin, ptr %pmax, ptr %pone, ptr %smin) {{
  %a = load {V4}, ptr %pa, align 4
  %b = load {V4}, ptr %pb, align 4
  %".1" = call {V4} @"llvm.minnum.v4f32"({V4} %a, {V4} %b)
  store {V4} %".1", ptr %pmin, align 4
  %".2" = call {V4} @"llvm.maxnum.v4f32"({V4} %a, {V4} %b)
  store {V4} %".2", ptr %pmax, align 4
  %".3" = call {V4} @"llvm.maxnum.v4f32"({V4} %a, {V4} {ONES})
  store {V4} %".3", ptr %pone, align 4
  %sa = load float, ptr %pa, align 4
  %sb = load float, ptr %pb, align 4
  %s = call float @llvm.minnum.f32(float %sa, float %sb)
  store float %s, ptr %smin, align 4
  ret void
}}
declare {V4} @"llvm.minnum.v4f32"({V4} %".1", {V4} %".2")
declare {V4} @"llvm.maxnum.v4f32"({V4} %".1", {V4} %".2")
declare float @llvm.minnum.f32(float, float)
"""


def _run(text: str, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    target = host_target()
    module = llvm.parse_assembly(text)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, target.target_machine(jit=True))
    engine.finalize_object()
    outs = [np.zeros(4, np.float32) for _ in range(3)] + [np.zeros(1, np.float32)]
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 6)(engine.get_function_address("k"))
    fn(*(x.ctypes.data for x in (a, b, *outs)))
    return outs


def test_min_max_become_selects_with_the_same_nan_rule() -> None:
    rewritten = wasm_kernel_ir(MIN_MAX_IR)
    calls = [line for line in rewritten.splitlines() if " call " in line]
    assert calls == [], calls
    a = np.array([1.0, np.nan, 2.0, np.nan], np.float32)
    b = np.array([2.0, 3.0, np.nan, np.nan], np.float32)
    got_min, got_max, got_one, got_scalar = _run(rewritten, a, b)
    np.testing.assert_array_equal(got_min, np.fmin(a, b))
    np.testing.assert_array_equal(got_max, np.fmax(a, b))
    np.testing.assert_array_equal(got_one, np.fmax(a, np.float32(1.0)))
    np.testing.assert_array_equal(got_scalar, np.fmin(a[:1], b[:1]))
    want = _run(MIN_MAX_IR, a, b)  # the intrinsics themselves, for the same inputs
    for g, w in zip((got_min, got_max, got_one, got_scalar), want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_fma_and_scratch_renames() -> None:
    text = (
        '  %".5" = call ccc ptr @"aligned_alloc"(i64 64, i64 3200)\n'
        f'  %".6" = call {V4} @"llvm.fma.v4f32"({V4} %a, {V4} %b, {V4} %c)\n'
        'declare ptr @"aligned_alloc"(i64 %".1", i64 %".2")\n'
        f'declare {V4} @"llvm.fma.v4f32"({V4} %".1", {V4} %".2", {V4} %".3")\n'
        f'declare {V4} @"llvm.fmuladd.v4f32"({V4} %".1", {V4} %".2", {V4} %".3")\n'
        "define void @not_aligned_alloc_user() {\n  ret void\n}\n"
    )
    out = wasm_kernel_ir(text)
    assert "aligned_alloc(" not in out.replace("nnvm_wasm_scratch_alloc", "")
    assert '@"nnvm_wasm_scratch_alloc"(i64 64, i64 3200)' in out
    assert "llvm.fma." not in out
    assert out.count('declare <4 x float> @"llvm.fmuladd.v4f32"') == 1  # the duplicate dropped
    assert "define void @not_aligned_alloc_user()" in out
