// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// conv2d: strides, padding [top, left, bottom, right], dilation, groups, layouts.

// CHECK-LABEL: @plain
// CHECK: nnvm.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
// CHECK-GENERIC: "nnvm.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW", out_layout = "", pad_value = 0 : i64, weight_lanes = 0 : i64}>
func.func @plain(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %y = nnvm.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// CHECK-LABEL: @strided_padded_dilated
// CHECK: nnvm.conv2d %x, %w {strides = [2, 1], padding = [1, 2, 1, 0], dilation = [2, 2]} : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x7xf32>
func.func @strided_padded_dilated(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x4x7xf32> {
  %y = nnvm.conv2d %x, %w {strides = [2, 1], padding = [1, 2, 1, 0], dilation = [2, 2]} : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x7xf32>
  func.return %y : tensor<2x4x4x7xf32>
}

// CHECK-LABEL: @depthwise
// CHECK: nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], groups = 8} : (tensor<1x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32>
func.func @depthwise(%x: tensor<1x8x5x5xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32> {
  %y = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], groups = 8} : (tensor<1x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32>
  func.return %y : tensor<1x8x5x5xf32>
}

// Blocked layouts: data NCHW8c (C = 2 x 8), kernel OIHW8i8o (O = 2 x 8, I = 2 x 8).
// CHECK-LABEL: @blocked
// CHECK: nnvm.conv2d %x, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x4x4x8xf32>
func.func @blocked(%x: tensor<1x2x6x6x8xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  %y = nnvm.conv2d %x, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}
