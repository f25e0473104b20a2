// RUN: nnvm-opt %s -p 'alter-layout{block=16}' | filecheck %s
// Each conv blocks its input and its output channels by the widest block that divides them:
// 16 -> 16 runs NCHW16c, 16 -> 24 reads NCHW16c and writes NCHW8c (an OIHW16i8o kernel), so
// no transform sits between the two convs.
// CHECK-LABEL: func.func @mixed
// CHECK:       nnvm.conv2d {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"}
// CHECK-NEXT:  nnvm.relu
// CHECK-NOT:   nnvm.layout_transform %r
// CHECK:       nnvm.conv2d %r, {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i8o", out_layout = "NCHW8c"}
// CHECK-NEXT:  nnvm.layout_transform {{.*}}{src_layout = "NCHW8c", dst_layout = "NCHW"}
func.func @mixed(%x: tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32> {
  %w1 = nnvm.param "w1" : tensor<16x16x1x1xf32>
  %w2 = nnvm.param "w2" : tensor<24x16x1x1xf32>
  %a = nnvm.conv2d %x, %w1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %r = nnvm.relu %a : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %b = nnvm.conv2d %r, %w2 : (tensor<1x16x4x4xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32>
  func.return %b : tensor<1x24x4x4xf32>
}
