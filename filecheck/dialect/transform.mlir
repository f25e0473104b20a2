// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// Data-movement ops (reshape, transpose, slice, gather, pad, resize, layout_transform, ...):
// every op prints back as written (properties equal to their default are dropped).

// CHECK-LABEL: @reshape
// CHECK: %{{.*}} = nnvm.reshape %x {shape = [4, 6]} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.reshape"(%x) <{shape = array<i64: 4, 6>}> : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %r = nnvm.reshape %x {shape = [4, 6]} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}

// CHECK-LABEL: @flatten
// CHECK: %{{.*}} = nnvm.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.flatten"(%x) <{axis = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
func.func @flatten(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %r = nnvm.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return %r : tensor<2x12xf32>
}

// CHECK-LABEL: @flatten_axis0
// CHECK: %{{.*}} = nnvm.flatten %x {axis = 0} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.flatten"(%x) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
func.func @flatten_axis0(%x: tensor<2x3x4xf32>) -> tensor<1x24xf32> {
  %r = nnvm.flatten %x {axis = 0} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  func.return %r : tensor<1x24xf32>
}

// CHECK-LABEL: @squeeze
// CHECK: %{{.*}} = nnvm.squeeze %x {axes = [0, -1]} : (tensor<1x3x1xf32>) -> tensor<3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.squeeze"(%x) <{axes = array<i64: 0, -1>}> : (tensor<1x3x1xf32>) -> tensor<3xf32>
func.func @squeeze(%x: tensor<1x3x1xf32>) -> tensor<3xf32> {
  %r = nnvm.squeeze %x {axes = [0, -1]} : (tensor<1x3x1xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// CHECK-LABEL: @expand_dims
// CHECK: %{{.*}} = nnvm.expand_dims %x {axes = [0, 3]} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.expand_dims"(%x) <{axes = array<i64: 0, 3>}> : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
func.func @expand_dims(%x: tensor<2x3xf32>) -> tensor<1x2x3x1xf32> {
  %r = nnvm.expand_dims %x {axes = [0, 3]} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  func.return %r : tensor<1x2x3x1xf32>
}

// CHECK-LABEL: @transpose
// CHECK: %{{.*}} = nnvm.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %r = nnvm.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  func.return %r : tensor<4x2x3xf32>
}

// CHECK-LABEL: @layout_transform
// CHECK: %{{.*}} = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.layout_transform"(%x) <{src_layout = "NCHW", dst_layout = "NCHW8c"}> : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
func.func @layout_transform(%x: tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32> {
  %r = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x16x5x5xf32>) -> tensor<1x2x5x5x8xf32>
  func.return %r : tensor<1x2x5x5x8xf32>
}

// CHECK-LABEL: @layout_transform_back
// CHECK: %{{.*}} = nnvm.layout_transform %x {src_layout = "NCHW8c", dst_layout = "NHWC"} : (tensor<1x2x5x5x8xf32>) -> tensor<1x5x5x16xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.layout_transform"(%x) <{src_layout = "NCHW8c", dst_layout = "NHWC"}> : (tensor<1x2x5x5x8xf32>) -> tensor<1x5x5x16xf32>
func.func @layout_transform_back(%x: tensor<1x2x5x5x8xf32>) -> tensor<1x5x5x16xf32> {
  %r = nnvm.layout_transform %x {src_layout = "NCHW8c", dst_layout = "NHWC"} : (tensor<1x2x5x5x8xf32>) -> tensor<1x5x5x16xf32>
  func.return %r : tensor<1x5x5x16xf32>
}

// 20 channels in NCHW8c: three blocks, the last half padding; back to NHWC, `logical`
// drops it.
// CHECK-LABEL: @layout_transform_padded
// CHECK: %p = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x20x5x5xf32>) -> tensor<1x3x5x5x8xf32>
// CHECK: %{{.*}} = nnvm.layout_transform %p {src_layout = "NCHW8c", dst_layout = "NHWC", logical = [1, 20, 5, 5]} : (tensor<1x3x5x5x8xf32>) -> tensor<1x5x5x20xf32>
// CHECK-GENERIC: "nnvm.layout_transform"(%p) <{src_layout = "NCHW8c", dst_layout = "NHWC", logical = array<i64: 1, 20, 5, 5>}> : (tensor<1x3x5x5x8xf32>) -> tensor<1x5x5x20xf32>
func.func @layout_transform_padded(%x: tensor<1x20x5x5xf32>) -> tensor<1x5x5x20xf32> {
  %p = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCHW8c"} : (tensor<1x20x5x5xf32>) -> tensor<1x3x5x5x8xf32>
  %r = nnvm.layout_transform %p {src_layout = "NCHW8c", dst_layout = "NHWC", logical = array<i64: 1, 20, 5, 5>} : (tensor<1x3x5x5x8xf32>) -> tensor<1x5x5x20xf32>
  func.return %r : tensor<1x5x5x20xf32>
}

// CHECK-LABEL: @layout_transform_kernel
// CHECK: %{{.*}} = nnvm.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW4i8o"} : (tensor<16x8x3x3xf32>) -> tensor<2x2x3x3x4x8xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.layout_transform"(%w) <{src_layout = "OIHW", dst_layout = "OIHW4i8o"}> : (tensor<16x8x3x3xf32>) -> tensor<2x2x3x3x4x8xf32>
func.func @layout_transform_kernel(%w: tensor<16x8x3x3xf32>) -> tensor<2x2x3x3x4x8xf32> {
  %r = nnvm.layout_transform %w {src_layout = "OIHW", dst_layout = "OIHW4i8o"} : (tensor<16x8x3x3xf32>) -> tensor<2x2x3x3x4x8xf32>
  func.return %r : tensor<2x2x3x3x4x8xf32>
}

// CHECK-LABEL: @depth_to_space
// CHECK: %{{.*}} = nnvm.depth_to_space %x {blocksize = 2, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.depth_to_space"(%x) <{blocksize = 2 : i64, mode = "CRD"}> : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
func.func @depth_to_space(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %r = nnvm.depth_to_space %x {blocksize = 2, mode = "CRD"} : (tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32>
  func.return %r : tensor<1x2x4x6xf32>
}

// CHECK-LABEL: @space_to_depth
// CHECK: %{{.*}} = nnvm.space_to_depth %x {blocksize = 2} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.space_to_depth"(%x) <{blocksize = 2 : i64, mode = "DCR"}> : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
func.func @space_to_depth(%x: tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32> {
  %r = nnvm.space_to_depth %x {blocksize = 2} : (tensor<1x2x4x6xf32>) -> tensor<1x8x2x3xf32>
  func.return %r : tensor<1x8x2x3xf32>
}

// CHECK-LABEL: @concat
// CHECK: %{{.*}} = nnvm.concat %a, %b, %c {axis = -1} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.concat"(%a, %b, %c) <{axis = -1 : i64}> : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %r = nnvm.concat %a, %b, %c {axis = -1} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}

// CHECK-LABEL: @concat_one
// CHECK: %{{.*}} = nnvm.concat %a {axis = 0} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-GENERIC: %{{.*}} = "nnvm.concat"(%a) <{axis = 0 : i64}> : (tensor<2x3xi64>) -> tensor<2x3xi64>
func.func @concat_one(%a: tensor<2x3xi64>) -> tensor<2x3xi64> {
  %r = nnvm.concat %a {axis = 0} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %r : tensor<2x3xi64>
}

// CHECK-LABEL: @split
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = nnvm.split %x {axis = 1, sizes = [1, 2, 3]} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
// CHECK-GENERIC: %{{.*}}, %{{.*}}, %{{.*}} = "nnvm.split"(%x) <{axis = 1 : i64, sizes = array<i64: 1, 2, 3>}> : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>) {
  %r0, %r1, %r2 = nnvm.split %x {axis = 1, sizes = [1, 2, 3]} : (tensor<2x6xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  func.return %r0, %r1, %r2 : tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: @split_default_axis
// CHECK: %{{.*}}, %{{.*}} = nnvm.split %x {sizes = [2, 2]} : (tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-GENERIC: %{{.*}}, %{{.*}} = "nnvm.split"(%x) <{sizes = array<i64: 2, 2>, axis = 0 : i64}> : (tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
func.func @split_default_axis(%x: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r0, %r1 = nnvm.split %x {sizes = [2, 2]} : (tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  func.return %r0, %r1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: @slice
// CHECK: %{{.*}} = nnvm.slice %x {starts = [-1, 1], ends = [-9223372036854775807, 100], axes = [0, 2], steps = [-1, 2]} : (tensor<3x4x5xf32>) -> tensor<3x4x2xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.slice"(%x) <{starts = array<i64: -1, 1>, ends = array<i64: -9223372036854775807, 100>, axes = array<i64: 0, 2>, steps = array<i64: -1, 2>}> : (tensor<3x4x5xf32>) -> tensor<3x4x2xf32>
func.func @slice(%x: tensor<3x4x5xf32>) -> tensor<3x4x2xf32> {
  %r = nnvm.slice %x {starts = [-1, 1], ends = [-9223372036854775807, 100], axes = [0, 2], steps = [-1, 2]} : (tensor<3x4x5xf32>) -> tensor<3x4x2xf32>
  func.return %r : tensor<3x4x2xf32>
}

// CHECK-LABEL: @gather
// CHECK: %{{.*}} = nnvm.gather %x, %i {axis = 1} : (tensor<3x4xf32>, tensor<2x2xi32>) -> tensor<3x2x2xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.gather"(%x, %i) <{axis = 1 : i64}> : (tensor<3x4xf32>, tensor<2x2xi32>) -> tensor<3x2x2xf32>
func.func @gather(%x: tensor<3x4xf32>, %i: tensor<2x2xi32>) -> tensor<3x2x2xf32> {
  %r = nnvm.gather %x, %i {axis = 1} : (tensor<3x4xf32>, tensor<2x2xi32>) -> tensor<3x2x2xf32>
  func.return %r : tensor<3x2x2xf32>
}

// CHECK-LABEL: @gather_default_axis
// CHECK: %{{.*}} = nnvm.gather %x, %i : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32>
func.func @gather_default_axis(%x: tensor<3x4xf32>, %i: tensor<i64>) -> tensor<4xf32> {
  %r = nnvm.gather %x, %i : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: @gather_nd
// CHECK: %{{.*}} = nnvm.gather_nd %x, %i {batch_dims = 1} : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.gather_nd"(%x, %i) <{batch_dims = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>
func.func @gather_nd(%x: tensor<2x3x4xf32>, %i: tensor<2x5x1xi64>) -> tensor<2x5x4xf32> {
  %r = nnvm.gather_nd %x, %i {batch_dims = 1} : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>
  func.return %r : tensor<2x5x4xf32>
}

// CHECK-LABEL: @broadcast_to
// CHECK: %{{.*}} = nnvm.broadcast_to %x {shape = [2, 3, 4]} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.broadcast_to"(%x) <{shape = array<i64: 2, 3, 4>}> : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
func.func @broadcast_to(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %r = nnvm.broadcast_to %x {shape = [2, 3, 4]} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// CHECK-LABEL: @tile
// CHECK: %{{.*}} = nnvm.tile %x {repeats = [2, 1]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.tile"(%x) <{repeats = array<i64: 2, 1>}> : (tensor<2x3xf32>) -> tensor<4x3xf32>
func.func @tile(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %r = nnvm.tile %x {repeats = [2, 1]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// CHECK-LABEL: @pad
// CHECK: %{{.*}} = nnvm.pad %x {pads = [0, 1, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x7xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.pad"(%x) <{pads = array<i64: 0, 1, 2, 3>, mode = "constant", value = 0.000000e+00 : f64}> : (tensor<2x3xf32>) -> tensor<4x7xf32>
func.func @pad(%x: tensor<2x3xf32>) -> tensor<4x7xf32> {
  %r = nnvm.pad %x {pads = [0, 1, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  func.return %r : tensor<4x7xf32>
}

// CHECK-LABEL: @pad_value
// CHECK: %{{.*}} = nnvm.pad %x {pads = [1, -1, 0, 2], value = -1.5} : (tensor<2x3xf32>) -> tensor<3x4xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.pad"(%x) <{pads = array<i64: 1, -1, 0, 2>, value = -1.500000e+00 : f64, mode = "constant"}> : (tensor<2x3xf32>) -> tensor<3x4xf32>
func.func @pad_value(%x: tensor<2x3xf32>) -> tensor<3x4xf32> {
  %r = nnvm.pad %x {pads = [1, -1, 0, 2], value = -1.5} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}

// CHECK-LABEL: @pad_reflect
// CHECK: %{{.*}} = nnvm.pad %x {pads = [1, 2, 3, 4], mode = "reflect"} : (tensor<4x5xf32>) -> tensor<8x11xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.pad"(%x) <{pads = array<i64: 1, 2, 3, 4>, mode = "reflect", value = 0.000000e+00 : f64}> : (tensor<4x5xf32>) -> tensor<8x11xf32>
func.func @pad_reflect(%x: tensor<4x5xf32>) -> tensor<8x11xf32> {
  %r = nnvm.pad %x {pads = [1, 2, 3, 4], mode = "reflect"} : (tensor<4x5xf32>) -> tensor<8x11xf32>
  func.return %r : tensor<8x11xf32>
}

// CHECK-LABEL: @pad_wrap
// CHECK: %{{.*}} = nnvm.pad %x {pads = [5, 0, 0, 7], mode = "wrap"} : (tensor<4x5xf32>) -> tensor<9x12xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.pad"(%x) <{pads = array<i64: 5, 0, 0, 7>, mode = "wrap", value = 0.000000e+00 : f64}> : (tensor<4x5xf32>) -> tensor<9x12xf32>
func.func @pad_wrap(%x: tensor<4x5xf32>) -> tensor<9x12xf32> {
  %r = nnvm.pad %x {pads = [5, 0, 0, 7], mode = "wrap"} : (tensor<4x5xf32>) -> tensor<9x12xf32>
  func.return %r : tensor<9x12xf32>
}

// CHECK-LABEL: @resize_nearest
// CHECK: %{{.*}} = nnvm.resize %x {size = [1, 3, 8, 8]} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.resize"(%x) <{size = array<i64: 1, 3, 8, 8>, scales = array<f64>, roi = array<f64>, mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = false, extrapolation_value = 0.000000e+00 : f64, antialias = false}> : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
func.func @resize_nearest(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32> {
  %r = nnvm.resize %x {size = [1, 3, 8, 8]} : (tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
  func.return %r : tensor<1x3x8x8xf32>
}

// CHECK-LABEL: @resize_linear
// CHECK: %{{.*}} = nnvm.resize %x {size = [1, 3, 6, 2], scales = [1.0, 1.0, 1.5, 0.5], mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x2xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.resize"(%x) <{size = array<i64: 1, 3, 6, 2>, scales = array<f64: 1.000000e+00, 1.000000e+00, 1.500000e+00, 5.000000e-01>, mode = "linear", coordinate_transformation_mode = "align_corners", roi = array<f64>, nearest_mode = "round_prefer_floor", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = false, extrapolation_value = 0.000000e+00 : f64, antialias = false}> : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x2xf32>
func.func @resize_linear(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x6x2xf32> {
  %r = nnvm.resize %x {size = [1, 3, 6, 2], scales = [1.0, 1.0, 1.5, 0.5], mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x6x2xf32>
  func.return %r : tensor<1x3x6x2xf32>
}

// CHECK-LABEL: @resize_cubic
// CHECK: %{{.*}} = nnvm.resize %x {size = [1, 3, 9, 9], mode = "cubic", coordinate_transformation_mode = "pytorch_half_pixel", cubic_coeff_a = -0.5, exclude_outside = true} : (tensor<1x3x4x4xf32>) -> tensor<1x3x9x9xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.resize"(%x) <{size = array<i64: 1, 3, 9, 9>, mode = "cubic", coordinate_transformation_mode = "pytorch_half_pixel", cubic_coeff_a = -5.000000e-01 : f64, exclude_outside = true, scales = array<f64>, roi = array<f64>, nearest_mode = "round_prefer_floor", extrapolation_value = 0.000000e+00 : f64, antialias = false}> : (tensor<1x3x4x4xf32>) -> tensor<1x3x9x9xf32>
func.func @resize_cubic(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x9x9xf32> {
  %r = nnvm.resize %x {size = [1, 3, 9, 9], mode = "cubic", coordinate_transformation_mode = "pytorch_half_pixel", cubic_coeff_a = -0.5, exclude_outside = true} : (tensor<1x3x4x4xf32>) -> tensor<1x3x9x9xf32>
  func.return %r : tensor<1x3x9x9xf32>
}

// CHECK-LABEL: @resize_crop
// CHECK: %{{.*}} = nnvm.resize %x {size = [1, 1, 3, 3], roi = [0.0, 0.0, 0.25, 0.25, 1.0, 1.0, 0.75, 1.25], coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor", extrapolation_value = 7.0} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.resize"(%x) <{size = array<i64: 1, 1, 3, 3>, roi = array<f64: 0.000000e+00, 0.000000e+00, 2.500000e-01, 2.500000e-01, 1.000000e+00, 1.000000e+00, 7.500000e-01, 1.250000e+00>, coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor", extrapolation_value = 7.000000e+00 : f64, scales = array<f64>, mode = "nearest", cubic_coeff_a = -7.500000e-01 : f64, exclude_outside = false, antialias = false}> : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
func.func @resize_crop(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  %r = nnvm.resize %x {size = [1, 1, 3, 3], roi = [0.0, 0.0, 0.25, 0.25, 1.0, 1.0, 0.75, 1.25], coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor", extrapolation_value = 7.0} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  func.return %r : tensor<1x1x3x3xf32>
}

// CHECK-LABEL: @identity
// CHECK: %{{.*}} = nnvm.identity %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-GENERIC: %{{.*}} = "nnvm.identity"(%x) : (tensor<2x3xi32>) -> tensor<2x3xi32>
func.func @identity(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = nnvm.identity %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: @dropout
// CHECK: %{{.*}} = nnvm.dropout %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.dropout"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @dropout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = nnvm.dropout %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: @cumsum
// CHECK: %{{.*}} = nnvm.cumsum %x {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: %{{.*}} = "nnvm.cumsum"(%x) <{axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @cumsum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = nnvm.cumsum %x {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: @cumsum_exclusive_reverse
// CHECK: %{{.*}} = nnvm.cumsum %x {axis = -2, exclusive = true, reverse = true} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-GENERIC: %{{.*}} = "nnvm.cumsum"(%x) <{axis = -2 : i64, exclusive = true, reverse = true}> : (tensor<2x3xi64>) -> tensor<2x3xi64>
func.func @cumsum_exclusive_reverse(%x: tensor<2x3xi64>) -> tensor<2x3xi64> {
  %r = nnvm.cumsum %x {axis = -2, exclusive = true, reverse = true} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %r : tensor<2x3xi64>
}
