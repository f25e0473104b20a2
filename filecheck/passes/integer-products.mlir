// RUN: nnvm-opt %s -p integer-products | filecheck %s
// RUN: nnvm-opt %s -p 'integer-products,alter-layout{dot_lanes=16}' | filecheck %s --check-prefix=PACK
// RUN: nnvm-opt %s -p 'integer-products,alter-layout{dot_lanes=16}' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// quantize-int8's exact-float dense (int8 operands cast to f32, the sum cast back to i32)
// becomes an integer dense of unsigned activations (x + 128) and the int8 weight, minus the
// compensation 128 * sum_k w[n, k], which fold-constants computes from the weight.
// CHECK-LABEL: func.func @dense_q
// CHECK-NEXT:    %w = nnvm.param "w" : tensor<32x8xi8>
// CHECK-NEXT:    %acc_in_i16 = nnvm.cast %xq {to = "int16"} : (tensor<4x8xi8>) -> tensor<4x8xi16>
// CHECK-NEXT:    %acc_offset = nnvm.constant dense<128> : tensor<i16>
// CHECK-NEXT:    %acc_in_offset = nnvm.add %acc_in_i16, %acc_offset
// CHECK-NEXT:    %acc_in_u8 = nnvm.cast %acc_in_offset {to = "uint8"} : (tensor<4x8xi16>) -> tensor<4x8xui8>
// CHECK-NEXT:    %acc_u8s8 = nnvm.dense %acc_in_u8, %w : (tensor<4x8xui8>, tensor<32x8xi8>) -> tensor<4x32xi32>
// CHECK-NEXT:    %acc_w_i32 = nnvm.cast %w {to = "int32"}
// CHECK-NEXT:    %acc_wsum = nnvm.sum %acc_w_i32 {axes = [1]} : (tensor<32x8xi32>) -> tensor<32xi32>
// CHECK-NEXT:    %acc_offset_i32 = nnvm.constant dense<128> : tensor<i32>
// CHECK-NEXT:    %acc_compensation = nnvm.mul %acc_wsum, %acc_offset_i32
// CHECK-NEXT:    %acc = nnvm.sub %acc_u8s8, %acc_compensation : (tensor<4x32xi32>, tensor<32xi32>) -> tensor<4x32xi32>
// CHECK-NEXT:    func.return %acc

// alter-layout packs the constant weight for 16-lane byte dot products: [N/16, K/4, 16, 4].
// PACK-LABEL: func.func @dense_q
// PACK:         %acc_u8s8_w_blocks = nnvm.reshape %w {shape = [2, 16, 2, 4]} : (tensor<32x8xi8>) -> tensor<2x16x2x4xi8>
// PACK-NEXT:    %acc_u8s8_w_packed = nnvm.transpose %acc_u8s8_w_blocks {perm = [0, 2, 1, 3]} : (tensor<2x16x2x4xi8>) -> tensor<2x2x16x4xi8>
// PACK-NEXT:    %acc_u8s8 = nnvm.dense %acc_in_u8, %acc_u8s8_w_packed {weight_lanes = 16} : (tensor<4x8xui8>, tensor<2x2x16x4xi8>) -> tensor<4x32xi32>
func.func @dense_q(%xq: tensor<4x8xi8>) -> tensor<4x32xi32> {
  %w = nnvm.param "w" : tensor<32x8xi8>
  %xf = nnvm.cast %xq {to = "float32"} : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %wf = nnvm.cast %w {to = "float32"} : (tensor<32x8xi8>) -> tensor<32x8xf32>
  %d = nnvm.dense %xf, %wf : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %acc = nnvm.cast %d {to = "int32"} : (tensor<4x32xf32>) -> tensor<4x32xi32>
  func.return %acc : tensor<4x32xi32>
}

// Two activations: no constant weight sum to subtract, the float form stays.
// CHECK-LABEL: func.func @two_activations
// CHECK:         nnvm.dense %af, %bf : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
func.func @two_activations(%a: tensor<4x8xi8>, %b: tensor<32x8xi8>) -> tensor<4x32xi32> {
  %af = nnvm.cast %a {to = "float32"} : (tensor<4x8xi8>) -> tensor<4x8xf32>
  %bf = nnvm.cast %b {to = "float32"} : (tensor<32x8xi8>) -> tensor<32x8xf32>
  %d = nnvm.dense %af, %bf : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %acc = nnvm.cast %d {to = "int32"} : (tensor<4x32xf32>) -> tensor<4x32xi32>
  func.return %acc : tensor<4x32xi32>
}

// N = 20 is no multiple of 16: the weight stays [N, K] (the integer dense runs unpacked).
// PACK-LABEL: func.func @odd_columns
// PACK:         nnvm.dense %{{.*}}, %w : (tensor<3x8xui8>, tensor<20x8xi8>) -> tensor<3x20xi32>
func.func @odd_columns(%xq: tensor<3x8xi8>) -> tensor<3x20xi32> {
  %w = nnvm.param "w" : tensor<20x8xi8>
  %xf = nnvm.cast %xq {to = "float32"} : (tensor<3x8xi8>) -> tensor<3x8xf32>
  %wf = nnvm.cast %w {to = "float32"} : (tensor<20x8xi8>) -> tensor<20x8xf32>
  %d = nnvm.dense %xf, %wf : (tensor<3x8xf32>, tensor<20x8xf32>) -> tensor<3x20xf32>
  %acc = nnvm.cast %d {to = "int32"} : (tensor<3x20xf32>) -> tensor<3x20xi32>
  func.return %acc : tensor<3x20xi32>
}


// A conv pads its unsigned input with 128 (the byte that stands for 0), and its compensation
// sums each output channel's weights over (I, KH, KW), shaped [O, 1, 1] for NCHW.
// CHECK-LABEL: func.func @conv_q
// CHECK:         %acc_u8s8 = nnvm.conv2d %acc_in_u8, %w {padding = [1, 1, 1, 1], pad_value = 128} : (tensor<1x16x6x6xui8>, tensor<16x16x3x3xi8>) -> tensor<1x16x6x6xi32>
// CHECK:         %acc_wsum = nnvm.sum %acc_w_i32 {axes = [1, 2, 3]} : (tensor<16x16x3x3xi32>) -> tensor<16xi32>
// CHECK-NEXT:    %acc_wsum_c11 = nnvm.reshape %acc_wsum {shape = [16, 1, 1]}
// CHECK:         %acc = nnvm.sub %acc_u8s8, %acc_compensation : (tensor<1x16x6x6xi32>, tensor<16x1x1xi32>) -> tensor<1x16x6x6xi32>
// NCHW16c data and the weight packed [O/16, I/16, KH, KW, 4, 16, 4] for the dot products.
// PACK-LABEL: func.func @conv_q
// PACK:         %acc_u8s8_w_blocks = nnvm.reshape %w {shape = [1, 16, 1, 4, 4, 3, 3]}
// PACK-NEXT:    %acc_u8s8_w_packed = nnvm.transpose %acc_u8s8_w_blocks {perm = [0, 2, 5, 6, 3, 1, 4]} : (tensor<1x16x1x4x4x3x3xi8>) -> tensor<1x1x3x3x4x16x4xi8>
// PACK:         nnvm.conv2d %acc_u8s8_in_NCHW16c, %acc_u8s8_w_packed {padding = [1, 1, 1, 1], data_layout = "NCHW16c", kernel_layout = "OIHW16i16o", pad_value = 128, weight_lanes = 16}
func.func @conv_q(%xq: tensor<1x16x6x6xi8>) -> tensor<1x16x6x6xi32> {
  %w = nnvm.param "w" : tensor<16x16x3x3xi8>
  %xf = nnvm.cast %xq {to = "float32"} : (tensor<1x16x6x6xi8>) -> tensor<1x16x6x6xf32>
  %wf = nnvm.cast %w {to = "float32"} : (tensor<16x16x3x3xi8>) -> tensor<16x16x3x3xf32>
  %d = nnvm.conv2d %xf, %wf {padding = [1, 1, 1, 1]} : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %acc = nnvm.cast %d {to = "int32"} : (tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xi32>
  func.return %acc : tensor<1x16x6x6xi32>
}
// STATS: 'integer-products'
// STATS:   (S) 2 dense - int8 dense ops computed in integers
// STATS:   (S) 1 conv2d - int8 conv2d ops computed in integers
// STATS: 'alter-layout'
// STATS:   (S) 1 blocked-convs - conv2d ops blocked
// STATS:   (S) 1 dot-weights - int8 dense weights packed for byte dot products
