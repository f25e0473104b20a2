// RUN: nnvm-opt %s -p 'fuse{enable=false},plan-memory' | filecheck %s

// An elementwise kernel writes over its input when that input dies there (in place); a
// conv2d never does.
// CHECK: %c = func.call @fused_conv2d_{{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %r = func.call @fused_relu_{{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %e = func.call @fused_exp_{{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %d = func.call @fused_conv2d_{{.*}} {nnvm.storage = array<i64: 1>, nnvm.offset = array<i64: 1024>}
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = nnvm.param "w" : tensor<4x4x3x3xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = nnvm.relu %c : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %e = nnvm.exp %r : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %d = nnvm.conv2d %e, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = nnvm.sigmoid %d : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %s : tensor<1x4x8x8xf32>
}
