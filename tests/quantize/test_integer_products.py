"""int8 dense and conv2d in integers on the CPU: quantize-int8's exact-float form ->
integer-products (u8 activations, compensation, a conv padded with 128) -> alter-layout's packed
weights -> the tensorized byte dot-product templates. Through build(), the int32 result must
equal numpy's exactly, for shapes the packing takes (channels multiples of 16) and for those it
leaves unpacked."""

from __future__ import annotations

import numpy as np
import pytest

import nnvm
from nnvm.compiler import build
from nnvm.dialects.nnvm.conv import conv2d_nchw
from nnvm.dialects.nnvm.nn import pack_dot_weight, unpack_dot_weight
from nnvm.registry import make_context
from nnvm.runtime import graph_runtime
from nnvm.support.diagnostics import parse_module
from nnvm.support.target import parse_target


def quantized_dense(m: int, n: int, k: int) -> str:
    return f"""
func.func @main(%x: tensor<{m}x{k}xi8>) -> tensor<{m}x{n}xi32> {{
  %w = nnvm.param "w" : tensor<{n}x{k}xi8>
  %xf = nnvm.cast %x {{to = "float32"}} : (tensor<{m}x{k}xi8>) -> tensor<{m}x{k}xf32>
  %wf = nnvm.cast %w {{to = "float32"}} : (tensor<{n}x{k}xi8>) -> tensor<{n}x{k}xf32>
  %d = nnvm.dense %xf, %wf : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
  %r = nnvm.cast %d {{to = "int32"}} : (tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xi32>
  func.return %r : tensor<{m}x{n}xi32>
}}"""


@pytest.mark.parametrize(
    "m,n,k,packed",
    [
        (16, 64, 32, True),
        (7, 48, 12, True),
        (40, 32, 256, True),
        (5, 20, 8, False),
        (6, 32, 10, False),
    ],
)
def test_int8_dense_build_is_exact(m, n, k, packed, tmp_path):
    module = parse_module(make_context(), quantized_dense(m, n, k), "dense.mlir")
    rng = np.random.default_rng(m * n + k)
    w = rng.integers(-127, 128, (n, k), dtype=np.int8)
    x = rng.integers(-127, 128, (m, k), dtype=np.int8)
    x[0], w[0] = -127, 127  # the extreme products
    graph, lib, params = build(module, params={"w": w}, dump_ir=tmp_path)
    rt = graph_runtime.create(graph, lib, nnvm.cpu(0))
    rt.set_input(**params)
    rt.run(x=x)
    np.testing.assert_array_equal(rt.get_output(0), x.astype(np.int64) @ w.astype(np.int64).T)
    kernels = "\n".join(p.read_text() for p in tmp_path.glob("kernels/*/02-*.mlir"))
    assert ("te.tensorize" in kernels) == packed
    assert "nnvm.dense" in (tmp_path / "04-integer-products.mlir").read_text()


def test_pack_round_trip_and_type_rules():
    w = np.arange(32 * 8, dtype=np.int64).reshape(32, 8).astype(np.int8)
    packed = pack_dot_weight(w, 16)
    assert packed.shape == (2, 2, 16, 4)
    assert packed[1, 1, 3, 2] == w[16 + 3, 4 + 2]
    np.testing.assert_array_equal(unpack_dot_weight(packed), w)
    text = """
func.func @f(%x: tensor<2x8xui8>, %w: tensor<2x2x16x4xi8>) -> tensor<2x32xi32> {
  %y = nnvm.dense %x, %w {weight_lanes = 8} : (tensor<2x8xui8>, tensor<2x2x16x4xi8>) -> tensor<2x32xi32>
  func.return %y : tensor<2x32xi32>
}"""
    with pytest.raises(Exception, match=r"weight_lanes = 8 needs a \[N/8, K/4, 8, 4\] weight"):
        parse_module(make_context(), text, "bad.mlir").verify()


def quantized_conv(n, c, h, o, k, pad, stride, groups=1) -> tuple[str, tuple[int, ...]]:
    oh = (h + 2 * pad - k) // stride + 1
    x, w, y = f"{n}x{c}x{h}x{h}", f"{o}x{c // groups}x{k}x{k}", f"{n}x{o}x{oh}x{oh}"
    attrs = (
        f"strides = [{stride}, {stride}], padding = [{pad}, {pad}, {pad}, {pad}], groups = {groups}"
    )
    text = f"""
func.func @main(%x: tensor<{x}xi8>) -> tensor<{y}xi32> {{
  %w = nnvm.param "w" : tensor<{w}xi8>
  %xf = nnvm.cast %x {{to = "float32"}} : (tensor<{x}xi8>) -> tensor<{x}xf32>
  %wf = nnvm.cast %w {{to = "float32"}} : (tensor<{w}xi8>) -> tensor<{w}xf32>
  %d = nnvm.conv2d %xf, %wf {{{attrs}}} : (tensor<{x}xf32>, tensor<{w}xf32>) -> tensor<{y}xf32>
  %r = nnvm.cast %d {{to = "int32"}} : (tensor<{y}xf32>) -> tensor<{y}xi32>
  func.return %r : tensor<{y}xi32>
}}"""
    return text, (o, c // groups, k, k)


@pytest.mark.parametrize(
    "n,c,h,o,k,pad,stride,groups",
    [
        (1, 32, 9, 32, 3, 1, 1, 1),  # a 3x3 conv: padding with the offset's 128
        (2, 16, 8, 48, 1, 0, 1, 1),  # pointwise, batch 2
        (1, 32, 11, 16, 3, 1, 2, 1),  # stride 2, a tail of output columns
        (1, 16, 7, 32, 5, 2, 1, 1),
        (1, 20, 6, 16, 3, 1, 1, 1),  # 20 input channels: no lanes divide them, NCHW integer conv
        (1, 16, 6, 16, 3, 1, 1, 2),  # grouped: the float form stays
    ],
)
def test_int8_conv_build_is_exact(n, c, h, o, k, pad, stride, groups, tmp_path):
    lanes = parse_target(None).vector_bits // 32
    tensorized = groups == 1 and c % lanes == 0 and o % lanes == 0
    text, wshape = quantized_conv(n, c, h, o, k, pad, stride, groups)
    module = parse_module(make_context(), text, "conv.mlir")
    rng = np.random.default_rng(c * o + k)
    w = rng.integers(-127, 128, wshape, dtype=np.int8)
    x = rng.integers(-127, 128, (n, c, h, h), dtype=np.int8)
    x[:, :, 0, :] = -127  # the extremes at the padded edge
    graph, lib, params = build(module, params={"w": w}, dump_ir=tmp_path)
    rt = graph_runtime.create(graph, lib, nnvm.cpu(0))
    rt.set_input(**params)
    rt.run(x=x)
    want = conv2d_nchw(x, w, (stride, stride), (pad,) * 4, (1, 1), groups)
    np.testing.assert_array_equal(rt.get_output(0), np.rint(want).astype(np.int64))
    kernels = "\n".join(p.read_text() for p in tmp_path.glob("kernels/*/02-*.mlir"))
    assert ("te.tensorize" in kernels) == tensorized
    integer = "pad_value = 128" in (tmp_path / "04-integer-products.mlir").read_text()
    assert integer == (groups == 1)


@pytest.mark.parametrize("kind", ["dense", "conv2d"])
def test_int8_on_an_avx2_target_is_exact(kind, tmp_path):
    """x86-64-v3 (no AVX-512, no VNNI): 8-lane packing, tensorized with the shift-and-multiply
    form of dot_u8i8."""
    if kind == "dense":
        text, wshape, xshape = quantized_dense(9, 24, 20), (24, 20), (9, 20)
    else:
        (text, wshape), xshape = quantized_conv(1, 16, 7, 24, 3, 1, 1), (1, 16, 7, 7)
    module = parse_module(make_context(), text, f"{kind}.mlir")
    rng = np.random.default_rng(7)
    w = rng.integers(-127, 128, wshape, dtype=np.int8)
    x = rng.integers(-127, 128, xshape, dtype=np.int8)
    graph, lib, params = build(
        module, target="llvm -mcpu=x86-64-v3", params={"w": w}, dump_ir=tmp_path
    )
    rt = graph_runtime.create(graph, lib, nnvm.cpu(0))
    rt.set_input(**params)
    rt.run(x=x)
    if kind == "dense":
        want = x.astype(np.int64) @ w.astype(np.int64).T
    else:
        want = np.rint(conv2d_nchw(x, w, (1, 1), (1,) * 4, (1, 1), 1)).astype(np.int64)
    np.testing.assert_array_equal(rt.get_output(0), want)
    kernels = "\n".join(p.read_text() for p in tmp_path.glob("kernels/*/02-*.mlir"))
    assert "te.tensorize" in kernels and "vpdpbusd" not in (tmp_path / "kernels").as_posix()


def test_only_cpu_hosts_with_tensorize_add_the_pass():
    """The CPU target adds integer-products before alter-layout (where the pipeline has it);
    WebAssembly (no byte dot product, no te.tensorize) keeps the exact-float form."""
    from nnvm.compiler.build import graph_passes

    names = [p.name for p in graph_passes(3, parse_target("llvm"))]
    assert names.index("integer-products") == names.index("alter-layout") - 1
    assert "integer-products" not in [p.name for p in graph_passes(1, parse_target("llvm"))]
    assert "integer-products" not in [p.name for p in graph_passes(3, parse_target("wasm"))]
