// RUN: nnvm-opt %s | filecheck %s
// RUN: nnvm-opt %s --print-op-generic | nnvm-opt | filecheck %s

// Parse, print and round-trip the pooling ops; blocked layouts keep the layout attribute.

// CHECK-LABEL: @max_pool2d
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
func.func @max_pool2d(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %y : tensor<1x3x7x7xf32>
}

// CHECK-LABEL: @max_pool2d_attrs
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
func.func @max_pool2d_attrs(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], dilation = [1, 1], ceil_mode = false, layout = "NCHW"} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  func.return %y : tensor<1x64x56x56xf32>
}

// CHECK-LABEL: @max_pool2d_ceil_dilated
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], dilation = [2, 2], ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
func.func @max_pool2d_ceil_dilated(%x: tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1], dilation = [2, 2], ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// CHECK-LABEL: @max_pool2d_blocked
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NCHW8c"} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
func.func @max_pool2d_blocked(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NCHW8c"} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// CHECK-LABEL: @max_pool2d_nhwc
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NHWC"} : (tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32>
func.func @max_pool2d_nhwc(%x: tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NHWC"} : (tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32>
  func.return %y : tensor<1x4x4x3xf32>
}

// CHECK-LABEL: @max_pool2d_uint8
// CHECK-NEXT: %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x3x8x8xui8>) -> tensor<1x3x4x4xui8>
func.func @max_pool2d_uint8(%x: tensor<1x3x8x8xui8>) -> tensor<1x3x4x4xui8> {
  %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x3x8x8xui8>) -> tensor<1x3x4x4xui8>
  func.return %y : tensor<1x3x4x4xui8>
}

// CHECK-LABEL: @avg_pool2d
// CHECK-NEXT: %y = nnvm.avg_pool2d %x {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
func.func @avg_pool2d(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %y = nnvm.avg_pool2d %x {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: @avg_pool2d_attrs
// CHECK-NEXT: %y = nnvm.avg_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [0, 0, 1, 1], ceil_mode = true, count_include_pad = true} : (tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32>
func.func @avg_pool2d_attrs(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32> {
  %y = nnvm.avg_pool2d %x {pool_size = [3, 3], strides = [2, 2], padding = [0, 0, 1, 1], ceil_mode = true, count_include_pad = true} : (tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32>
  func.return %y : tensor<1x3x3x3xf32>
}

// CHECK-LABEL: @avg_pool2d_blocked
// CHECK-NEXT: %y = nnvm.avg_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NCHW4c"} : (tensor<1x2x8x8x4xf16>) -> tensor<1x2x4x4x4xf16>
func.func @avg_pool2d_blocked(%x: tensor<1x2x8x8x4xf16>) -> tensor<1x2x4x4x4xf16> {
  %y = nnvm.avg_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NCHW4c"} : (tensor<1x2x8x8x4xf16>) -> tensor<1x2x4x4x4xf16>
  func.return %y : tensor<1x2x4x4x4xf16>
}

// CHECK-LABEL: @global_avg_pool2d
// CHECK-NEXT: %y = nnvm.global_avg_pool2d %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
func.func @global_avg_pool2d(%x: tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32> {
  %y = nnvm.global_avg_pool2d %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
  func.return %y : tensor<1x512x1x1xf32>
}

// CHECK-LABEL: @global_avg_pool2d_blocked
// CHECK-NEXT: %y = nnvm.global_avg_pool2d %x {layout = "NCHW8c"} : (tensor<1x64x7x7x8xf32>) -> tensor<1x64x1x1x8xf32>
func.func @global_avg_pool2d_blocked(%x: tensor<1x64x7x7x8xf32>) -> tensor<1x64x1x1x8xf32> {
  %y = nnvm.global_avg_pool2d %x {layout = "NCHW8c"} : (tensor<1x64x7x7x8xf32>) -> tensor<1x64x1x1x8xf32>
  func.return %y : tensor<1x64x1x1x8xf32>
}

// CHECK-LABEL: @global_max_pool2d
// CHECK-NEXT: %y = nnvm.global_max_pool2d %x : (tensor<2x16x5x3xf32>) -> tensor<2x16x1x1xf32>
func.func @global_max_pool2d(%x: tensor<2x16x5x3xf32>) -> tensor<2x16x1x1xf32> {
  %y = nnvm.global_max_pool2d %x {layout = "NCHW"} : (tensor<2x16x5x3xf32>) -> tensor<2x16x1x1xf32>
  func.return %y : tensor<2x16x1x1xf32>
}

