// RUN: nnvm-opt %s -p 'alter-layout{block=16}' | filecheck %s
// Each conv blocks its input and its output channels by the widest block that divides them,
// or pads them to whole blocks when there are at least a block of them: 16 -> 16 runs
// NCHW16c, 16 -> 8 reads NCHW16c and writes NCHW8c (an OIHW16i8o kernel), so no transform
// sits between the two convs; 16 -> 24 writes two NCHW16c blocks, the second half padding.
// CHECK-LABEL: func.func @mixed
// CHECK:       nnvm.conv2d {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"}
// CHECK-NEXT:  nnvm.relu
// CHECK-NOT:   nnvm.layout_transform %r
// CHECK:       nnvm.conv2d %r, {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i8o", out_layout = "NCHW8c"}
// CHECK-NEXT:  nnvm.layout_transform {{.*}}{src_layout = "NCHW8c", dst_layout = "NCHW"}
// CHECK:       nnvm.conv2d %r, {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"} : (tensor<1x1x4x4x16xf32>, tensor<2x1x1x1x16x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK-NEXT:  nnvm.layout_transform {{.*}}{src_layout = "NCHW16c", dst_layout = "NCHW", logical = [1, 24, 4, 4]}
func.func @mixed(%x: tensor<1x16x4x4xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x24x4x4xf32>) {
  %w1 = nnvm.param "w1" : tensor<16x16x1x1xf32>
  %w2 = nnvm.param "w2" : tensor<8x16x1x1xf32>
  %w3 = nnvm.param "w3" : tensor<24x16x1x1xf32>
  %a = nnvm.conv2d %x, %w1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %r = nnvm.relu %a : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %b = nnvm.conv2d %r, %w2 : (tensor<1x16x4x4xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x4x4xf32>
  %c = nnvm.conv2d %r, %w3 : (tensor<1x16x4x4xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32>
  func.return %b, %c : tensor<1x8x4x4xf32>, tensor<1x24x4x4xf32>
}

// A binary op of two tensors blocked differently runs in the layout of the one as large as the
// result; the other (a squeeze-excite scale in NCHW16c) meets it through one blocked-to-blocked
// transform, not both through NCHW.
// CHECK-LABEL: func.func @mixed_binary
// CHECK-NEXT:  %[[S:.*]] = nnvm.layout_transform %s {src_layout = "NCHW16c", dst_layout = "NCHW8c"} : (tensor<1x3x1x1x16xf32>) -> tensor<1x6x1x1x8xf32>
// CHECK-NEXT:  %m = nnvm.mul %[[S]], %a : (tensor<1x6x1x1x8xf32>, tensor<1x6x4x4x8xf32>) -> tensor<1x6x4x4x8xf32>
// CHECK-NEXT:  nnvm.layout_transform %m {src_layout = "NCHW8c", dst_layout = "NCHW"}
func.func @mixed_binary(%a: tensor<1x6x4x4x8xf32>, %s: tensor<1x3x1x1x16xf32>) -> tensor<1x48x4x4xf32> {
  %x = nnvm.layout_transform %a {src_layout = "NCHW8c", dst_layout = "NCHW"} : (tensor<1x6x4x4x8xf32>) -> tensor<1x48x4x4xf32>
  %g = nnvm.layout_transform %s {src_layout = "NCHW16c", dst_layout = "NCHW"} : (tensor<1x3x1x1x16xf32>) -> tensor<1x48x1x1xf32>
  %m = nnvm.mul %g, %x : (tensor<1x48x1x1xf32>, tensor<1x48x4x4xf32>) -> tensor<1x48x4x4xf32>
  func.return %m : tensor<1x48x4x4xf32>
}
