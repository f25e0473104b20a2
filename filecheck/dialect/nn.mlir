// RUN: nnvm-opt %s | filecheck %s
// RUN: nnvm-opt %s --print-op-generic | nnvm-opt | filecheck %s

// Parse, print and round-trip the nn ops (dense, matmul, normalizations, ...).

// CHECK-LABEL: @dense
// CHECK-NEXT: %y = nnvm.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
func.func @dense(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %y = nnvm.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: @dense_batched
// CHECK-NEXT: %y = nnvm.dense %x, %w : (tensor<5x2x3xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
func.func @dense_batched(%x: tensor<5x2x3xf32>, %w: tensor<4x3xf32>) -> tensor<5x2x4xf32> {
  %y = nnvm.dense %x, %w : (tensor<5x2x3xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
  func.return %y : tensor<5x2x4xf32>
}

// CHECK-LABEL: @matmul
// CHECK-NEXT: %y = nnvm.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = nnvm.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// A weight packed into [N/P, K, P] column panels.
// CHECK-LABEL: @matmul_panels
// CHECK-NEXT: %y = nnvm.matmul %a, %b {rhs_panel = 32} : (tensor<2x3xf32>, tensor<2x3x32xf32>) -> tensor<2x64xf32>
func.func @matmul_panels(%a: tensor<2x3xf32>, %b: tensor<2x3x32xf32>) -> tensor<2x64xf32> {
  %y = nnvm.matmul %a, %b {rhs_panel = 32} : (tensor<2x3xf32>, tensor<2x3x32xf32>) -> tensor<2x64xf32>
  func.return %y : tensor<2x64xf32>
}

// CHECK-LABEL: @matmul_vector
// CHECK-NEXT: %y = nnvm.matmul %a, %b : (tensor<3xf32>, tensor<6x3x4xf32>) -> tensor<6x4xf32>
func.func @matmul_vector(%a: tensor<3xf32>, %b: tensor<6x3x4xf32>) -> tensor<6x4xf32> {
  %y = nnvm.matmul %a, %b : (tensor<3xf32>, tensor<6x3x4xf32>) -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// CHECK-LABEL: @matmul_broadcast
// CHECK-NEXT: %y = nnvm.matmul %a, %b : (tensor<2x1x5x3xi64>, tensor<7x3x4xi64>) -> tensor<2x7x5x4xi64>
func.func @matmul_broadcast(%a: tensor<2x1x5x3xi64>, %b: tensor<7x3x4xi64>) -> tensor<2x7x5x4xi64> {
  %y = nnvm.matmul %a, %b : (tensor<2x1x5x3xi64>, tensor<7x3x4xi64>) -> tensor<2x7x5x4xi64>
  func.return %y : tensor<2x7x5x4xi64>
}

// CHECK-LABEL: @batch_matmul
// CHECK-NEXT: %y = nnvm.batch_matmul %a, %b : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
func.func @batch_matmul(%a: tensor<8x2x3xf32>, %b: tensor<8x3x4xf32>) -> tensor<8x2x4xf32> {
  %y = nnvm.batch_matmul %a, %b {transpose_a = false, transpose_b = false} : (tensor<8x2x3xf32>, tensor<8x3x4xf32>) -> tensor<8x2x4xf32>
  func.return %y : tensor<8x2x4xf32>
}

// CHECK-LABEL: @batch_matmul_transposed
// CHECK-NEXT: %y = nnvm.batch_matmul %a, %b {transpose_a = true, transpose_b = true} : (tensor<1x3x2xf32>, tensor<8x4x3xf32>) -> tensor<8x2x4xf32>
func.func @batch_matmul_transposed(%a: tensor<1x3x2xf32>, %b: tensor<8x4x3xf32>) -> tensor<8x2x4xf32> {
  %y = nnvm.batch_matmul %a, %b {transpose_a = true, transpose_b = true} : (tensor<1x3x2xf32>, tensor<8x4x3xf32>) -> tensor<8x2x4xf32>
  func.return %y : tensor<8x2x4xf32>
}

// CHECK-LABEL: @bias_add
// CHECK-NEXT: %y = nnvm.bias_add %x, %b : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
func.func @bias_add(%x: tensor<1x16x8x8xf32>, %b: tensor<16xf32>) -> tensor<1x16x8x8xf32> {
  %y = nnvm.bias_add %x, %b : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  func.return %y : tensor<1x16x8x8xf32>
}

// CHECK-LABEL: @bias_add_last
// CHECK-NEXT: %y = nnvm.bias_add %x, %b {axis = -1} : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
func.func @bias_add_last(%x: tensor<4x10xf32>, %b: tensor<10xf32>) -> tensor<4x10xf32> {
  %y = nnvm.bias_add %x, %b {axis = -1} : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  func.return %y : tensor<4x10xf32>
}

// CHECK-LABEL: @softmax
// CHECK-NEXT: %y = nnvm.softmax %x : (tensor<4x10xf32>) -> tensor<4x10xf32>
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %y = nnvm.softmax %x : (tensor<4x10xf32>) -> tensor<4x10xf32>
  func.return %y : tensor<4x10xf32>
}

// CHECK-LABEL: @softmax_axis
// CHECK-NEXT: %y = nnvm.softmax %x {axis = 0} : (tensor<4x10xf32>) -> tensor<4x10xf32>
func.func @softmax_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %y = nnvm.softmax %x {axis = 0} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  func.return %y : tensor<4x10xf32>
}

// CHECK-LABEL: @log_softmax
// CHECK-NEXT: %y = nnvm.log_softmax %x : (tensor<4x10xf64>) -> tensor<4x10xf64>
func.func @log_softmax(%x: tensor<4x10xf64>) -> tensor<4x10xf64> {
  %y = nnvm.log_softmax %x {axis = -1} : (tensor<4x10xf64>) -> tensor<4x10xf64>
  func.return %y : tensor<4x10xf64>
}

// CHECK-LABEL: @batch_norm
// CHECK-NEXT: %y = nnvm.batch_norm %x, %g, %b, %m, %v : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
func.func @batch_norm(%x: tensor<1x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  %y = nnvm.batch_norm %x, %g, %b, %m, %v : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: @batch_norm_attrs
// CHECK-NEXT: %y = nnvm.batch_norm %x, %g, %g, %g, %g {axis = 2, epsilon = 0.001} : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
func.func @batch_norm_attrs(%x: tensor<2x5x3xf32>, %g: tensor<3xf32>) -> tensor<2x5x3xf32> {
  %y = nnvm.batch_norm %x, %g, %g, %g, %g {axis = 2, epsilon = 1.0e-03} : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
  func.return %y : tensor<2x5x3xf32>
}

// CHECK-LABEL: @layer_norm
// CHECK-NEXT: %y = nnvm.layer_norm %x, %g, %b : (tensor<2x7x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
func.func @layer_norm(%x: tensor<2x7x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x7x16xf32> {
  %y = nnvm.layer_norm %x, %g, %b : (tensor<2x7x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
  func.return %y : tensor<2x7x16xf32>
}

// CHECK-LABEL: @layer_norm_axes
// CHECK-NEXT: %y = nnvm.layer_norm %x, %g, %b {axis = 1, epsilon = 0.0001} : (tensor<2x7x16xf32>, tensor<7x16xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
func.func @layer_norm_axes(%x: tensor<2x7x16xf32>, %g: tensor<7x16xf32>, %b: tensor<16xf32>) -> tensor<2x7x16xf32> {
  %y = nnvm.layer_norm %x, %g, %b {axis = 1, epsilon = 1.0e-04} : (tensor<2x7x16xf32>, tensor<7x16xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
  func.return %y : tensor<2x7x16xf32>
}

// CHECK-LABEL: @instance_norm
// CHECK-NEXT: %y = nnvm.instance_norm %x, %g, %b : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
func.func @instance_norm(%x: tensor<2x3x5x5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x5x5xf32> {
  %y = nnvm.instance_norm %x, %g, %b {epsilon = 1.0e-05} : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  func.return %y : tensor<2x3x5x5xf32>
}

// CHECK-LABEL: @lrn
// CHECK-NEXT: %y = nnvm.lrn %x {size = 5} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
func.func @lrn(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %y = nnvm.lrn %x {size = 5} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: @lrn_attrs
// CHECK-NEXT: %y = nnvm.lrn %x {size = 3, alpha = 0.0002, beta = 0.5, bias = 2.0} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
func.func @lrn_attrs(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %y = nnvm.lrn %x {size = 3, alpha = 2.0e-04, beta = 0.5, bias = 2} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: @prelu
// CHECK-NEXT: %y = nnvm.prelu %x, %s : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
func.func @prelu(%x: tensor<1x3x4x4xf32>, %s: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %y = nnvm.prelu %x, %s : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

