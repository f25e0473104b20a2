// RUN: nnvm-opt %s | filecheck %s
// RUN: nnvm-opt %s --print-op-generic | nnvm-opt | filecheck %s

// Parse, print and round-trip the reductions (default keepdims = false is elided).

// CHECK-LABEL: @sum
// CHECK-NEXT: %y = nnvm.sum %x {axes = [1]} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
func.func @sum(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %y = nnvm.sum %x {axes = [1]} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: @sum_keepdims
// CHECK-NEXT: %y = nnvm.sum %x {axes = [-1, 1], keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
func.func @sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %y = nnvm.sum %x {axes = [-1, 1], keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  func.return %y : tensor<2x1x1xf32>
}

// CHECK-LABEL: @sum_no_axes
// CHECK-NEXT: %y = nnvm.sum %x {axes = []} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
func.func @sum_no_axes(%x: tensor<2x3x4xi32>) -> tensor<2x3x4xi32> {
  %y = nnvm.sum %x {axes = []} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
  func.return %y : tensor<2x3x4xi32>
}

// CHECK-LABEL: @mean
// CHECK-NEXT: %y = nnvm.mean %x {axes = [2, 3], keepdims = true} : (tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32>
func.func @mean(%x: tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32> {
  %y = nnvm.mean %x {axes = [2, 3], keepdims = true} : (tensor<1x64x7x7xf32>) -> tensor<1x64x1x1xf32>
  func.return %y : tensor<1x64x1x1xf32>
}

// CHECK-LABEL: @max
// CHECK-NEXT: %y = nnvm.max %x {axes = [0, 1, 2]} : (tensor<2x3x4xi64>) -> tensor<i64>
func.func @max(%x: tensor<2x3x4xi64>) -> tensor<i64> {
  %y = nnvm.max %x {axes = [0, 1, 2], keepdims = false} : (tensor<2x3x4xi64>) -> tensor<i64>
  func.return %y : tensor<i64>
}

// CHECK-LABEL: @min
// CHECK-NEXT: %y = nnvm.min %x {axes = [0]} : (tensor<2x3x4xf16>) -> tensor<3x4xf16>
func.func @min(%x: tensor<2x3x4xf16>) -> tensor<3x4xf16> {
  %y = nnvm.min %x {axes = [0]} : (tensor<2x3x4xf16>) -> tensor<3x4xf16>
  func.return %y : tensor<3x4xf16>
}

// CHECK-LABEL: @prod
// CHECK-NEXT: %y = nnvm.prod %x {axes = [2]} : (tensor<2x3x4xf64>) -> tensor<2x3xf64>
func.func @prod(%x: tensor<2x3x4xf64>) -> tensor<2x3xf64> {
  %y = nnvm.prod %x {axes = [2]} : (tensor<2x3x4xf64>) -> tensor<2x3xf64>
  func.return %y : tensor<2x3xf64>
}

// CHECK-LABEL: @argmax
// CHECK-NEXT: %y = nnvm.argmax %x : (tensor<2x10xf32>) -> tensor<1x10xi64>
func.func @argmax(%x: tensor<2x10xf32>) -> tensor<1x10xi64> {
  %y = nnvm.argmax %x : (tensor<2x10xf32>) -> tensor<1x10xi64>
  func.return %y : tensor<1x10xi64>
}

// CHECK-LABEL: @argmin
// CHECK-NEXT: %y = nnvm.argmin %x {axis = -1, keepdims = false, select_last_index = true} : (tensor<2x10xi32>) -> tensor<2xi64>
func.func @argmin(%x: tensor<2x10xi32>) -> tensor<2xi64> {
  %y = nnvm.argmin %x {axis = -1, keepdims = false, select_last_index = true} : (tensor<2x10xi32>) -> tensor<2xi64>
  func.return %y : tensor<2xi64>
}

