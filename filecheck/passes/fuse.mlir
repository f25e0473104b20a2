// RUN: nnvm-opt %s --split-input-file -p fuse | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p 'fuse{enable=false}' | filecheck %s --check-prefix=OFF
// RUN: nnvm-opt %s --split-input-file -p 'fuse{max-group-size=2}' | filecheck %s --check-prefix=MAX2

// conv2d absorbs its epilogue (bias, residual add, relu); identical groups share one kernel;
// opaque softmax stands alone; an injective reshape does not join the pool's group.
// CHECK-LABEL: func.func @main
// CHECK: %[[R1:.*]] = func.call @[[K1:fused_conv2d_add_relu_[0-9a-f]{8}]](%x, %w1, %b1)
// CHECK: %[[R2:.*]] = func.call @fused_conv2d_add_add_relu_{{[0-9a-f]+}}(%[[R1]], %w2, %b2, %x)
// CHECK: func.call @[[K1]](%[[R2]], %w1, %b1)
// CHECK: func.call @fused_global_avg_pool2d_
// CHECK: func.call @fused_reshape_
// CHECK: func.call @fused_softmax_
// CHECK: func.func private @[[K1]](%0: tensor<1x4x8x8xf32>, %1: tensor<4x4x3x3xf32>, %2: tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> attributes {nnvm.pattern = "out-elemwise-fusable"}
// CHECK-NEXT: nnvm.conv2d %0, %1
// CHECK-NEXT: nnvm.add
// CHECK-NEXT: nnvm.relu
// CHECK-NEXT: func.return
// CHECK-NOT: func.func private @fused_conv2d_add_relu_
// OFF-COUNT-13: func.call @fused_
// OFF-NOT: func.call
// OFF: // -----
// MAX2: func.call @fused_conv2d_add_{{[0-9a-f]+}}(%x, %w1, %b1)
// MAX2-NEXT: func.call @fused_relu_
func.func @main(%x: tensor<1x4x8x8xf32>) -> tensor<1x4xf32> {
  %w1 = nnvm.param "w1" : tensor<4x4x3x3xf32>
  %b1 = nnvm.param "b1" : tensor<4x1x1xf32>
  %w2 = nnvm.param "w2" : tensor<4x4x3x3xf32>
  %b2 = nnvm.param "b2" : tensor<4x1x1xf32>
  %c1 = nnvm.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a1 = nnvm.add %c1, %b1 : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r1 = nnvm.relu %a1 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c2 = nnvm.conv2d %r1, %w2 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a2 = nnvm.add %c2, %b2 : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %s = nnvm.add %a2, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r2 = nnvm.relu %s : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %c3 = nnvm.conv2d %r2, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a3 = nnvm.add %c3, %b1 : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r3 = nnvm.relu %a3 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %g = nnvm.global_avg_pool2d %r3 : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %f = nnvm.reshape %g {shape = [1, 4]} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  %sm = nnvm.softmax %f : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %sm : tensor<1x4xf32>
}

// -----

// A value used outside a group ends it: %e feeds both the add and the return, so exp stays
// alone; the injective chain transpose -> reshape -> neg fuses; the reduction absorbs its
// elementwise producer.
// CHECK-LABEL: func.func @shared
// CHECK: %[[E:.*]] = func.call @fused_exp_
// CHECK: func.call @fused_add_
// CHECK: func.call @fused_transpose_reshape_neg_
// CHECK: func.call @fused_mul_sum_
// CHECK: func.return %[[E]],
func.func @shared(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2xf32>) {
  %e = nnvm.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = nnvm.add %e, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = nnvm.transpose %x {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %r = nnvm.reshape %t {shape = [6]} : (tensor<3x2xf32>) -> tensor<6xf32>
  %n = nnvm.neg %r : (tensor<6xf32>) -> tensor<6xf32>
  %m = nnvm.mul %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = nnvm.sum %m {axes = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %e, %a, %n, %s : tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2xf32>
}

// -----

// A diamond: the matmul's biased result %x feeds both GELU branches, which meet again in
// %g; every op between may join, so the whole GELU becomes the matmul's epilogue.
// CHECK-LABEL: func.func @gelu_epilogue
// CHECK:         %[[G:.*]] = func.call @fused_matmul_add_div_erf_add_and2more_
// CHECK-NEXT:    func.return %[[G]]
// CHECK:       func.func private @fused_matmul_add_div_erf_add_and2more_
// CHECK:         nnvm.matmul
// CHECK-NEXT:    nnvm.add
// CHECK-NEXT:    nnvm.div
// CHECK-NEXT:    nnvm.erf
// CHECK-NEXT:    nnvm.add
// CHECK-NEXT:    nnvm.mul
// CHECK-NEXT:    nnvm.mul
// CHECK-NEXT:    func.return
func.func @gelu_epilogue(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %c1 = nnvm.constant dense<1.0> : tensor<f32>
  %half = nnvm.constant dense<0.5> : tensor<f32>
  %sqrt2 = nnvm.constant dense<1.41421354> : tensor<f32>
  %m = nnvm.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %x = nnvm.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %d = nnvm.div %x, %sqrt2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = nnvm.erf %d : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = nnvm.add %e, %c1 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %q = nnvm.mul %x, %p : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = nnvm.mul %q, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  func.return %g : tensor<4x16xf32>
}

// -----

// Not a diamond: the second use of %x leaves through the return, so the group ends at %x.
// CHECK-LABEL: func.func @open_diamond
// CHECK-NEXT:    %[[X:.*]] = func.call @fused_matmul_add_
// CHECK-NEXT:    %[[E:.*]] = func.call @fused_erf_
// CHECK-NEXT:    func.return %[[X]], %[[E]]
func.func @open_diamond(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %m = nnvm.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %x = nnvm.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %e = nnvm.erf %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %x, %e : tensor<4x16xf32>, tensor<4x16xf32>
}
