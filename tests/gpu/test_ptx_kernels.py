"""te kernels with explicit te.bind schedules (elementwise with tails, reductions, matmul,
conv2d, softmax) through lower-te-to-gpu and convert-gpu-to-llvm: the PTX has one .entry per
kernel with its .maxntid and global loads, ptxas accepts it for sm_90 and sm_80 (skipped where no
ptxas is installed), and the same kernels run under `cuda -emulate` match numpy."""

from __future__ import annotations

import numpy as np
import pytest

from nnvm.lowering.gpu_to_llvm.convert_gpu_to_llvm import ConvertGpuToLLVM
from nnvm.lowering.te_to_gpu.lower_te_to_gpu import LowerTEToGpu
from nnvm.registry import make_context
from nnvm.support.diagnostics import parse_module
from nnvm.targets.gpu.cuda.host_emulator import load_emulated, run_plan
from nnvm.targets.gpu.cuda.ptx import emit_ptx
from nnvm.targets.gpu.cuda.ptxas import find_ptxas, run_ptxas
from nnvm.targets.gpu.cuda.target import CudaTarget

KERNELS: dict[str, str] = {
    # 1000 = 3 * 256 + 232: the last block is masked
    "exp_tail": """
func.func @exp_tail(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = te.compute "y" [i] = exp(%x[i]) : (tensor<1000xf32>) -> tensor<1000xf32>
  te.schedule {
    te.split "y" i by 256 -> (bx, tx)
    te.bind "y" bx to "blockIdx.x"
    te.bind "y" tx to "threadIdx.x"
  }
  func.return %y : tensor<1000xf32>
}""",
    # 2-D elementwise, both axes split with tails (37 = 2 * 16 + 5, 19 = 2 * 8 + 3)
    "tanh_add_2d": """
func.func @tanh_add_2d(%a: tensor<37x19xf32>, %b: tensor<37x19xf32>) -> tensor<37x19xf32> {
  %y = te.compute "y" [i, j] = tanh(%a[i, j]) + %b[i, j] * 0.5 : (tensor<37x19xf32>, tensor<37x19xf32>) -> tensor<37x19xf32>
  te.schedule {
    te.split "y" i by 16 -> (bi, ti)
    te.split "y" j by 8 -> (bj, tj)
    te.reorder "y" (bi, bj, ti, tj)
    te.bind "y" bi to "blockIdx.y"
    te.bind "y" bj to "blockIdx.x"
    te.bind "y" ti to "threadIdx.y"
    te.bind "y" tj to "threadIdx.x"
  }
  func.return %y : tensor<37x19xf32>
}""",
    # a row reduction: one thread per row, the sum a loop
    "row_sum": """
func.func @row_sum(%x: tensor<300x77xf32>) -> tensor<300xf32> {
  %y = te.compute "y" [i] sum [k : 77] = %x[i, k] : (tensor<300x77xf32>) -> tensor<300xf32>
  te.schedule {
    te.split "y" i by 128 -> (b, t)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
  }
  func.return %y : tensor<300xf32>
}""",
    "row_max": """
func.func @row_max(%x: tensor<64x33xf32>) -> tensor<64xf32> {
  %y = te.compute "y" [i] max [k : 33] = %x[i, k] : (tensor<64x33xf32>) -> tensor<64xf32>
  te.schedule {
    te.bind "y" i to "threadIdx.x"
  }
  func.return %y : tensor<64xf32>
}""",
    "matmul": """
func.func @matmul(%A: tensor<50x40xf32>, %B: tensor<40x70xf32>) -> tensor<50x70xf32> {
  %C = te.compute "C" [i, j] sum [k : 40] = %A[i, k] * %B[k, j] : (tensor<50x40xf32>, tensor<40x70xf32>) -> tensor<50x70xf32>
  te.schedule {
    te.split "C" i by 8 -> (bi, ti)
    te.split "C" j by 32 -> (bj, tj)
    te.reorder "C" (bi, bj, ti, tj)
    te.bind "C" bi to "blockIdx.y"
    te.bind "C" bj to "blockIdx.x"
    te.bind "C" ti to "threadIdx.y"
    te.bind "C" tj to "threadIdx.x"
  }
  func.return %C : tensor<50x70xf32>
}""",
    # direct conv2d over a pre-padded input: (oc, oh) on blocks, ow on threads
    "conv2d": """
func.func @conv2d(%x: tensor<1x3x12x12xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x10x10xf32> {
  %y = te.compute "conv" [n, oc, oh, ow] sum [ic : 3, kh : 3, kw : 3] = %x[n, ic, oh + kh, ow + kw] * %w[oc, ic, kh, kw] : (tensor<1x3x12x12xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x10x10xf32>
  te.schedule {
    te.bind "conv" oc to "blockIdx.y"
    te.bind "conv" oh to "blockIdx.x"
    te.bind "conv" ow to "threadIdx.x"
  }
  func.return %y : tensor<1x8x10x10xf32>
}""",
    # four stages, each its own kernel: max, exp, sum, divide
    "softmax": """
func.func @softmax(%s: tensor<6x50xf32>) -> tensor<6x50xf32> {
  %0 = te.compute "m" [i, j] max [r : 50] = %s[i, r] : (tensor<6x50xf32>) -> tensor<6x1xf32>
  %1 = te.compute "e" [i, j] = exp(%s[i, j] - %0[i, 0]) : (tensor<6x50xf32>, tensor<6x1xf32>) -> tensor<6x50xf32>
  %2 = te.compute "z" [i, j] sum [r : 50] = %1[i, r] : (tensor<6x50xf32>) -> tensor<6x1xf32>
  %3 = te.compute "y" [i, j] = %1[i, j] / %2[i, 0] : (tensor<6x50xf32>, tensor<6x1xf32>) -> tensor<6x50xf32>
  te.schedule {
    te.bind "m" i to "threadIdx.x"
    te.bind "e" i to "blockIdx.x"
    te.bind "e" j to "threadIdx.x"
    te.bind "z" i to "threadIdx.x"
    te.bind "y" i to "blockIdx.x"
    te.bind "y" j to "threadIdx.x"
  }
  func.return %3 : tensor<6x50xf32>
}""",
}


def _softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _conv(x, w):
    out = np.zeros((1, 8, 10, 10), np.float32)
    for kh in range(3):
        for kw in range(3):
            patch = x[0, :, kh : kh + 10, kw : kw + 10]  # ic, oh, ow
            out[0] += np.einsum("chw,oc->ohw", patch, w[:, :, kh, kw])
    return out


REFERENCE = {
    "exp_tail": lambda x: np.exp(x),
    "tanh_add_2d": lambda a, b: np.tanh(a) + b * 0.5,
    "row_sum": lambda x: x.sum(axis=1),
    "row_max": lambda x: x.max(axis=1),
    "matmul": lambda a, b: a @ b,
    "conv2d": _conv,
    "softmax": _softmax,
}


def lowered(name: str):
    ctx = make_context()
    module = parse_module(ctx, KERNELS[name], f"{name}.mlir")
    LowerTEToGpu(outline_all=True).apply(ctx, module)
    ConvertGpuToLLVM().apply(ctx, module)
    return module


def _kernel_count(name: str) -> int:
    return KERNELS[name].count("te.compute")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_ptx_has_an_entry_per_kernel(name: str) -> None:
    ptx = emit_ptx(lowered(name), "sm_90")
    assert ".target sm_90" in ptx
    assert ptx.count(".entry ") == _kernel_count(name)
    assert ".maxntid" in ptx
    assert "ld.global" in ptx and "st.global" in ptx  # pointer parameters read as global memory
    assert ".extern .func" not in ptx  # nothing left to link


needs_ptxas = pytest.mark.skipif(
    find_ptxas() is None, reason="no ptxas (PATH or pip install nvidia-cuda-nvcc)"
)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_ptxas_accepts(name: str, arch: str) -> None:
    resources = run_ptxas(emit_ptx(lowered(name), arch), arch)
    assert len(resources) == _kernel_count(name)
    assert all(r.spill_bytes == 0 for r in resources), resources


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_emulated_kernels_match_numpy(name: str) -> None:
    module = lowered(name)
    fn_name = name
    kernel = load_emulated(CudaTarget(emulate=True).emit_kernel(module, fn_name), fn_name)
    rng = np.random.default_rng(7)
    fn = next(f for f in module.ops if getattr(f, "sym_name", None) and f.sym_name.data == name)
    types = [a.type for a in fn.body.block.args]
    n_in = len(types) - 1
    arrays = [rng.standard_normal(t.get_shape()).astype(np.float32) for t in types[:n_in]]
    out = np.full(types[-1].get_shape(), np.nan, np.float32)
    run_plan(kernel, [a.ctypes.data for a in arrays] + [out.ctypes.data])
    np.testing.assert_allclose(out, REFERENCE[name](*arrays), rtol=1e-5, atol=1e-5)


def test_ptxas_is_found_in_the_nvcc_wheel(tmp_path, monkeypatch) -> None:
    """No ptxas on PATH: the one the nvidia-cuda-nvcc wheel installs (nvidia/cu13/bin/ptxas in
    the `nvidia` namespace package) is used; NNVM_PTXAS names one explicitly."""
    import sys

    fake = tmp_path / "nvidia" / "cu13" / "bin" / "ptxas"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("NNVM_PTXAS", raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    find_ptxas.cache_clear()
    try:
        assert find_ptxas() == str(fake)
        monkeypatch.setenv("NNVM_PTXAS", str(tmp_path / "nowhere"))
        find_ptxas.cache_clear()
        assert find_ptxas() is None
    finally:
        find_ptxas.cache_clear()


UNARY = """
func.func @f(%x: tensor<4096xf32>) -> tensor<4096xf32> {{
  %y = te.compute "y" [i] = {expr} : (tensor<4096xf32>) -> tensor<4096xf32>
  te.schedule {{
    te.split "y" i by 256 -> (b, t)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
  }}
  func.return %y : tensor<4096xf32>
}}"""

# expression, numpy reference, input range (log-spaced magnitudes too, where "tiny" is set)
MATH = {
    "sin": ("sin(%x[i])", np.sin, (-30.0, 30.0)),
    "cos": ("cos(%x[i])", np.cos, (-30.0, 30.0)),
    "tan": ("tan(%x[i])", np.tan, (-1.5, 1.5)),
    "atan": ("atan(%x[i])", np.arctan, (-60.0, 60.0)),
    "asin": ("asin(%x[i])", np.arcsin, (-1.0, 1.0)),
    "acos": ("acos(%x[i])", np.arccos, (-1.0, 1.0)),
    "sinh": ("sinh(%x[i])", np.sinh, (-12.0, 12.0)),
    "cosh": ("cosh(%x[i])", np.cosh, (-12.0, 12.0)),
    "asinh": ("asinh(%x[i])", np.arcsinh, (-300.0, 300.0)),
    "acosh": ("acosh(%x[i])", np.arccosh, (1.0, 300.0)),
    "atanh": ("atanh(%x[i])", np.arctanh, (-0.99, 0.99)),
    "expm1": ("expm1(%x[i])", np.expm1, (-6.0, 6.0)),
    "log1p": ("log1p(%x[i])", np.log1p, (-0.99, 20.0)),
    "log2": ("log2(%x[i])", np.log2, (1e-3, 1e3)),
    "pow": ("pow(%x[i], 2.5)", lambda x: np.power(x, 2.5), (0.0, 9.0)),
    "pow_odd": ("pow(%x[i], 3.0)", lambda x: np.power(x, 3.0), (-4.0, 4.0)),
    "atan2": ("atan2(%x[i], -0.5)", lambda x: np.arctan2(x, -0.5), (-5.0, 5.0)),
}


@pytest.mark.parametrize("name", sorted(MATH))
def test_device_math_passes_ptxas_and_matches_numpy(name: str) -> None:
    """NVPTX links no libm: these come from device_math.py (the emulator runs the same IR)."""
    expr, ref, (lo, hi) = MATH[name]
    ctx = make_context()
    module = parse_module(ctx, UNARY.format(expr=expr), f"{name}.mlir")
    LowerTEToGpu(outline_all=True).apply(ctx, module)
    ConvertGpuToLLVM().apply(ctx, module)
    if find_ptxas() is not None:
        run_ptxas(emit_ptx(module, "sm_90"), "sm_90")
    kernel = load_emulated(CudaTarget(emulate=True).emit_kernel(module, "f"), "f")
    x = np.linspace(lo, hi, 4096, dtype=np.float32)
    x[:7] = np.array([0.0, 1e-7, -1e-7, 1e-4, -1e-4, 0.5, -0.5], np.float32).clip(lo, hi)
    out = np.empty_like(x)
    run_plan(kernel, [x.ctypes.data, out.ctypes.data])
    want = ref(x.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=4e-6, atol=4e-7)
