// RUN: nnvm-opt %s -p 'alter-layout{block=16}' | filecheck %s
// Each conv takes the widest block that divides its channels: 16 -> 16 runs NCHW16c, 16 -> 24
// NCHW8c, and the two meet through one blocked-to-blocked transform.
// CHECK-LABEL: func.func @mixed
// CHECK:       nnvm.conv2d {{.*}}{data_layout = "NCHW16c", kernel_layout = "OIHW16i16o"
// CHECK:       nnvm.layout_transform {{.*}}{src_layout = "NCHW16c", dst_layout = "NCHW8c"}
// CHECK:       nnvm.conv2d {{.*}}{data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"
// CHECK:       nnvm.layout_transform {{.*}}{src_layout = "NCHW8c", dst_layout = "NCHW"}
func.func @mixed(%x: tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32> {
  %w1 = nnvm.param "w1" : tensor<16x16x1x1xf32>
  %w2 = nnvm.param "w2" : tensor<24x16x1x1xf32>
  %a = nnvm.conv2d %x, %w1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %r = nnvm.relu %a : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %b = nnvm.conv2d %r, %w2 : (tensor<1x16x4x4xf32>, tensor<24x16x1x1xf32>) -> tensor<1x24x4x4xf32>
  func.return %b : tensor<1x24x4x4xf32>
}
