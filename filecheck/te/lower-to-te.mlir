// lower-to-te: each graph kernel becomes te computes through its ops' te definitions; graph
// functions that call kernels are left alone.
// RUN: nnvm-opt %s --split-input-file -p lower-to-te | filecheck %s

// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK-SAME: (%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[P:.*]] = te.compute "conv2d.pad" [i, j, k, l] template "pad" = {{.*}}select({{.*}}, %x[i, j, v0, v1], 0.0) : (tensor<1x3x8x8xf32>) -> tensor<1x3x10x10xf32>
// CHECK-NEXT: %[[C:.*]] = te.compute "conv2d" [n, oc, oh, ow] sum [ic : 3, kh : 3, kw : 3] template "conv2d_nchw" = %[[P]][n, ic, oh + kh, ow + kw] * %w[oc, ic, kh, kw]
// CHECK-NEXT: %[[A:.*]] = te.compute "add" [i, j, k, l] = %[[C]][i, j, k, l] + %b[j, 0, 0]
// CHECK-NEXT: %[[R:.*]] = te.compute "relu" [i, j, k, l] = max(%[[A]][i, j, k, l], 0.0)
// CHECK-NEXT: func.return %[[R]] : tensor<1x4x8x8xf32>
// CHECK-LABEL: func.func @main
// CHECK: func.call @fused_conv2d_add_relu
func.func private @fused_conv2d_add_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = nnvm.relu %a : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = nnvm.param "w" : tensor<4x3x3x3xf32>
  %b = nnvm.param "b" : tensor<4x1x1xf32>
  %r = func.call @fused_conv2d_add_relu(%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}

// -----

// Blocked layouts get direct formulas; reductions name their axes.
// CHECK-LABEL: func.func @blocked
// CHECK: te.compute "conv2d" [n, ocb, oh, ow, oc] sum [icb : 2, kh : 1, kw : 1, ic : 8] template "conv2d_nchwc" = %x[n, icb, oh * 2 + kh, ow * 2 + kw, ic] * %w[ocb, icb, kh, kw, ic, oc]
// CHECK: te.compute "dense" [i0, n] sum [k : 16] template "dense" = %v[i0, k] * %m[n, k]
// CHECK: te.compute "softmax.max" [i, j] max [r1 : 10] = %s[i, r1]
// CHECK: te.compute "softmax.exp" [i, j] = exp(%s[i, j] - %{{.*}}[i, 0])
// CHECK: te.compute "softmax.sum" [i, j] sum [r1 : 10] = %{{.*}}[i, r1]
// CHECK: te.compute "softmax" [i, j] = %{{.*}}[i, j] / %{{.*}}[i, 0]
func.func @blocked(%x: tensor<1x2x8x8x8xf32>, %w: tensor<2x2x1x1x8x8xf32>, %v: tensor<2x16xf32>, %m: tensor<4x16xf32>, %s: tensor<3x10xf32>) -> tensor<3x10xf32> {
  %c = nnvm.conv2d %x, %w {strides = [2, 2], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x8x8x8xf32>, tensor<2x2x1x1x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  %d = nnvm.dense %v, %m : (tensor<2x16xf32>, tensor<4x16xf32>) -> tensor<2x4xf32>
  %y = nnvm.softmax %s : (tensor<3x10xf32>) -> tensor<3x10xf32>
  func.return %y : tensor<3x10xf32>
}
