// RUN: nnvm-opt %s -p fold-scale-axis | filecheck %s
// RUN: nnvm-opt %s -p fold-scale-axis --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// A per-output-channel scale after conv2d moves into the weight: w * reshape(s, [O, 1, 1, 1]).
// CHECK-LABEL: func.func @conv_scale
// CHECK:         %s_w = nnvm.reshape %s {shape = [8, 1, 1, 1]} : (tensor<8x1x1xf32>) -> tensor<8x1x1x1xf32>
// CHECK-NEXT:    %w_scaled = nnvm.mul %w, %s_w : (tensor<8x4x3x3xf32>, tensor<8x1x1x1xf32>) -> tensor<8x4x3x3xf32>
// CHECK-NEXT:    %y = nnvm.conv2d %x, %w_scaled {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    func.return %y
func.func @conv_scale(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = nnvm.param "w" : tensor<8x4x3x3xf32>
  %s = nnvm.param "s" : tensor<8x1x1xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %y = nnvm.mul %c, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// Through a bias: (conv + b) * s = conv(x, w * s) + b * s; the scale may be computed from
// params and constants (here: a constant times a param) and be on either side of the mul.
// CHECK-LABEL: func.func @conv_bias_add_scale
// CHECK:         %s = nnvm.mul %k, %p
// CHECK-NEXT:    %s_w = nnvm.reshape %s {shape = [8, 1, 1, 1]} : (tensor<1x8x1x1xf32>) -> tensor<8x1x1x1xf32>
// CHECK-NEXT:    %w_scaled = nnvm.mul %w, %s_w
// CHECK-NEXT:    %c = nnvm.conv2d %x, %w_scaled {groups = 2}
// CHECK-NEXT:    %s_vec = nnvm.reshape %s {shape = [8]} : (tensor<1x8x1x1xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %b_scaled = nnvm.mul %b, %s_vec : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT:    %y = nnvm.bias_add %c, %b_scaled
// CHECK-NEXT:    func.return %y
func.func @conv_bias_add_scale(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = nnvm.param "w" : tensor<8x2x1x1xf32>
  %b = nnvm.param "b" : tensor<8xf32>
  %p = nnvm.param "p" : tensor<1x8x1x1xf32>
  %k = nnvm.constant dense<2.0> : tensor<f32>
  %s = nnvm.mul %k, %p : (tensor<f32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x1xf32>
  %c = nnvm.conv2d %x, %w {groups = 2} : (tensor<1x4x6x6xf32>, tensor<8x2x1x1xf32>) -> tensor<1x8x6x6xf32>
  %a = nnvm.bias_add %c, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %y = nnvm.mul %s, %a : (tensor<1x8x1x1xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// A broadcast add of a [C, 1, 1] bias: the new bias is b * s.
// CHECK-LABEL: func.func @conv_add_scale
// CHECK:         %c = nnvm.conv2d %x, %w_scaled
// CHECK-NEXT:    %b_scaled = nnvm.mul %b, %s : (tensor<8x1x1xf32>, tensor<8x1x1xf32>) -> tensor<8x1x1xf32>
// CHECK-NEXT:    %y = nnvm.add %c, %b_scaled
func.func @conv_add_scale(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = nnvm.param "w" : tensor<8x4x3x3xf32>
  %b = nnvm.param "b" : tensor<8x1x1xf32>
  %s = nnvm.param "s" : tensor<8x1x1xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %a = nnvm.add %b, %c : (tensor<8x1x1xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %y = nnvm.mul %a, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// Forward: a per-input-channel scale before a conv2d (groups = 1) multiplies the weight's I axis.
// CHECK-LABEL: func.func @scale_conv
// CHECK:         %s_w = nnvm.reshape %s {shape = [1, 4, 1, 1]} : (tensor<4x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %w_scaled = nnvm.mul %w, %s_w : (tensor<8x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<8x4x3x3xf32>
// CHECK-NEXT:    %c = nnvm.conv2d %x, %w_scaled {padding = [1, 1, 1, 1]}
func.func @scale_conv(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = nnvm.param "w" : tensor<8x4x3x3xf32>
  %s = nnvm.param "s" : tensor<4x1x1xf32>
  %m = nnvm.mul %x, %s : (tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %c = nnvm.conv2d %m, %w {padding = [1, 1, 1, 1]} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %c : tensor<1x8x6x6xf32>
}

// Forward into a depthwise conv with channel multiplier 2: output channel o reads input
// channel o / 2, so the scale is spread over the groups.
// CHECK-LABEL: func.func @scale_depthwise
// CHECK:         %s_groups = nnvm.reshape %s {shape = [4, 1, 1]} : (tensor<1x4x1x1xf32>) -> tensor<4x1x1xf32>
// CHECK-NEXT:    %s_spread = nnvm.broadcast_to %s_groups {shape = [4, 2, 1]} : (tensor<4x1x1xf32>) -> tensor<4x2x1xf32>
// CHECK-NEXT:    %s_w = nnvm.reshape %s_spread {shape = [8, 1, 1, 1]} : (tensor<4x2x1xf32>) -> tensor<8x1x1x1xf32>
// CHECK-NEXT:    %w_scaled = nnvm.mul %w, %s_w
// CHECK-NEXT:    %c = nnvm.conv2d %x, %w_scaled {padding = [1, 1, 1, 1], groups = 4}
func.func @scale_depthwise(%x: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = nnvm.param "w" : tensor<8x1x3x3xf32>
  %s = nnvm.param "s" : tensor<1x4x1x1xf32>
  %m = nnvm.mul %s, %x : (tensor<1x4x1x1xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %c = nnvm.conv2d %m, %w {padding = [1, 1, 1, 1], groups = 4} : (tensor<1x4x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %c : tensor<1x8x6x6xf32>
}

// dense: scales along the last axis, both directions.
// CHECK-LABEL: func.func @dense_scales
// CHECK:         %s_in_w = nnvm.reshape %s_in {shape = [1, 6]} : (tensor<6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT:    %w_scaled = nnvm.mul %w, %s_in_w : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %s_out_w = nnvm.reshape %s_out {shape = [4, 1]} : (tensor<1x4xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %w_scaled_scaled = nnvm.mul %w_scaled, %s_out_w
// CHECK-NEXT:    %y = nnvm.dense %x, %w_scaled_scaled
// CHECK-NEXT:    func.return %y
func.func @dense_scales(%x: tensor<3x6xf32>) -> tensor<3x4xf32> {
  %w = nnvm.param "w" : tensor<4x6xf32>
  %s_in = nnvm.param "s_in" : tensor<6xf32>
  %s_out = nnvm.param "s_out" : tensor<1x4xf32>
  %m = nnvm.mul %x, %s_in : (tensor<3x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  %d = nnvm.dense %m, %w : (tensor<3x6xf32>, tensor<4x6xf32>) -> tensor<3x4xf32>
  %y = nnvm.mul %d, %s_out : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// Left alone: a runtime scale, a scale varying along W, one that would grow the result, a conv
// result with another use, a bias add with another use, a scaled input read elsewhere, a
// blocked conv.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     _scaled
// CHECK:         func.return
func.func @left_alone(%x: tensor<1x8x6x6xf32>, %r: tensor<8x1x1xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<2x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x1x6x6x8xf32>) {
  %w = nnvm.param "w" : tensor<8x8x1x1xf32>
  %s = nnvm.param "s" : tensor<8x1x1xf32>
  %sw = nnvm.param "sw" : tensor<6xf32>
  %sn = nnvm.param "sn" : tensor<2x8x1x1xf32>
  %b = nnvm.param "b" : tensor<8xf32>
  %c1 = nnvm.conv2d %x, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %y1 = nnvm.mul %c1, %r : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %c2 = nnvm.conv2d %x, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %y2 = nnvm.mul %c2, %sw : (tensor<1x8x6x6xf32>, tensor<6xf32>) -> tensor<1x8x6x6xf32>
  %c3 = nnvm.conv2d %x, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %y3 = nnvm.mul %c3, %sn : (tensor<1x8x6x6xf32>, tensor<2x8x1x1xf32>) -> tensor<2x8x6x6xf32>
  %c4 = nnvm.conv2d %x, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %y4 = nnvm.mul %c4, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %c5 = nnvm.conv2d %x, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %a5 = nnvm.bias_add %c5, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %y5 = nnvm.mul %a5, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %m6 = nnvm.mul %x, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %y6 = nnvm.conv2d %m6, %w : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %xb = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x8x6x6xf32>) -> tensor<1x1x6x6x8xf32>
  %wb = nnvm.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW8i8o"} : (tensor<8x8x1x1xf32>) -> tensor<1x1x1x1x8x8xf32>
  %c7 = nnvm.conv2d %xb, %wb {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x1x6x6x8xf32>, tensor<1x1x1x1x8x8xf32>) -> tensor<1x1x6x6x8xf32>
  %sb = nnvm.param "sb" : tensor<1x1x1x1x8xf32>
  %y7 = nnvm.mul %c7, %sb : (tensor<1x1x6x6x8xf32>, tensor<1x1x1x1x8xf32>) -> tensor<1x1x6x6x8xf32>
  func.return %y1, %y2, %y3, %y4, %c4, %y5, %a5, %y6, %m6, %y7 : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<2x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x1x6x6x8xf32>
}

// STATS:      'fold-scale-axis'
// STATS-NEXT:   (S) 4 backward - output-channel scales folded
// STATS-NEXT:   (S) 3 forward - input-channel scales folded
