// RUN: nnvm-opt %s --split-input-file -p gradient | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p 'gradient{wrt="x"}' | filecheck %s --check-prefix=WRTX
// RUN: not nnvm-opt %s --split-input-file -p 'gradient{wrt="nope"}' 2>&1 | filecheck %s --check-prefix=BAD

// The backward pass follows the forward one: relu's VJP masks the cotangent, dense's weight
// gradient is dy^T x; the gradient is a named extra result.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32>, tensor<4x3xf32> {nnvm.name = "w.grad"})
// CHECK: %[[S:.*]] = nnvm.sum %r
// CHECK: nnvm.greater %d
// CHECK: %[[M:.*]] = nnvm.where
// CHECK: %[[T:.*]] = nnvm.transpose %[[M]] {perm = [1, 0]}
// CHECK: %[[G:.*]] = nnvm.matmul %[[T]], %x
// CHECK: func.return %[[S]], %[[G]] : tensor<f32>, tensor<4x3xf32>
// WRTX-LABEL: func.func @main
// WRTX-SAME: {nnvm.name = "x.grad"}
// WRTX: nnvm.dense %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// BAD: error: gradient: no param or argument named 'nope' (known: w, x)
func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
  %w = nnvm.param "w" : tensor<4x3xf32>
  %d = nnvm.dense %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %r = nnvm.relu %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = nnvm.sum %r {axes = [0, 1]} : (tensor<2x4xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}

// -----

// Fan-out: the cotangents of a value used twice are summed; an op without a VJP on the path
// is reported by name.
// CHECK-LABEL: func.func @main
// CHECK: nnvm.add
// CHECK: func.return
func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
  %w = nnvm.param "w" : tensor<3xf32>
  %a = nnvm.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = nnvm.mul %a, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = nnvm.sum %b {axes = [0]} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
