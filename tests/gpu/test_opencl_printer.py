"""The OpenCL C printer on hand-written gpu kernels, run on PoCL: MLIR semantics where C's
differ (the low bit of trunci to i1, a sign-extended true, fpowi's int exponent)."""

from __future__ import annotations

import numpy as np
from opencl_harness import requires_opencl
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, math, memref
from xdsl.parser import Parser

from nnvm.runtime.device import run_on_device
from nnvm.targets.gpu.opencl.runtime import OpenCLRuntime
from nnvm.targets.gpu.opencl.target import OpenCLTarget

PRINTED = """
builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "t_kernels"}> ({
    "gpu.func"() <{function_type = (memref<8xi32>, memref<8xi32>, memref<8xf32>) -> (), kernel}> ({
    ^bb0(%x: memref<8xi32>, %o: memref<8xi32>, %f: memref<8xf32>):
      %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %v = memref.load %x[%t] : memref<8xi32>
      %b = arith.trunci %v : i32 to i1
      %e = arith.extsi %b : i1 to i32
      memref.store %e, %o[%t] : memref<8xi32>
      %xf = arith.sitofp %v : i32 to f32
      %p = math.fpowi %xf, %v : f32, i32
      memref.store %p, %f[%t] : memref<8xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "t_k", gpu.known_block_size = array<i32: 8, 1, 1>} : () -> ()
  }) : () -> ()
  func.func @t(%x: memref<8xi32>, %o: memref<8xi32>, %f: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    "gpu.launch_func"(%c1, %c1, %c1, %c8, %c1, %c1, %x, %o, %f) <{kernel = @t_kernels::@t_k, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 0>}> : (index, index, index, index, index, index, memref<8xi32>, memref<8xi32>, memref<8xf32>) -> ()
    func.return
  }
}
"""


@requires_opencl
def test_bool_casts_and_integer_powers_keep_mlir_semantics() -> None:
    """trunci to i1 keeps the low bit, extsi of true is -1, fpowi's exponent is an int."""
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, memref.MemRef, gpu.GPU):
        ctx.load_dialect(d)
    module = Parser(ctx, PRINTED).parse_module()
    blob = OpenCLTarget().emit_kernel(module, "t")
    x = np.array([0, 1, 2, 3, -1, -2, 5, 6], np.int32)
    o, f = np.zeros(8, np.int32), np.zeros(8, np.float32)
    run_on_device(OpenCLRuntime(None, sources={"t": blob}), "t", [x], [o, f])
    np.testing.assert_array_equal(o, -(x & 1))
    np.testing.assert_allclose(f, x.astype(np.float64) ** x.astype(np.float64), rtol=1e-6)


BUILTIN_NAMES = PRINTED.replace("%x", "%exp").replace("%o", "%max").replace("%f", "%float")


@requires_opencl
def test_values_named_like_builtins_are_renamed() -> None:
    """A buffer named after an OpenCL builtin or keyword (a stage `exp` of an expanded softmax,
    `max` of a reduction) would hide it or not parse: such names take a suffix."""
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, memref.MemRef, gpu.GPU):
        ctx.load_dialect(d)
    module = Parser(ctx, BUILTIN_NAMES).parse_module()
    blob = OpenCLTarget().emit_kernel(module, "t")
    assert b"restrict exp," not in blob and b"restrict float)" not in blob
    x = np.array([0, 1, 2, 3, -1, -2, 5, 6], np.int32)
    o, f = np.zeros(8, np.int32), np.zeros(8, np.float32)
    run_on_device(OpenCLRuntime(None, sources={"t": blob}), "t", [x], [o, f])
    np.testing.assert_array_equal(o, -(x & 1))
