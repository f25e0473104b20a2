// RUN: nnvm-opt %s -p fuse,plan-memory --mlir-pass-statistics 2>&1 | filecheck %s

// Liveness-based reuse: r1's storage is free once r2 is computed, so r3 reuses it. Storages
// are 64-byte aligned; the graph result is the caller's buffer, not in the arena. The reshape
// of the pooled vector is a view: no storage of its own (the naive bytes are r1, r2, r3 and
// the pool's 64), the softmax reads the pool's.
// CHECK: (S) 2048 planned-bytes - bytes in the arena
// CHECK: (S) 3136 naive-bytes - bytes without reuse
// CHECK: func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4xf32> attributes {nnvm.memory_plan = {arena_bytes = 2048 : i64, naive_bytes = 3136 : i64, storages = array<i64: 1024, 1024>}}
// CHECK: %r1 = func.call {{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %r2 = func.call {{.*}} {nnvm.storage = array<i64: 1>, nnvm.offset = array<i64: 1024>}
// CHECK: %r3 = func.call {{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %f = func.call @fused_reshape_{{[0-9a-f]+}}(%g) {nnvm.view} :
// CHECK: %sm = func.call @fused_softmax_{{[0-9a-f]+}}(%f) :
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4xf32> {
  %w1 = nnvm.param "w1" : tensor<4x4x3x3xf32>
  %c1 = nnvm.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r1 = nnvm.relu %c1 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c2 = nnvm.conv2d %r1, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r2 = nnvm.relu %c2 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c3 = nnvm.conv2d %r2, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r3 = nnvm.relu %c3 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %g = nnvm.global_avg_pool2d %r3 : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %f = nnvm.reshape %g {shape = [1, 4]} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %sm = nnvm.softmax %f : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %sm : tensor<1x4xf32>
}
