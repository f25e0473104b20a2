// REQUIRES: mlir
// Upstream MLIR accepts the generic form we print for standard dialects (and, as
// unregistered ops, our graph dialect).
// RUN: nnvm-opt %s --print-op-generic | %mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | nnvm-opt | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK: nnvm.conv2d %{{.*}}, %{{.*}} {strides = [2, 2], padding = [1, 1, 1, 1]}
// CHECK: nnvm.relu
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %c = nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  %r = nnvm.relu %c : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %r : tensor<1x4x4x4xf32>
}
