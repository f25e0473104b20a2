// RUN: not nnvm-opt %s -p gradient 2>&1 | filecheck %s
// Every op on a path to the loss without a vector-Jacobian product is named in one error.
// CHECK: gradient-invalid.mlir:7:{{[0-9]+}}: error: gradient: no vector-Jacobian product for nnvm.cos, nnvm.sin
func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
  %w = nnvm.param "w" : tensor<3xf32>
  %a = nnvm.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = nnvm.sin %a : (tensor<3xf32>) -> tensor<3xf32>
  %c = nnvm.cos %b : (tensor<3xf32>) -> tensor<3xf32>
  %s = nnvm.sum %c {axes = [0]} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
