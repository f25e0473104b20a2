// RUN: nnvm-opt %s -p prune-conv-taps | filecheck %s
// RUN: nnvm-opt %s -p prune-conv-taps --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// An ASPP branch (dilation 24) on a 16x16 map: only the centre tap ever reads the input, so
// the 3x3 conv becomes a 1x1 conv over the centre column of the weight, with no padding.
// CHECK-LABEL: func.func @aspp
// CHECK:         %w_live = nnvm.slice %w {starts = [1, 1], ends = [2, 2], axes = [2, 3], steps = [1, 1]} : (tensor<4x8x3x3xf32>) -> tensor<4x8x1x1xf32>
// CHECK-NEXT:    %y = nnvm.conv2d %x, %w_live : (tensor<1x8x16x16xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x16x16xf32>
func.func @aspp(%x: tensor<1x8x16x16xf32>) -> tensor<1x4x16x16xf32> {
  %w = nnvm.param "w" : tensor<4x8x3x3xf32>
  %y = nnvm.conv2d %x, %w {padding = [24, 24, 24, 24], dilation = [24, 24]} : (tensor<1x8x16x16xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x16x16xf32>
  func.return %y : tensor<1x4x16x16xf32>
}

// Dilation 12 on 16 rows: every tap reads the input for some output, but the outer taps only
// for 4 rows each. The conv splits into 3 x 3 bands (rows and columns 0-3, 4-11, 12-15), each
// with the taps live there and no padding, concatenated back: a quarter of the work.
// CHECK-LABEL: func.func @live
// CHECK:         %[[W0:.*]] = nnvm.slice %w {starts = [1, 1], ends = [3, 3], axes = [2, 3], steps = [1, 1]} : (tensor<4x8x3x3xf32>) -> tensor<4x8x2x2xf32>
// CHECK-NEXT:    %[[B0:.*]] = nnvm.conv2d %x, %[[W0]] {dilation = [12, 12]} : (tensor<1x8x16x16xf32>, tensor<4x8x2x2xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[X1:.*]] = nnvm.slice %x {starts = [0, 4], ends = [16, 12], axes = [2, 3], steps = [1, 1]} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x8xf32>
// CHECK:         nnvm.conv2d %[[X1]], %{{.*}} {dilation = [12, 1]} : (tensor<1x8x16x8xf32>, tensor<4x8x2x1xf32>) -> tensor<1x4x4x8xf32>
// CHECK:         nnvm.concat {{.*}} {axis = 3} : (tensor<1x4x4x4xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x16xf32>
// CHECK:         %[[XC:.*]] = nnvm.slice %x {starts = [4, 4], ends = [12, 12], axes = [2, 3], steps = [1, 1]} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32>
// CHECK:         nnvm.conv2d %[[XC]], %{{.*}} : (tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK:         %[[Y:.*]] = nnvm.concat {{.*}} {axis = 2} : (tensor<1x4x4x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x4x16xf32>) -> tensor<1x4x16x16xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @live(%x: tensor<1x8x16x16xf32>) -> tensor<1x4x16x16xf32> {
  %w = nnvm.param "w" : tensor<4x8x3x3xf32>
  %y = nnvm.conv2d %x, %w {padding = [12, 12, 12, 12], dilation = [12, 12]} : (tensor<1x8x16x16xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x16x16xf32>
  func.return %y : tensor<1x4x16x16xf32>
}

// STATS: prune-conv-taps
// STATS-DAG: 1 convs
// STATS-DAG: 8 taps
// STATS-DAG: 1 banded
