// RUN: nnvm-opt %s -p alter-layout | filecheck %s
// RUN: nnvm-opt %s -p 'alter-layout{block=4}' | filecheck %s --check-prefix=B4
// RUN: nnvm-opt %s -p 'alter-layout{block=16}' | filecheck %s --check-prefix=B16
// RUN: nnvm-opt %s -p alter-layout --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: not nnvm-opt %s -p 'alter-layout{block=0}' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: error: alter-layout: block must be >= 1, got 0
// BAD-NOT: Traceback

// A ResNet-style block: both convs go to NCHW8c / OIHW8i8o; bias_add, relu, the per-channel
// scale, the residual add and both pools follow; one transform in, one out (before flatten).
// CHECK-LABEL: func.func @residual
// CHECK:         %x_NCHW8c = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %w1_OIHW8i8o = nnvm.layout_transform %w1 {src_layout = "OIHW", dst_layout = "OIHW8i8o"} : (tensor<16x16x3x3xf32>) -> tensor<2x2x3x3x8x8xf32>
// CHECK-NEXT:    %c1 = nnvm.conv2d %x_NCHW8c, %w1_OIHW8i8o {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x8x8x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %b1_1c11 = nnvm.reshape %b1 {shape = [1, 16, 1, 1]} : (tensor<16xf32>) -> tensor<1x16x1x1xf32>
// CHECK-NEXT:    %b1_NCHW8c = nnvm.layout_transform %b1_1c11 {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x1x1xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %a1 = nnvm.add %c1, %b1_NCHW8c : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %r1 = nnvm.relu %a1 : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %w2_OIHW8i8o = nnvm.layout_transform %w2
// CHECK-NEXT:    %c2 = nnvm.conv2d %r1, %w2_OIHW8i8o
// CHECK-NEXT:    %s_NCHW8c = nnvm.layout_transform %s {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x1x1xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    %m = nnvm.mul %c2, %s_NCHW8c : (tensor<1x2x8x8x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %sum = nnvm.add %m, %r1 : (tensor<1x2x8x8x8xf32>, tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// CHECK-NEXT:    %p = nnvm.max_pool2d %sum {pool_size = [2, 2], strides = [2, 2], layout = "NCHW8c"} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK-NEXT:    %g = nnvm.global_avg_pool2d %p {layout = "NCHW8c"} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK-NEXT:    [[G:%.*]] = nnvm.layout_transform %g {src_layout = "NCHW8c", dst_layout = "NCHW"} : (tensor<1x2x1x1x8xf32>) -> tensor<1x16x1x1xf32>
// CHECK-NEXT:    %f = nnvm.flatten [[G]] : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
// CHECK-NEXT:    func.return %f
// With block=4 the kernel is OIHW4i4o.
// B4-LABEL: func.func @residual
// B4:         nnvm.conv2d %x_NCHW4c, %w1_OIHW4i4o {padding = [1, 1, 1, 1], data_layout = "NCHW4c", kernel_layout = "OIHW4i4o"} : (tensor<1x4x8x8x4xf32>, tensor<4x4x3x3x4x4xf32>) -> tensor<1x4x8x8x4xf32>
func.func @residual(%x: tensor<1x16x8x8xf32>) -> tensor<1x16xf32> {
  %w1 = nnvm.param "w1" : tensor<16x16x3x3xf32>
  %b1 = nnvm.param "b1" : tensor<16xf32>
  %w2 = nnvm.param "w2" : tensor<16x16x3x3xf32>
  %s = nnvm.param "s" : tensor<1x16x1x1xf32>
  %c1 = nnvm.conv2d %x, %w1 {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %a1 = nnvm.bias_add %c1, %b1 : (tensor<1x16x8x8xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = nnvm.relu %a1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c2 = nnvm.conv2d %r1, %w2 {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %m = nnvm.mul %c2, %s : (tensor<1x16x8x8xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %sum = nnvm.add %m, %r1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %p = nnvm.max_pool2d %sum {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %g = nnvm.global_avg_pool2d %p : (tensor<1x16x4x4xf32>) -> tensor<1x16x1x1xf32>
  %f = nnvm.flatten %g : (tensor<1x16x1x1xf32>) -> tensor<1x16xf32>
  func.return %f : tensor<1x16xf32>
}

// Depthwise (kernel OIHW1i8o), pointwise, concat along C and avg pool stay blocked.
// CHECK-LABEL: func.func @depthwise_concat
// CHECK:         %wd_OIHW1i8o = nnvm.layout_transform %wd {src_layout = "OIHW", dst_layout = "OIHW1i8o"} : (tensor<8x1x3x3xf32>) -> tensor<1x1x3x3x1x8xf32>
// CHECK-NEXT:    %d = nnvm.conv2d %x_NCHW8c, %wd_OIHW1i8o {padding = [1, 1, 1, 1], groups = 8, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"}
// CHECK-NEXT:    %r = nnvm.clip %d {min = 0.0, max = 6.0} : (tensor<1x1x5x5x8xf32>) -> tensor<1x1x5x5x8xf32>
// CHECK:         %cat = nnvm.concat %p, %d {axis = 1} : (tensor<1x1x5x5x8xf32>, tensor<1x1x5x5x8xf32>) -> tensor<1x2x5x5x8xf32>
// CHECK-NEXT:    %av = nnvm.avg_pool2d %cat {pool_size = [3, 3], padding = [1, 1, 1, 1], layout = "NCHW8c"}
// CHECK-NEXT:    [[AV:%.*]] = nnvm.layout_transform %av {src_layout = "NCHW8c", dst_layout = "NCHW"}
// CHECK-NEXT:    func.return [[AV]]
func.func @depthwise_concat(%x: tensor<1x8x5x5xf32>) -> tensor<1x16x5x5xf32> {
  %wd = nnvm.param "wd" : tensor<8x1x3x3xf32>
  %wp = nnvm.param "wp" : tensor<8x8x1x1xf32>
  %d = nnvm.conv2d %x, %wd {padding = [1, 1, 1, 1], groups = 8} : (tensor<1x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x5x5xf32>
  %r = nnvm.clip %d {min = 0.0, max = 6.0} : (tensor<1x8x5x5xf32>) -> tensor<1x8x5x5xf32>
  %p = nnvm.conv2d %r, %wp : (tensor<1x8x5x5xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %cat = nnvm.concat %p, %d {axis = 1} : (tensor<1x8x5x5xf32>, tensor<1x8x5x5xf32>) -> tensor<1x16x5x5xf32>
  %av = nnvm.avg_pool2d %cat {pool_size = [3, 3], padding = [1, 1, 1, 1]} : (tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  func.return %av : tensor<1x16x5x5xf32>
}

// A grouped conv is blocked when every channel block lies inside one group (16 input and 8
// output channels per group, blocks of 8: OIHW8i8o, each output block reading its group's two
// input blocks); with 12 input channels per group a block would span two groups, and the conv
// stays NCHW (the direct conv reads across groups without index division).
// CHECK-LABEL: func.func @grouped_blocks
// CHECK:         nnvm.conv2d %x_NCHW8c, %w_OIHW8i8o {groups = 2, data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x4x4x4x8xf32>, tensor<2x2x1x1x8x8xf32>) -> tensor<1x2x4x4x8xf32>
// CHECK:         nnvm.conv2d %y, %v {groups = 2} : (tensor<1x24x4x4xf32>, tensor<16x12x1x1xf32>) -> tensor<1x16x4x4xf32>
func.func @grouped_blocks(%x: tensor<1x32x4x4xf32>, %y: tensor<1x24x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) {
  %w = nnvm.param "w" : tensor<16x16x1x1xf32>
  %c = nnvm.conv2d %x, %w {groups = 2} : (tensor<1x32x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %v = nnvm.param "v" : tensor<16x12x1x1xf32>
  %d = nnvm.conv2d %y, %v {groups = 2} : (tensor<1x24x4x4xf32>, tensor<16x12x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %c, %d : tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>
}

// Not blocked: a 1x1 conv with 6 output channels (fewer than a block, and none divides them)
// runs as a matmul. A conv over 3 input channels is a stem:
// it reads NCHW and writes NCHW8c (out_layout). A grouped conv with 4 input and 2 output
// channels per group stays NCHW (an 8-channel block would span groups of unequal sides).
// Neighbours get transforms back to NCHW: an add with an NCHW value, softmax, reshape,
// concat of a blocked and an NCHW value; a concat along H of blocked values stays blocked, and
// so does a product by a per-channel scale computed at run time (a group norm's): the scale's
// 8 numbers are transformed, not the activation.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    %w3 = nnvm.param
// CHECK-NEXT:    %w6 = nnvm.param
// CHECK-NEXT:    %wg = nnvm.param
// CHECK-NEXT:    %w3_OIHW3i8o = nnvm.layout_transform %w3 {src_layout = "OIHW", dst_layout = "OIHW3i8o"}
// CHECK-NEXT:    %c3 = nnvm.conv2d %x, %w3_OIHW3i8o {padding = [1, 1, 1, 1], kernel_layout = "OIHW3i8o", out_layout = "NCHW8c"} : (tensor<1x3x4x4xf32>, tensor<1x1x3x3x3x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK:         %c = nnvm.conv2d %c3, %{{.*}} {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"}
// CHECK-NEXT:    [[C:%.*]] = nnvm.layout_transform %c {src_layout = "NCHW8c", dst_layout = "NCHW"}
// CHECK-NEXT:    %c6_rows = nnvm.reshape [[C]] {shape = [1, 8, 16]} : (tensor<1x8x4x4xf32>) -> tensor<1x8x16xf32>
// CHECK-NEXT:    %w6_OC = nnvm.reshape %w6 {shape = [6, 8]} : (tensor<6x8x1x1xf32>) -> tensor<6x8xf32>
// CHECK-NEXT:    %c6_mm = nnvm.matmul %w6_OC, %c6_rows : (tensor<6x8xf32>, tensor<1x8x16xf32>) -> tensor<1x6x16xf32>
// CHECK-NEXT:    %c6 = nnvm.reshape %c6_mm {shape = [1, 6, 4, 4]} : (tensor<1x6x16xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT:    %cg = nnvm.conv2d [[C]], %wg {groups = 2} : (tensor<1x8x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %rs_NCHW8c = nnvm.layout_transform %rs {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x8x1x1xf32>) -> tensor<1x1x1x1x8xf32>
// CHECK-NEXT:    %m = nnvm.mul %c, %rs_NCHW8c : (tensor<1x1x4x4x8xf32>, tensor<1x1x1x1x8xf32>) -> tensor<1x1x4x4x8xf32>
// CHECK-NEXT:    [[M:%.*]] = nnvm.layout_transform %m {src_layout = "NCHW8c", dst_layout = "NCHW"}
// CHECK-NEXT:    %a = nnvm.add [[C]], %y : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %sm = nnvm.softmax [[C]] {axis = 1}
// CHECK-NEXT:    %rsh = nnvm.reshape [[C]] {shape = [8, 16]}
// CHECK-NEXT:    %ch = nnvm.concat %c, %c {axis = 2} : (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) -> tensor<1x1x8x4x8xf32>
// CHECK-NEXT:    %{{.*}} = nnvm.layout_transform %ch {src_layout = "NCHW8c", dst_layout = "NCHW"}
// CHECK-NEXT:    %cm = nnvm.concat [[C]], %y {axis = 1}
// CHECK-NEXT:    func.return %c6, %cg, [[M]]
func.func @left_alone(%x: tensor<1x3x4x4xf32>, %rs: tensor<1x8x1x1xf32>, %y: tensor<1x8x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<8x16xf32>, tensor<1x8x8x4xf32>, tensor<1x16x4x4xf32>) {
  %w3 = nnvm.param "w3" : tensor<8x3x3x3xf32>
  %w6 = nnvm.param "w6" : tensor<6x8x1x1xf32>
  %wg = nnvm.param "wg" : tensor<4x4x1x1xf32>
  %c3 = nnvm.conv2d %x, %w3 {padding = [1, 1, 1, 1]} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32>
  %w8 = nnvm.param "w8" : tensor<8x8x1x1xf32>
  %c = nnvm.conv2d %c3, %w8 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %c6 = nnvm.conv2d %c, %w6 : (tensor<1x8x4x4xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x4x4xf32>
  %cg = nnvm.conv2d %c, %wg {groups = 2} : (tensor<1x8x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %m = nnvm.mul %c, %rs : (tensor<1x8x4x4xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %a = nnvm.add %c, %y : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %sm = nnvm.softmax %c {axis = 1} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %rsh = nnvm.reshape %c {shape = [8, 16]} : (tensor<1x8x4x4xf32>) -> tensor<8x16xf32>
  %ch = nnvm.concat %c, %c {axis = 2} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x8x4xf32>
  %cm = nnvm.concat %c, %y {axis = 1} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  func.return %c6, %cg, %m, %a, %sm, %rsh, %ch, %cm : tensor<1x6x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>, tensor<8x16xf32>, tensor<1x8x8x4xf32>, tensor<1x16x4x4xf32>
}

// A stem whose output channels the block does not divide pads them to whole blocks: 24
// channels under block=16 write two NCHW16c blocks (ShuffleNet's stem), and the transform
// back to NCHW drops the padding (its logical shape).
// B16-LABEL: func.func @stem_24
// B16:         %c = nnvm.conv2d %x, %{{.*}} {strides = [2, 2], padding = [1, 1, 1, 1], kernel_layout = "OIHW3i16o", out_layout = "NCHW16c"} : (tensor<1x3x8x8xf32>, tensor<2x1x3x3x3x16xf32>) -> tensor<1x2x4x4x16xf32>
// B16-NEXT:    nnvm.layout_transform %c {src_layout = "NCHW16c", dst_layout = "NCHW", logical = [1, 24, 4, 4]} : (tensor<1x2x4x4x16xf32>) -> tensor<1x24x4x4xf32>
func.func @stem_24(%x: tensor<1x3x8x8xf32>) -> tensor<1x24x4x4xf32> {
  %w = nnvm.param "w" : tensor<24x3x3x3xf32>
  %c = nnvm.conv2d %x, %w {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x3x8x8xf32>, tensor<24x3x3x3xf32>) -> tensor<1x24x4x4xf32>
  func.return %c : tensor<1x24x4x4xf32>
}

// 4 channels a group (ResNeXt's first stage) under block=8: blocks of two groups, OIHW4i8o.
// CHECK-LABEL: func.func @grouped_4_per_group
// CHECK:         nnvm.conv2d %{{.*}}, %{{.*}} {padding = [1, 1, 1, 1], groups = 4, data_layout = "NCHW8c", kernel_layout = "OIHW4i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x1x3x3x4x8xf32>) -> tensor<1x2x6x6x8xf32>
func.func @grouped_4_per_group(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w = nnvm.param "w" : tensor<16x4x3x3xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], groups = 4} : (tensor<1x16x6x6xf32>, tensor<16x4x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return %c : tensor<1x16x6x6xf32>
}

// A grouped conv with 8 channels per group under block=16 (RegNet's) runs in 16-channel blocks
// that span two groups (kernel OIHW8i16o: each output lane reads its own group's 8 channels of
// the same input block). 40 channels are padded to 48: the padding is a group of its own.
// B16-LABEL: func.func @grouped_8_per_group
// B16:         nnvm.conv2d %{{.*}}, %{{.*}} {padding = [1, 1, 1, 1], groups = 6, data_layout = "NCHW16c", kernel_layout = "OIHW8i16o"} : (tensor<1x3x6x6x16xf32>, tensor<3x1x3x3x8x16xf32>) -> tensor<1x3x6x6x16xf32>
// B16:         nnvm.conv2d %{{.*}}, %{{.*}} {padding = [1, 1, 1, 1], groups = 6, data_layout = "NCHW16c", kernel_layout = "OIHW8i16o"} : (tensor<1x3x6x6x16xf32>, tensor<3x1x3x3x8x16xf32>) -> tensor<1x3x6x6x16xf32>
// B16:         nnvm.layout_transform %{{.*}} {src_layout = "NCHW16c", dst_layout = "NCHW", logical = [1, 40, 6, 6]}
func.func @grouped_8_per_group(%x: tensor<1x48x6x6xf32>, %y: tensor<1x40x6x6xf32>) -> (tensor<1x48x6x6xf32>, tensor<1x40x6x6xf32>) {
  %w = nnvm.param "w" : tensor<48x8x3x3xf32>
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], groups = 6} : (tensor<1x48x6x6xf32>, tensor<48x8x3x3xf32>) -> tensor<1x48x6x6xf32>
  %v = nnvm.param "v" : tensor<40x8x3x3xf32>
  %d = nnvm.conv2d %y, %v {padding = [1, 1, 1, 1], groups = 5} : (tensor<1x40x6x6xf32>, tensor<40x8x3x3xf32>) -> tensor<1x40x6x6xf32>
  func.return %c, %d : tensor<1x48x6x6xf32>, tensor<1x40x6x6xf32>
}

// 1x1 convs whose channels only an 8-wide block divides under block=16 run NCHW16c with
// their channels padded (384 -> 264 writes 17 blocks; 40 -> 120 reads 3 and writes 8), not
// as matmuls or with half-width NCHW8c vectors.
// B16-LABEL: func.func @narrow_blocks_1x1
// B16:         nnvm.conv2d %{{.*}}, %{{.*}} {data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"} : (tensor<1x24x5x5x16xf32>, tensor<17x24x1x1x16x16xf32>) -> tensor<1x17x5x5x16xf32>
// B16:         nnvm.conv2d %{{.*}}, %{{.*}} {data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"} : (tensor<1x3x5x5x16xf32>, tensor<8x3x1x1x16x16xf32>) -> tensor<1x8x5x5x16xf32>
func.func @narrow_blocks_1x1(%x: tensor<1x384x5x5xf32>, %z: tensor<1x40x5x5xf32>) -> (tensor<1x264x5x5xf32>, tensor<1x120x5x5xf32>) {
  %w = nnvm.param "w" : tensor<264x384x1x1xf32>
  %v = nnvm.param "v" : tensor<120x40x1x1xf32>
  %y = nnvm.conv2d %x, %w : (tensor<1x384x5x5xf32>, tensor<264x384x1x1xf32>) -> tensor<1x264x5x5xf32>
  %u = nnvm.conv2d %z, %v : (tensor<1x40x5x5xf32>, tensor<120x40x1x1xf32>) -> tensor<1x120x5x5xf32>
  func.return %y, %u : tensor<1x264x5x5xf32>, tensor<1x120x5x5xf32>
}

// An lstm with constant weights reads them transposed, [dirs, K, 4H]; runtime weights stay.
// CHECK-LABEL: func.func @lstm_weights
// CHECK:         %[[WT:.*]] = nnvm.transpose %w {perm = [0, 2, 1]} : (tensor<1x16x3xf32>) -> tensor<1x3x16xf32>
// CHECK-NEXT:    %[[RT:.*]] = nnvm.transpose %r {perm = [0, 2, 1]} : (tensor<1x16x4xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT:    nnvm.lstm %x, %[[WT]], %[[RT]], %b, %h0, %c0, %p {hidden_size = 4, weights_kn = true}
// CHECK-NEXT:    nnvm.lstm %x, %wx, %r, %b, %h0, %c0, %p {hidden_size = 4} :
func.func @lstm_weights(%x: tensor<5x2x3xf32>, %wx: tensor<1x16x3xf32>, %h0: tensor<1x2x4xf32>, %c0: tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<5x1x2x4xf32>) {
  %w = nnvm.param "w" : tensor<1x16x3xf32>
  %r = nnvm.param "r" : tensor<1x16x4xf32>
  %b = nnvm.param "b" : tensor<1x32xf32>
  %p = nnvm.param "p" : tensor<1x12xf32>
  %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  %y2, %y2_h, %y2_c = nnvm.lstm %x, %wx, %r, %b, %h0, %c0, %p {hidden_size = 4} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %y, %y2 : tensor<5x1x2x4xf32>, tensor<5x1x2x4xf32>
}

// Where each step's product is a GEMV over whole panels (4H = 128: one tile of four 32-wide
// panels), R is packed further into column panels, [dirs, 4H/P, H, P], which the steps stream
// contiguously.
// CHECK-LABEL: func.func @lstm_recurrent_panels
// CHECK:         %[[RT:.*]] = nnvm.transpose %r {perm = [0, 2, 1]} : (tensor<1x128x32xf32>) -> tensor<1x32x128xf32>
// CHECK-NEXT:    %[[S:.*]] = nnvm.reshape %[[RT]] {shape = [1, 32, 4, 32]} : (tensor<1x32x128xf32>) -> tensor<1x32x4x32xf32>
// CHECK-NEXT:    %[[P:.*]] = nnvm.transpose %[[S]] {perm = [0, 2, 1, 3]} : (tensor<1x32x4x32xf32>) -> tensor<1x4x32x32xf32>
// CHECK-NEXT:    nnvm.lstm %x, %{{.*}}, %[[P]], %b, %h0, %c0, %p {hidden_size = 32, weights_kn = true, recurrent_panel = 32}
func.func @lstm_recurrent_panels(%x: tensor<5x1x8xf32>, %h0: tensor<1x1x32xf32>, %c0: tensor<1x1x32xf32>) -> tensor<5x1x1x32xf32> {
  %w = nnvm.param "w" : tensor<1x128x8xf32>
  %r = nnvm.param "r" : tensor<1x128x32xf32>
  %b = nnvm.param "b" : tensor<1x256xf32>
  %p = nnvm.param "p" : tensor<1x96xf32>
  %y, %y_h, %y_c = nnvm.lstm %x, %w, %r, %b, %h0, %c0, %p {hidden_size = 32} : (tensor<5x1x8xf32>, tensor<1x128x8xf32>, tensor<1x128x32xf32>, tensor<1x256xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x96xf32>) -> (tensor<5x1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>)
  func.return %y : tensor<5x1x1x32xf32>
}

// A gru with constant weights reads them transposed too, [dirs, K, 3H].
// CHECK-LABEL: func.func @gru_weights
// CHECK:         %[[WT:.*]] = nnvm.transpose %w {perm = [0, 2, 1]} : (tensor<1x12x8xf32>) -> tensor<1x8x12xf32>
// CHECK-NEXT:    %[[RT:.*]] = nnvm.transpose %r {perm = [0, 2, 1]} : (tensor<1x12x4xf32>) -> tensor<1x4x12xf32>
// CHECK-NEXT:    nnvm.gru %x, %[[WT]], %[[RT]], %b, %h0 {hidden_size = 4, weights_kn = true}
func.func @gru_weights(%x: tensor<5x1x8xf32>, %h0: tensor<1x1x4xf32>) -> tensor<5x1x1x4xf32> {
  %w = nnvm.param "w" : tensor<1x12x8xf32>
  %r = nnvm.param "r" : tensor<1x12x4xf32>
  %b = nnvm.param "b" : tensor<1x24xf32>
  %y, %y_h = nnvm.gru %x, %w, %r, %b, %h0 {hidden_size = 4} : (tensor<5x1x8xf32>, tensor<1x12x8xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x1x4xf32>) -> (tensor<5x1x1x4xf32>, tensor<1x1x4xf32>)
  func.return %y : tensor<5x1x1x4xf32>
}

// A dense with a constant weight and several rows becomes a matmul over the transposed
// weight; one reading rows flattened out of [1, m, k] (or of batches of 64 rows or more) and
// reshaped back becomes a batched matmul of the unflattened input (its bias and activation
// then fuse into its epilogue).
// CHECK-LABEL: func.func @dense_to_matmul
// CHECK-NEXT:    %w = nnvm.param "w" : tensor<8x16xf32>
// CHECK-NEXT:    %[[WT:.*]] = nnvm.transpose %w {perm = [1, 0]} : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[M:.*]] = nnvm.matmul %x, %[[WT]] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[M]]
func.func @dense_to_matmul(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = nnvm.param "w" : tensor<8x16xf32>
  %d = nnvm.dense %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @dense_of_flattened_rows
// CHECK-NEXT:    %w = nnvm.param "w" : tensor<8x16xf32>
// CHECK-NEXT:    %[[WT:.*]] = nnvm.transpose %w {perm = [1, 0]} : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[M:.*]] = nnvm.matmul %x, %[[WT]] : (tensor<1x4x16xf32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = nnvm.relu %[[M]] : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @dense_of_flattened_rows(%x: tensor<1x4x16xf32>) -> tensor<1x4x8xf32> {
  %w = nnvm.param "w" : tensor<8x16xf32>
  %f = nnvm.reshape %x {shape = [4, 16]} : (tensor<1x4x16xf32>) -> tensor<4x16xf32>
  %d = nnvm.dense %f, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %u = nnvm.reshape %d {shape = [1, 4, 8]} : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %r = nnvm.relu %u : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %r : tensor<1x4x8xf32>
}

// Rows flattened out of [seq, 1, k] (torch's batch-second layout) or out of several batches of
// fewer than 64 rows: unflattened, each batch would be a GEMV or a thin GEMM whose tiles divide
// its rows badly; they stay one matmul of the flattened rows (the flattening reshape is a
// view, plan-memory gives it no kernel).
// CHECK-LABEL: func.func @dense_of_flattened_single_rows
// CHECK:         %[[F:.*]] = nnvm.reshape %x {shape = [6, 16]}
// CHECK:         nnvm.matmul %[[F]], %{{.*}} : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
func.func @dense_of_flattened_single_rows(%x: tensor<6x1x16xf32>) -> tensor<6x1x8xf32> {
  %w = nnvm.param "w" : tensor<8x16xf32>
  %f = nnvm.reshape %x {shape = [6, 16]} : (tensor<6x1x16xf32>) -> tensor<6x16xf32>
  %d = nnvm.dense %f, %w : (tensor<6x16xf32>, tensor<8x16xf32>) -> tensor<6x8xf32>
  %u = nnvm.reshape %d {shape = [6, 1, 8]} : (tensor<6x8xf32>) -> tensor<6x1x8xf32>
  func.return %u : tensor<6x1x8xf32>
}

// Enough rows, columns and depth to pack: the weight becomes [N/32, K, 32] column panels
// (fold-constants computes them once) and the matmul reads them as `rhs_panel = 32`.
// CHECK-LABEL: func.func @dense_packed
// CHECK-NEXT:    %w = nnvm.param "w" : tensor<64x48xf32>
// CHECK-NEXT:    %[[P:.*]] = nnvm.reshape %w {shape = [2, 32, 48]} : (tensor<64x48xf32>) -> tensor<2x32x48xf32>
// CHECK-NEXT:    %[[WP:.*]] = nnvm.transpose %[[P]] {perm = [0, 2, 1]} : (tensor<2x32x48xf32>) -> tensor<2x48x32xf32>
// CHECK-NEXT:    %[[M:.*]] = nnvm.matmul %x, %[[WP]] {rhs_panel = 32} : (tensor<32x48xf32>, tensor<2x48x32xf32>) -> tensor<32x64xf32>
// CHECK-NEXT:    func.return %[[M]]
func.func @dense_packed(%x: tensor<32x48xf32>) -> tensor<32x64xf32> {
  %w = nnvm.param "w" : tensor<64x48xf32>
  %d = nnvm.dense %x, %w : (tensor<32x48xf32>, tensor<64x48xf32>) -> tensor<32x64xf32>
  func.return %d : tensor<32x64xf32>
}

// A constant weight is packed for a few rows too (it is packed once, at build time): 5 rows
// (BERT's seq-16 projections had 16) read the panels contiguously instead of a weight row per
// step of the reduction. Columns that no panel divides stay [K, N].
// CHECK-LABEL: func.func @dense_few_rows_packed
// CHECK:         nnvm.matmul %x, %{{.*}} {rhs_panel = 32} : (tensor<5x48xf32>, tensor<2x48x32xf32>) -> tensor<5x64xf32>
func.func @dense_few_rows_packed(%x: tensor<5x48xf32>) -> tensor<5x64xf32> {
  %w = nnvm.param "w" : tensor<64x48xf32>
  %d = nnvm.dense %x, %w : (tensor<5x48xf32>, tensor<64x48xf32>) -> tensor<5x64xf32>
  func.return %d : tensor<5x64xf32>
}

// Three rows (GPT-2 over 3 tokens) were neither a GEMV nor the matmul template's four rows and
// stayed dot products: 1.9x onnxruntime's time. They take packed panels like five.
// CHECK-LABEL: func.func @dense_three_rows_packed
// CHECK:         nnvm.matmul %x, %{{.*}} {rhs_panel = 32} : (tensor<3x48xf32>, tensor<2x48x32xf32>) -> tensor<3x64xf32>
func.func @dense_three_rows_packed(%x: tensor<3x48xf32>) -> tensor<3x64xf32> {
  %w = nnvm.param "w" : tensor<64x48xf32>
  %d = nnvm.dense %x, %w : (tensor<3x48xf32>, tensor<64x48xf32>) -> tensor<3x64xf32>
  func.return %d : tensor<3x64xf32>
}

// CHECK-LABEL: func.func @dense_unpackable_columns
// CHECK:         nnvm.matmul %x, %{{.*}} : (tensor<5x48xf32>, tensor<48x40xf32>) -> tensor<5x40xf32>
func.func @dense_unpackable_columns(%x: tensor<5x48xf32>) -> tensor<5x40xf32> {
  %w = nnvm.param "w" : tensor<40x48xf32>
  %d = nnvm.dense %x, %w : (tensor<5x48xf32>, tensor<40x48xf32>) -> tensor<5x40xf32>
  func.return %d : tensor<5x40xf32>
}

// One row (a GEMV) is a matmul over packed panels when its columns are whole GEMV tiles
// (4 panels of 32: 8 vector accumulators over k, no horizontal sums); a classifier's 1000
// columns stay a dense (8 outputs' dot products at a time).
// CHECK-LABEL: func.func @gemv_packed
// CHECK:         nnvm.matmul %x, %{{.*}} {rhs_panel = 32} : (tensor<1x48xf32>, tensor<4x48x32xf32>) -> tensor<1x128xf32>
// CHECK-LABEL: func.func @gemv_stays_dense
// CHECK:         nnvm.dense %x, %w : (tensor<1x48xf32>, tensor<1000x48xf32>) -> tensor<1x1000xf32>
func.func @gemv_packed(%x: tensor<1x48xf32>) -> tensor<1x128xf32> {
  %w = nnvm.param "w" : tensor<128x48xf32>
  %d = nnvm.dense %x, %w : (tensor<1x48xf32>, tensor<128x48xf32>) -> tensor<1x128xf32>
  func.return %d : tensor<1x128xf32>
}
func.func @gemv_stays_dense(%x: tensor<1x48xf32>) -> tensor<1x1000xf32> {
  %w = nnvm.param "w" : tensor<1000x48xf32>
  %d = nnvm.dense %x, %w : (tensor<1x48xf32>, tensor<1000x48xf32>) -> tensor<1x1000xf32>
  func.return %d : tensor<1x1000xf32>
}

// Reshaped to other leading dims: the rows stay flattened.
// CHECK-LABEL: func.func @dense_reshaped_elsewhere
// CHECK:         nnvm.reshape %x {shape = [6, 16]}
// CHECK:         nnvm.matmul %{{.*}} : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
// CHECK-NEXT:    nnvm.reshape %{{.*}} {shape = [3, 2, 8]}
func.func @dense_reshaped_elsewhere(%x: tensor<2x3x16xf32>) -> tensor<3x2x8xf32> {
  %w = nnvm.param "w" : tensor<8x16xf32>
  %f = nnvm.reshape %x {shape = [6, 16]} : (tensor<2x3x16xf32>) -> tensor<6x16xf32>
  %d = nnvm.dense %f, %w : (tensor<6x16xf32>, tensor<8x16xf32>) -> tensor<6x8xf32>
  %u = nnvm.reshape %d {shape = [3, 2, 8]} : (tensor<6x8xf32>) -> tensor<3x2x8xf32>
  func.return %u : tensor<3x2x8xf32>
}

// Squeeze-excite: the mean over H, W of a blocked tensor (keeping its dimensions) stays
// blocked, so the whole block runs in NCHW8c; a mean over C, or one dropping H and W, reads NCHW.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK:         %m = nnvm.mean %y {axes = [2, 3], keepdims = true} : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x1x1x8xf32>
// CHECK:         %s = nnvm.conv2d %m
// CHECK:         %e = nnvm.mul %y, %g : (tensor<1x2x6x6x8xf32>, tensor<1x2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32>
// CHECK:         nnvm.mean %{{.*}} {axes = [1], keepdims = true} : (tensor<1x16x6x6xf32>) -> tensor<1x1x6x6xf32>
// CHECK:         nnvm.mean %{{.*}} {axes = [2, 3]} : (tensor<1x16x6x6xf32>) -> tensor<1x16xf32>
func.func @squeeze_excite(%x: tensor<1x16x6x6xf32>, %w: tensor<16x16x3x3xf32>, %w1: tensor<16x16x1x1xf32>) -> (tensor<1x16x6x6xf32>, tensor<1x1x6x6xf32>, tensor<1x16xf32>) {
  %y = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %m = nnvm.mean %y {axes = [3, 2], keepdims = true} : (tensor<1x16x6x6xf32>) -> tensor<1x16x1x1xf32>
  %s = nnvm.conv2d %m, %w1 : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %g = nnvm.sigmoid %s : (tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %e = nnvm.mul %y, %g : (tensor<1x16x6x6xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x6x6xf32>
  %c = nnvm.mean %e {axes = [1], keepdims = true} : (tensor<1x16x6x6xf32>) -> tensor<1x1x6x6xf32>
  %d = nnvm.mean %e {axes = [2, 3]} : (tensor<1x16x6x6xf32>) -> tensor<1x16xf32>
  func.return %e, %c, %d : tensor<1x16x6x6xf32>, tensor<1x1x6x6xf32>, tensor<1x16xf32>
}

// C2f and the neck of a detector: a split along C at whole blocks, the residual add of a
// piece, the concat and a nearest 2x upsample (scale 1 along C) all stay in NCHW8c; a split
// inside a block reads NCHW.
// CHECK-LABEL: func.func @split_resize
// CHECK:         %a, %b = nnvm.split %y {axis = 1, sizes = [1, 1]} : (tensor<1x2x6x6x8xf32>) -> (tensor<1x1x6x6x8xf32>, tensor<1x1x6x6x8xf32>)
// CHECK:         %s = nnvm.add %b, %b : (tensor<1x1x6x6x8xf32>, tensor<1x1x6x6x8xf32>) -> tensor<1x1x6x6x8xf32>
// CHECK:         %c = nnvm.concat %a, %b, %s {axis = 1} : ({{.*}}) -> tensor<1x3x6x6x8xf32>
// CHECK:         %u = nnvm.resize %c {size = [1, 3, 12, 12, 8], scales = [1.0, 1.0, 2.0, 2.0, 1.0]
// CHECK:         nnvm.split %{{.*}} {axis = 1, sizes = [4, 20]} : (tensor<1x24x12x12xf32>)
func.func @split_resize(%x: tensor<1x16x6x6xf32>, %w: tensor<16x16x3x3xf32>) -> (tensor<1x4x12x12xf32>, tensor<1x20x12x12xf32>) {
  %y = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x16x6x6xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %a, %b = nnvm.split %y {axis = 1, sizes = [8, 8]} : (tensor<1x16x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>)
  %s = nnvm.add %b, %b : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %c = nnvm.concat %a, %b, %s {axis = 1} : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x24x6x6xf32>
  %u = nnvm.resize %c {size = [1, 24, 12, 12], scales = [1.0, 1.0, 2.0, 2.0], coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x24x6x6xf32>) -> tensor<1x24x12x12xf32>
  %p, %q = nnvm.split %u {axis = 1, sizes = [4, 20]} : (tensor<1x24x12x12xf32>) -> (tensor<1x4x12x12xf32>, tensor<1x20x12x12xf32>)
  func.return %p, %q : tensor<1x4x12x12xf32>, tensor<1x20x12x12xf32>
}

// A decode head: two scales from NCHW producers (not blocked), the small one upsampled, a
// concat along C, a conv. The transform into the conv's layout moves above the concat and the
// upsample: both maps are blocked before it (the small one at its small size), the resize and
// the concat run in NCHW8c. A downsample keeps its transform below.
// CHECK-LABEL: func.func @decode_head
// CHECK-NEXT:    %lo_NCHW8c = nnvm.layout_transform %lo {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x3x3xf32>) -> tensor<1x2x3x3x8xf32>
// CHECK-NEXT:    %[[UP:.*]] = nnvm.resize %lo_NCHW8c {size = [1, 2, 6, 6, 8], scales = [1.0, 1.0, 2.0, 2.0, 1.0]
// CHECK-NEXT:    %hi_NCHW8c = nnvm.layout_transform %hi {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x8x6x6xf32>) -> tensor<1x1x6x6x8xf32>
// CHECK-NEXT:    %[[C:.*]] = nnvm.concat %[[UP]], %hi_NCHW8c {axis = 1} : (tensor<1x2x6x6x8xf32>, tensor<1x1x6x6x8xf32>) -> tensor<1x3x6x6x8xf32>
// CHECK:         nnvm.conv2d %[[C]]
// CHECK-LABEL: func.func @downsample_head
// CHECK:         nnvm.resize %x {{.*}} -> tensor<1x16x3x3xf32>
// CHECK-NEXT:    nnvm.layout_transform
func.func @decode_head(%lo: tensor<1x16x3x3xf32>, %hi: tensor<1x8x6x6xf32>, %w: tensor<8x24x1x1xf32>) -> tensor<1x8x6x6xf32> {
  %up = nnvm.resize %lo {size = [1, 16, 6, 6], scales = [1.0, 1.0, 2.0, 2.0], mode = "linear"} : (tensor<1x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  %c = nnvm.concat %up, %hi {axis = 1} : (tensor<1x16x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x24x6x6xf32>
  %y = nnvm.conv2d %c, %w : (tensor<1x24x6x6xf32>, tensor<8x24x1x1xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}
func.func @downsample_head(%x: tensor<1x16x6x6xf32>, %w: tensor<8x16x1x1xf32>) -> tensor<1x8x3x3xf32> {
  %d = nnvm.resize %x {size = [1, 16, 3, 3], scales = [1.0, 1.0, 0.5, 0.5], mode = "linear"} : (tensor<1x16x6x6xf32>) -> tensor<1x16x3x3xf32>
  %y = nnvm.conv2d %d, %w : (tensor<1x16x3x3xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// Back-to-back transforms compose: A->B->A is the identity, A->B->C is A->C.
// CHECK-LABEL: func.func @compose
// CHECK-NEXT:    %c = nnvm.layout_transform %x {src_layout = "NCHW4c", dst_layout = "NCHW"} : (tensor<1x2x2x2x4xf32>) -> tensor<1x8x2x2xf32>
// CHECK-NEXT:    func.return %x, %c
func.func @compose(%x: tensor<1x2x2x2x4xf32>) -> (tensor<1x2x2x2x4xf32>, tensor<1x8x2x2xf32>) {
  %a = nnvm.layout_transform %x {src_layout = "NCHW4c", dst_layout = "NCHW2c"} : (tensor<1x2x2x2x4xf32>) -> tensor<1x4x2x2x2xf32>
  %b = nnvm.layout_transform %a {src_layout = "NCHW2c", dst_layout = "NCHW4c"} : (tensor<1x4x2x2x2xf32>) -> tensor<1x2x2x2x4xf32>
  %c = nnvm.layout_transform %a {src_layout = "NCHW2c", dst_layout = "NCHW"} : (tensor<1x4x2x2x2xf32>) -> tensor<1x8x2x2xf32>
  func.return %b, %c : tensor<1x2x2x2x4xf32>, tensor<1x8x2x2xf32>
}

// Crops of a blocked map (prune-conv-taps' sub-convs of an atrous conv, strided slices) slice
// the blocked tensor along H and W, and along C at whole blocks: the convs read them blocked.
// A crop inside a block reads NCHW.
// CHECK-LABEL: func.func @slice_crops
// CHECK:         %s = nnvm.slice %y {starts = [2, 1], ends = [10, 12], axes = [2, 3], steps = [2, 2]} : (tensor<1x2x12x12x8xf32>) -> tensor<1x2x4x6x8xf32>
// CHECK:         %t = nnvm.slice %y {starts = [1, 1, 1], ends = [2, -1, -1], axes = [1, 2, 3], steps = [1, 1, 1]} : (tensor<1x2x12x12x8xf32>) -> tensor<1x1x10x10x8xf32>
// CHECK:         nnvm.conv2d %t, %{{.*}} {data_layout = "NCHW8c"
// CHECK:         nnvm.slice %{{.*}} {starts = [4], ends = [12], axes = [1], steps = [1]} : (tensor<1x16x12x12xf32>)
func.func @slice_crops(%x: tensor<1x16x12x12xf32>, %w: tensor<16x16x3x3xf32>, %w2: tensor<16x8x1x1xf32>) -> (tensor<1x16x4x6xf32>, tensor<1x16x10x10xf32>, tensor<1x8x12x12xf32>) {
  %y = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x12x12xf32>
  %s = nnvm.slice %y {starts = [2, 1], ends = [10, 12], axes = [2, -1], steps = [2, 2]} : (tensor<1x16x12x12xf32>) -> tensor<1x16x4x6xf32>
  %r = nnvm.relu %s : (tensor<1x16x4x6xf32>) -> tensor<1x16x4x6xf32>
  %t = nnvm.slice %y {starts = [8, 1, 1], ends = [16, -1, -1], axes = [1, 2, 3], steps = [1, 1, 1]} : (tensor<1x16x12x12xf32>) -> tensor<1x8x10x10xf32>
  %u = nnvm.conv2d %t, %w2 : (tensor<1x8x10x10xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x10x10xf32>
  %v = nnvm.slice %y {starts = [4], ends = [12], axes = [1], steps = [1]} : (tensor<1x16x12x12xf32>) -> tensor<1x8x12x12xf32>
  func.return %r, %u, %v : tensor<1x16x4x6xf32>, tensor<1x16x10x10xf32>, tensor<1x8x12x12xf32>
}

// STATS:      'alter-layout'
// STATS-NEXT:   (S) 23 blocked-convs - conv2d ops blocked
// STATS-NEXT:   (S) 30 followers - neighbours moved to the blocked layout
// STATS-NEXT:   (S) 9 composed - back-to-back layout transforms composed
// STATS-NEXT:   (S) 47 data-transforms - runtime layout transforms (boundaries)
// STATS-NEXT:   (S) 1 pointwise-matmuls - unblockable 1x1 convs run as matmuls
// STATS-NEXT:   (S) 12 dense-to-matmul - dense, lstm and gru ops with constant weights moved to transposed weights

// Channels a block does not divide, at least a block of them, are padded to whole blocks (as
// onnxruntime's NCHWc convs): 24 -> 40 -> 24 channels, a depthwise conv over the 40 (its
// groups count the padding channels too), and the ops between follow the padded layout when
// they keep its padding finite (bias add, relu, sigmoid, a multiply); a log, a division by a
// blocked tensor and a concat along C go back to NCHW (the logical 40 channels).
// B16-LABEL: func.func @padded
// B16:         %x_NCHW16c = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW16c"} : (tensor<1x24x4x4xf32>) -> tensor<1x2x4x4x16xf32>
// B16:         %a = nnvm.conv2d %x_NCHW16c, %{{.*}} {data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"} : (tensor<1x2x4x4x16xf32>, tensor<3x2x1x1x16x16xf32>) -> tensor<1x3x4x4x16xf32>
// B16:         %ab = nnvm.add %a, %{{.*}} : (tensor<1x3x4x4x16xf32>, tensor<1x3x1x1x16xf32>) -> tensor<1x3x4x4x16xf32>
// B16-NEXT:    %r = nnvm.relu %ab
// B16-NEXT:    %s = nnvm.sigmoid %r
// B16:         %m = nnvm.mul %r, %s : (tensor<1x3x4x4x16xf32>, tensor<1x3x4x4x16xf32>) -> tensor<1x3x4x4x16xf32>
// B16-NEXT:    [[M:%.*]] = nnvm.layout_transform %m {src_layout = "NCHW16c", dst_layout = "NCHW", logical = [1, 40, 4, 4]} : (tensor<1x3x4x4x16xf32>) -> tensor<1x40x4x4xf32>
// B16:         %d = nnvm.conv2d %m, %{{.*}} {padding = [1, 1, 1, 1], groups = 48, data_layout = "NCHW16c", kernel_layout = "OIHW1i16o"} : (tensor<1x3x4x4x16xf32>, tensor<3x1x3x3x1x16xf32>) -> tensor<1x3x4x4x16xf32>
// B16:         %p = nnvm.conv2d %d, %{{.*}} {data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"} : (tensor<1x3x4x4x16xf32>, tensor<2x3x1x1x16x16xf32>) -> tensor<1x2x4x4x16xf32>
// B16-NEXT:    nnvm.layout_transform %p {src_layout = "NCHW16c", dst_layout = "NCHW", logical = [1, 24, 4, 4]} : (tensor<1x2x4x4x16xf32>) -> tensor<1x24x4x4xf32>
// B16:         %l = nnvm.log %{{.*}} : (tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
// B16-NEXT:    %q = nnvm.div [[M]], %{{.*}} : (tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
// B16-NEXT:    %k = nnvm.concat [[M]], [[M]] {axis = 1}
func.func @padded(%x: tensor<1x24x4x4xf32>, %y: tensor<1x40x4x4xf32>) -> (tensor<1x24x4x4xf32>, tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>, tensor<1x80x4x4xf32>) {
  %w1 = nnvm.param "w1" : tensor<40x24x1x1xf32>
  %b1 = nnvm.param "b1" : tensor<40xf32>
  %wd = nnvm.param "wd" : tensor<40x1x3x3xf32>
  %w2 = nnvm.param "w2" : tensor<24x40x1x1xf32>
  %a = nnvm.conv2d %x, %w1 : (tensor<1x24x4x4xf32>, tensor<40x24x1x1xf32>) -> tensor<1x40x4x4xf32>
  %ab = nnvm.bias_add %a, %b1 {axis = 1} : (tensor<1x40x4x4xf32>, tensor<40xf32>) -> tensor<1x40x4x4xf32>
  %r = nnvm.relu %ab : (tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
  %s = nnvm.sigmoid %r : (tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
  %m = nnvm.mul %r, %s : (tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
  %d = nnvm.conv2d %m, %wd {padding = [1, 1, 1, 1], groups = 40} : (tensor<1x40x4x4xf32>, tensor<40x1x3x3xf32>) -> tensor<1x40x4x4xf32>
  %p = nnvm.conv2d %d, %w2 : (tensor<1x40x4x4xf32>, tensor<24x40x1x1xf32>) -> tensor<1x24x4x4xf32>
  %l = nnvm.log %s : (tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
  %q = nnvm.div %m, %s : (tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>) -> tensor<1x40x4x4xf32>
  %k = nnvm.concat %m, %m {axis = 1} : (tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>) -> tensor<1x80x4x4xf32>
  func.return %p, %l, %q, %k : tensor<1x24x4x4xf32>, tensor<1x40x4x4xf32>, tensor<1x40x4x4xf32>, tensor<1x80x4x4xf32>
}
