// te.constant becomes a private global read with memref.get_global; te.extern calls the
// external kernel with the kernel ABI (input buffers, then the output buffer), declaring it.
// RUN: nnvm-opt %s -p lower-te-to-loops | filecheck %s
// The old name is an alias:
// RUN: nnvm-opt %s -p lower-te-to-affine | filecheck %s

// CHECK:      "memref.global"() <{sym_name = "__te_const_k_0", type = memref<2xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, sym_visibility = "private", constant, alignment = 64 : i64}>
// CHECK:      func.func private @my_kernel(memref<2xf32>, memref<2xf32>, memref<2xf32>) -> ()
// CHECK-LABEL: func.func @k(%x: memref<2xf32>, %out: memref<2xf32>)
// CHECK:      %[[T:.*]] = memref.get_global @__te_const_k_0 : memref<2xf32>
// CHECK:      %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2xf32>
// CHECK:      func.call @my_kernel(%x, %[[T]], %[[Y]]) : (memref<2xf32>, memref<2xf32>, memref<2xf32>) -> ()
// CHECK:      memref.load %[[Y]]
// CHECK:      memref.dealloc %[[Y]]
func.func @k(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = te.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = te.extern @my_kernel(%x, %t) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %z = te.compute "z" [i] = %y[i] * 2.0 : (tensor<2xf32>) -> tensor<2xf32>
  func.return %z : tensor<2xf32>
}
