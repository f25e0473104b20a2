// RUN: nnvm-opt %s -p simplify-inference | filecheck %s
// RUN: nnvm-opt %s -p simplify-inference --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// batch_norm becomes x * scale + shift; the per-channel vectors are computed by graph ops on
// the params (fold-constants precomputes them) and expanded to [C, 1, 1] to broadcast along axis 1.
// CHECK-LABEL: func.func @batch_norm_nchw
// CHECK-NEXT:    %g = nnvm.param "g" : tensor<8xf32>
// CHECK-NEXT:    %b = nnvm.param "b" : tensor<8xf32>
// CHECK-NEXT:    %m = nnvm.param "m" : tensor<8xf32>
// CHECK-NEXT:    %v = nnvm.param "var" : tensor<8xf32>
// CHECK-NEXT:    %y_eps = nnvm.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %y_var_eps = nnvm.add %v, %y_eps : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT:    %y_inv_std = nnvm.rsqrt %y_var_eps : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %y_scale = nnvm.mul %g, %y_inv_std : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %y_mean_scale = nnvm.mul %m, %y_scale : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %y_shift = nnvm.sub %b, %y_mean_scale : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %y_scale_b = nnvm.expand_dims %y_scale {axes = [1, 2]} : (tensor<8xf32>) -> tensor<8x1x1xf32>
// CHECK-NEXT:    %y_shift_b = nnvm.expand_dims %y_shift {axes = [1, 2]} : (tensor<8xf32>) -> tensor<8x1x1xf32>
// CHECK-NEXT:    %y_scaled = nnvm.mul %x, %y_scale_b : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %y = nnvm.add %y_scaled, %y_shift_b : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return %y : tensor<1x8x4x4xf32>
func.func @batch_norm_nchw(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %g = nnvm.param "g" : tensor<8xf32>
  %b = nnvm.param "b" : tensor<8xf32>
  %m = nnvm.param "m" : tensor<8xf32>
  %v = nnvm.param "var" : tensor<8xf32>
  %y = nnvm.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-03} : (tensor<1x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// Along the last axis a [C] vector already broadcasts: no expand_dims.
// CHECK-LABEL: func.func @batch_norm_last_axis
// CHECK-NOT:     nnvm.expand_dims
// CHECK:         %y_scaled = nnvm.mul %x, %y_scale : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %y = nnvm.add %y_scaled, %y_shift : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
func.func @batch_norm_last_axis(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %g = nnvm.param "g" : tensor<6xf32>
  %b = nnvm.param "b" : tensor<6xf32>
  %m = nnvm.param "m" : tensor<6xf32>
  %v = nnvm.param "var" : tensor<6xf32>
  %y = nnvm.batch_norm %x, %g, %b, %m, %v {axis = -1} : (tensor<2x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// A 3-D batch norm over axis 1 expands by one axis; f16 keeps its element type.
// CHECK-LABEL: func.func @batch_norm_f16
// CHECK:         nnvm.constant dense<{{.*}}> : tensor<f16>
// CHECK:         nnvm.expand_dims %y_scale {axes = [1]} : (tensor<4xf16>) -> tensor<4x1xf16>
// CHECK-NOT:     nnvm.batch_norm
func.func @batch_norm_f16(%x: tensor<2x4x3xf16>) -> tensor<2x4x3xf16> {
  %g = nnvm.param "g" : tensor<4xf16>
  %b = nnvm.param "b" : tensor<4xf16>
  %m = nnvm.param "m" : tensor<4xf16>
  %v = nnvm.param "var" : tensor<4xf16>
  %y = nnvm.batch_norm %x, %g, %b, %m, %v : (tensor<2x4x3xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4x3xf16>
  func.return %y : tensor<2x4x3xf16>
}

// dropout and identity disappear; their users read the input.
// CHECK-LABEL: func.func @pass_through
// CHECK-NEXT:    %r = nnvm.relu %x : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %r, %x : tensor<3xf32>, tensor<3xf32>
func.func @pass_through(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %d = nnvm.dropout %x : (tensor<3xf32>) -> tensor<3xf32>
  %r = nnvm.relu %d : (tensor<3xf32>) -> tensor<3xf32>
  %i = nnvm.identity %x : (tensor<3xf32>) -> tensor<3xf32>
  %j = nnvm.identity %i : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r, %j : tensor<3xf32>, tensor<3xf32>
}

// Left alone: layer_norm and instance_norm compute their statistics at run time; a batch norm
// whose shapes are not known yet waits for infer-shapes.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    %g = nnvm.param "g" : tensor<4xf32>
// CHECK-NEXT:    %b = nnvm.param "b" : tensor<4xf32>
// CHECK-NEXT:    %v = nnvm.param "var" : tensor<4xf32>
// CHECK-NEXT:    %l = nnvm.layer_norm %x, %g, %b
// CHECK-NEXT:    %n = nnvm.instance_norm %x, %g, %b
// CHECK-NEXT:    %u = nnvm.batch_norm %l, %g, %b, %g, %v : (tensor<*xf32>,
// CHECK-NEXT:    func.return
func.func @left_alone(%x: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<*xf32>) {
  %g = nnvm.param "g" : tensor<4xf32>
  %b = nnvm.param "b" : tensor<4xf32>
  %v = nnvm.param "var" : tensor<4xf32>
  %l = nnvm.layer_norm %x, %g, %b : (tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  %n = nnvm.instance_norm %x, %g, %b : (tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
  %u = nnvm.batch_norm %l, %g, %b, %g, %v : (tensor<*xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<*xf32>
  func.return %x, %n, %u : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<*xf32>
}

// pow by a constant 3 becomes x * x * x, by 0.5 a square root; 2.5 stays a pow.
// CHECK-LABEL: func.func @pow_small_constants
// CHECK:         %[[SQ:.*]] = nnvm.mul %x, %x : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK-NEXT:    %[[CUBE:.*]] = nnvm.mul %[[SQ]], %x : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK:         %[[ROOT:.*]] = nnvm.sqrt %[[CUBE]] : (tensor<2x5xf32>) -> tensor<2x5xf32>
// CHECK:         nnvm.pow %[[ROOT]], %{{.*}} : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
func.func @pow_small_constants(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %three = nnvm.constant dense<3.0> : tensor<f32>
  %c = nnvm.pow %x, %three : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %half = nnvm.constant dense<0.5> : tensor<f32>
  %r = nnvm.pow %c, %half : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  %odd = nnvm.constant dense<2.5> : tensor<f32>
  %p = nnvm.pow %r, %odd : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
  func.return %p : tensor<2x5xf32>
}

// A group norm as torch exports it (8 channels in 2 groups): reshape to [N, G, rest],
// instance_norm, reshape back. It becomes per-channel means of x and of (x - mean)^2 over the
// spatial axes, averaged over each group's channels on [N, G, C/G] views of those [N, C, 1, 1]
// tensors, and (x - mean) * scale + shift: the activation keeps its [N, C, H, W] shape.
// CHECK-LABEL: func.func @group_norm
// CHECK-NOT:     nnvm.instance_norm
// CHECK:         %[[M:.*]] = nnvm.mean %x {axes = [2, 3], keepdims = true} : (tensor<2x8x3x3xf32>) -> tensor<2x8x1x1xf32>
// CHECK:         %[[MG:.*]] = nnvm.reshape %[[M]] {shape = [2, 2, 4]} : (tensor<2x8x1x1xf32>) -> tensor<2x2x4xf32>
// CHECK:         nnvm.mean %[[MG]] {axes = [2], keepdims = true} : (tensor<2x2x4xf32>) -> tensor<2x2x1xf32>
// CHECK:         %[[D:.*]] = nnvm.sub %x, %{{.*}} : (tensor<2x8x3x3xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x3x3xf32>
// CHECK:         %[[SQ:.*]] = nnvm.mul %[[D]], %[[D]]
// CHECK:         nnvm.mean %[[SQ]] {axes = [2, 3], keepdims = true} : (tensor<2x8x3x3xf32>) -> tensor<2x8x1x1xf32>
// CHECK:         nnvm.rsqrt
// CHECK:         %[[S:.*]] = nnvm.mul %[[D]], %{{.*}} : (tensor<2x8x3x3xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x3x3xf32>
// CHECK:         %[[Y:.*]] = nnvm.add %[[S]], %{{.*}} : (tensor<2x8x3x3xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x3x3xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @group_norm(%x: tensor<2x8x3x3xf32>) -> tensor<2x8x3x3xf32> {
  %g = nnvm.param "g" : tensor<2xf32>
  %b = nnvm.param "b" : tensor<2xf32>
  %r = nnvm.reshape %x {shape = [2, 2, 36]} : (tensor<2x8x3x3xf32>) -> tensor<2x2x36xf32>
  %n = nnvm.instance_norm %r, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<2x2x36xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x36xf32>
  %y = nnvm.reshape %n {shape = [2, 8, 3, 3]} : (tensor<2x2x36xf32>) -> tensor<2x8x3x3xf32>
  func.return %y : tensor<2x8x3x3xf32>
}

// Left alone: an instance norm of [N, C, H, W] itself, and a reshape that is not [N, G, rest].
// CHECK-LABEL: func.func @not_group_norms
// CHECK:         nnvm.instance_norm %x
// CHECK:         nnvm.instance_norm %{{.*}}
func.func @not_group_norms(%x: tensor<2x8x3x3xf32>) -> (tensor<2x8x3x3xf32>, tensor<2x8x3x3xf32>) {
  %g = nnvm.param "g" : tensor<8xf32>
  %b = nnvm.param "b" : tensor<8xf32>
  %n = nnvm.instance_norm %x, %g, %b {epsilon = 1.0e-05 : f64} : (tensor<2x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x3x3xf32>
  %g16 = nnvm.param "g16" : tensor<16xf32>
  %b16 = nnvm.param "b16" : tensor<16xf32>
  %r = nnvm.reshape %x {shape = [1, 16, 9]} : (tensor<2x8x3x3xf32>) -> tensor<1x16x9xf32>
  %m = nnvm.instance_norm %r, %g16, %b16 {epsilon = 1.0e-05 : f64} : (tensor<1x16x9xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x9xf32>
  %back = nnvm.reshape %m {shape = [2, 8, 3, 3]} : (tensor<1x16x9xf32>) -> tensor<2x8x3x3xf32>
  func.return %n, %back : tensor<2x8x3x3xf32>, tensor<2x8x3x3xf32>
}

// STATS:      'simplify-inference'
// STATS-NEXT:   (S) 3 batch-norms - batch_norm ops simplified
// STATS-NEXT:   (S) 3 removed-ops - dropout/identity ops removed
// STATS-NEXT:   (S) 2 powers - pow by 1, 2, 3, 4 or 0.5 simplified
// STATS-NEXT:   (S) 1 group-norms - group norms in channels
