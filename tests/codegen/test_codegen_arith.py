"""arith/memref lowering on hand-written IR: integer ops, casts, compares, select, subviews,
allocations and globals, run through the JIT and checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.registry import make_context
from nnvm.support.errors import UserError
from nnvm.targets.llvm import compile_jit, host_features, translate_to_llvm_ir


def lowered(text: str, **options):
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    ConvertToLLVM(**options).apply(Context(), module)
    module.verify()
    return module


INT_OPS = """
func.func @k(%xi: memref<16xi32>, %xf: memref<16xf32>, %oi: memref<16x10xi64>,
             %of: memref<16x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c16 = arith.constant 16 : index
  %k3 = arith.constant 3 : index
  %s2 = arith.constant 2 : i32
  scf.for %i = %c0 to %c16 step %c1 {
    %a = memref.load %xi[%i] : memref<16xi32>
    %f = memref.load %xf[%i] : memref<16xf32>
    %ia = arith.index_cast %a : i32 to index
    %fd = arith.floordivsi %ia, %k3 : index
    %cd = arith.ceildivsi %ia, %k3 : index
    %rm = arith.remsi %ia, %k3 : index
    %mn = arith.minsi %ia, %k3 : index
    %mx = arith.maxsi %ia, %k3 : index
    %fi = arith.fptosi %f : f32 to i32
    %sh = arith.shrsi %a, %s2 : i32
    %sl = arith.shli %a, %s2 : i32
    %xo = arith.xori %a, %s2 : i32
    %mu = arith.muli %a, %a : i32
    %w0 = arith.index_cast %fd : index to i64
    %w1 = arith.index_cast %cd : index to i64
    %w2 = arith.index_cast %rm : index to i64
    %w3 = arith.index_cast %mn : index to i64
    %w4 = arith.index_cast %mx : index to i64
    %w5 = arith.extsi %fi : i32 to i64
    %w6 = arith.extsi %sh : i32 to i64
    %w7 = arith.extsi %sl : i32 to i64
    %w8 = arith.extui %xo : i32 to i64
    %w9 = arith.extsi %mu : i32 to i64
    memref.store %w0, %oi[%i, %c0] : memref<16x10xi64>
    memref.store %w1, %oi[%i, %c1] : memref<16x10xi64>
    memref.store %w2, %oi[%i, %c2] : memref<16x10xi64>
    memref.store %w3, %oi[%i, %c3] : memref<16x10xi64>
    memref.store %w4, %oi[%i, %c4] : memref<16x10xi64>
    memref.store %w5, %oi[%i, %c5] : memref<16x10xi64>
    memref.store %w6, %oi[%i, %c6] : memref<16x10xi64>
    memref.store %w7, %oi[%i, %c7] : memref<16x10xi64>
    memref.store %w8, %oi[%i, %c8] : memref<16x10xi64>
    memref.store %w9, %oi[%i, %c9] : memref<16x10xi64>
    %sf = arith.sitofp %a : i32 to f32
    %uf = arith.uitofp %a : i32 to f32
    %lt = arith.cmpf olt, %f, %sf : f32
    %sel = arith.select %lt, %f, %sf : f32
    %mxf = arith.maximumf %f, %sf : f32
    memref.store %sf, %of[%i, %c0] : memref<16x4xf32>
    memref.store %uf, %of[%i, %c1] : memref<16x4xf32>
    memref.store %sel, %of[%i, %c2] : memref<16x4xf32>
    memref.store %mxf, %of[%i, %c3] : memref<16x4xf32>
  }
  return
}
"""


def test_integer_and_cast_ops():
    jit = compile_jit(lowered(INT_OPS))
    xi = np.array([-7, -6, -5, -1, 0, 1, 2, 3, 4, 5, 8, 100, -100, 46341, -3, 7], np.int32)
    xf = np.array([-2.5, -1.5, -0.5, 0.4, 0.6, 1.5, 2.5, 1e10, -1e10, np.nan, 3.0,
                   -7.9, 7.9, 0.0, -0.0, 1e-3], np.float32)  # fmt: skip
    oi = np.zeros((16, 10), np.int64)
    of = np.zeros((16, 4), np.float32)
    jit["k"](xi, xf, oi, of)
    a = xi.astype(np.int64)
    with np.errstate(invalid="ignore"):
        sat = np.clip(np.nan_to_num(xf.astype(np.float64), nan=0.0), -(2**31), 2**31 - 1)
    want = np.stack(
        [
            np.floor_divide(a, 3),
            -np.floor_divide(-a, 3),
            np.fmod(a, 3),
            np.minimum(a, 3),
            np.maximum(a, 3),
            np.trunc(sat).astype(np.int64),
            a >> 2,
            (xi << 2).astype(np.int64),
            (xi ^ 2).astype(np.uint32).astype(np.int64),
            (xi * xi).astype(np.int64),
        ],
        axis=1,
    )
    np.testing.assert_array_equal(oi, want)
    sf = xi.astype(np.float32)
    uf = xi.astype(np.uint32).astype(np.float32)
    with np.errstate(invalid="ignore"):
        sel = np.where(xf < sf, xf, sf)
    np.testing.assert_array_equal(of[:, 0], sf)
    np.testing.assert_array_equal(of[:, 1], uf)
    np.testing.assert_array_equal(of[:, 2], sel)
    np.testing.assert_array_equal(of[:, 3], np.maximum(xf, sf))  # NaN-propagating


CLAMP_OPS = """
func.func @k(%x: memref<32xf32>, %o: memref<4x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %z16 = vector.broadcast %zero : f32 to vector<16xf32>
  %s16 = vector.broadcast %six : f32 to vector<16xf32>
  %s32 = vector.broadcast %six : f32 to vector<32xf32>
  %bounds = arith.constant dense<[1.0, 0x7FC00000, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0,
                                  1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]> : vector<16xf32>
  %lo = vector.load %x[%c0] : memref<32xf32>, vector<16xf32>
  %hi = vector.load %x[%c16] : memref<32xf32>, vector<16xf32>
  %all = vector.load %x[%c0] : memref<32xf32>, vector<32xf32>
  %relu_lo = arith.maximumf %lo, %z16 : vector<16xf32>
  %relu6_lo = arith.minimumf %s16, %relu_lo : vector<16xf32>
  %relu_hi = arith.maximumf %z16, %hi : vector<16xf32>
  %relu6_hi = arith.minimumf %relu_hi, %s16 : vector<16xf32>
  %min32 = arith.minimumf %all, %s32 : vector<32xf32>
  %nan_lo = arith.maximumf %lo, %bounds : vector<16xf32>
  %nan_hi = arith.maximumf %hi, %bounds : vector<16xf32>
  vector.store %relu6_lo, %o[%c0, %c0] : memref<4x32xf32>, vector<16xf32>
  vector.store %relu6_hi, %o[%c0, %c16] : memref<4x32xf32>, vector<16xf32>
  vector.store %relu_lo, %o[%c1, %c0] : memref<4x32xf32>, vector<16xf32>
  vector.store %relu_hi, %o[%c1, %c16] : memref<4x32xf32>, vector<16xf32>
  vector.store %min32, %o[%c2, %c0] : memref<4x32xf32>, vector<32xf32>
  vector.store %nan_lo, %o[%c3, %c0] : memref<4x32xf32>, vector<16xf32>
  vector.store %nan_hi, %o[%c3, %c16] : memref<4x32xf32>, vector<16xf32>
  return
}
"""


@pytest.mark.parametrize("x86", [False, True])
def test_relu_and_clip_keep_nans(x86):
    """ReLU / ReLU6 / min against constants: NaN-propagating (llvm.maximum, or AVX-512's
    vmaxps/vminps with the constant first); a constant with a NaN lane keeps llvm.maximum."""
    if x86 and not host_features().get("avx512f"):
        pytest.skip("host CPU has no AVX-512")
    module = lowered(CLAMP_OPS, x86_minmax=x86)
    text = str(module)
    assert text.count("llvm.x86.avx512.") == (6 if x86 else 0)  # 32 lanes: two halves
    assert text.count('"llvm.maximum.v16f32"') == (2 if x86 else 4)
    jit = compile_jit(module)
    x = np.array([np.nan, -0.0, 0.0, -1.0, 1.0, np.inf, -np.inf, 5.9, 6.0, 6.5, -6.5, 1e-45,
                  -1e-45, 3.0, -np.nan, 1e38] * 2, np.float32)  # fmt: skip
    x[16:] = x[16:][::-1]
    o = np.full((4, 32), 7.0, np.float32)
    jit["k"](x, o)
    with np.errstate(invalid="ignore"):
        relu = np.maximum(x, 0)
        bounds = np.tile(np.array([1, np.nan, 2, 3] + [1] * 12, np.float32), 2)
        want = [np.minimum(relu, 6), relu, np.minimum(x, 6), np.maximum(x, bounds)]
    for got, expected in zip(o, want, strict=True):
        np.testing.assert_array_equal(got, expected)  # NaN where NaN; -0 and 0 compare equal


MEMORY_OPS = """
"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<4xf32>,
  initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, constant}> : () -> ()
func.func @k(%a: memref<6x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %t = memref.get_global @table : memref<4xf32>
  %tmp = memref.alloc() : memref<4xf32>
  %st = memref.alloca() : memref<4xf32>
  %v = memref.subview %a[%c1, 2] [4, 4] [1, 1] : memref<6x8xf32> to memref<4x4xf32, strided<[8, 1], offset: ?>>
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %v[%i, %i] : memref<4x4xf32, strided<[8, 1], offset: ?>>
    %y = memref.load %t[%i] : memref<4xf32>
    %z = arith.mulf %x, %y : f32
    memref.store %z, %tmp[%i] : memref<4xf32>
  }
  "memref.copy"(%tmp, %st) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%st, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.dealloc %tmp : memref<4xf32>
  return
}
"""


def test_subview_global_alloc_copy():
    jit = compile_jit(lowered(MEMORY_OPS))
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    out = np.zeros(4, np.float32)
    jit["k"](a, out)
    view = a[1:5, 2:6]
    np.testing.assert_array_equal(out, np.diag(view) * np.array([1, 2, 3, 4], np.float32))


def test_kernel_abi_is_bare_pointers():
    text = translate_to_llvm_ir(lowered(MEMORY_OPS))
    assert 'define void @"k"(ptr %"a", ptr %"out")' in text
    assert "ptrtoint" not in text and "inttoptr" not in text
    assert "getelementptr inbounds float" in text
    assert "@aligned_alloc(i64 64, i64 64)" in text.replace('"', "")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "func.func @k(%a: memref<4xf32>) -> memref<4xf32> { func.return %a : memref<4xf32> }",
            "returning a memref",
        ),
        (
            "func.func @k(%a: memref<?xf32>, %i: index) -> f32 {\n"
            "  %x = memref.load %a[%i] : memref<?xf32>\n  func.return %x : f32\n}",
            "dynamic",
        ),
    ],
)
def test_unsupported_input_is_a_user_error(text, message):
    with pytest.raises(UserError, match=message):
        lowered(text)
