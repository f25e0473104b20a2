// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Data-movement ops reject operands and properties no result can satisfy.

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape [2, 3] (6 elements) to [5] (5 elements)}}
  %r = nnvm.reshape %x {shape = [5]} : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return
}

// -----

func.func @reshape_dynamic(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{must be static (no -1)}}
  %r = nnvm.reshape %x {shape = [-1]} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{flatten: axis 3 is out of range for rank 2}}
  %r = nnvm.flatten %x {axis = 3} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  func.return
}

// -----

func.func @squeeze_not_one(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{squeeze: axis 1 has extent 3, not 1}}
  %r = nnvm.squeeze %x {axes = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @expand_dims_twice(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{name an axis twice}}
  %r = nnvm.expand_dims %x {axes = [0, -4]} : (tensor<2x3xf32>) -> tensor<1x1x2x3xf32>
  func.return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{transpose: perm [1, 1] is not a permutation of 0..1}}
  %r = nnvm.transpose %x {perm = [1, 1]} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{inferred type tensor<3x2xf32> of result disagrees with the declared tensor<2x3xf32>}}
  %r = nnvm.transpose %x {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @layout_transform_letters(%x: tensor<1x8x2x2xf32>) {
  // expected-error @+1 {{is not a layout over the axes of}}
  %r = nnvm.layout_transform %x {src_layout = "NCHW", dst_layout = "NCDHW"} : (tensor<1x8x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @layout_transform_logical(%x: tensor<1x2x2x2x4xf32>) {
  // expected-error @+1 {{does not hold the logical shape [1, 9, 2, 2]}}
  %r = nnvm.layout_transform %x {src_layout = "NCHW4c", dst_layout = "NCHW", logical = array<i64: 1, 9, 2, 2>} : (tensor<1x2x2x2x4xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @depth_to_space_channels(%x: tensor<1x6x2x2xf32>) {
  // expected-error @+1 {{channels 6 are not divisible by blocksize^2 4}}
  %r = nnvm.depth_to_space %x {blocksize = 2} : (tensor<1x6x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @space_to_depth_mode(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{mode must be DCR or CRD}}
  %r = nnvm.space_to_depth %x {blocksize = 2, mode = "XYZ"} : (tensor<1x2x4x4xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{off the concatenation axis 1}}
  %r = nnvm.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @concat_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) {
  // expected-error @+1 {{operand #1 has element type i64}}
  %r = nnvm.concat %a, %b {axis = 0} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<*xf32>
  func.return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{operand #1 has rank 3, operand #0 2}}
  %r = nnvm.concat %a, %b {axis = 0} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @split_sizes(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{split: sizes [2, 2] do not add up to the extent 6 of axis 1}}
  %r:2 = nnvm.split %x {axis = 1, sizes = [2, 2]} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}

// -----

func.func @split_results(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{produces 2 results, but 1 are declared}}
  %r = nnvm.split %x {axis = 1, sizes = [2, 4]} : (tensor<2x6xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @slice_lengths(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{must have one length, got 2, 1, 1, 1}}
  %r = nnvm.slice %x {starts = [0, 0], ends = [1], axes = [0], steps = [1]} : (tensor<2x6xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @slice_step(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{steps must be non-zero}}
  %r = nnvm.slice %x {starts = [0], ends = [1], axes = [1], steps = [0]} : (tensor<2x6xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @slice_duplicate_axis(%x: tensor<2x6xf32>) {
  // expected-error @+1 {{name an axis twice}}
  %r = nnvm.slice %x {starts = [0, 0], ends = [1, 1], axes = [1, -1], steps = [1, 1]} : (tensor<2x6xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @gather_float_indices(%x: tensor<2x6xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{gather: indices must be integers, got f32}}
  %r = nnvm.gather %x, %i : (tensor<2x6xf32>, tensor<3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @gather_axis(%x: tensor<2x6xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{gather: axis -3 is out of range for rank 2}}
  %r = nnvm.gather %x, %i {axis = -3} : (tensor<2x6xf32>, tensor<3xi64>) -> tensor<*xf32>
  func.return
}

// -----

func.func @gather_nd_depth(%x: tensor<2x6xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{indices address 3 axes, but data has 2}}
  %r = nnvm.gather_nd %x, %i : (tensor<2x6xf32>, tensor<4x3xi64>) -> tensor<*xf32>
  func.return
}

// -----

func.func @gather_nd_batch(%x: tensor<2x6xf32>, %i: tensor<3x1xi64>) {
  // expected-error @+1 {{the 1 batch axes differ: data [2], indices [3]}}
  %r = nnvm.gather_nd %x, %i {batch_dims = 1} : (tensor<2x6xf32>, tensor<3x1xi64>) -> tensor<*xf32>
  func.return
}

// -----

func.func @broadcast_to_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{broadcast_to: shape [2, 3] does not broadcast to [4, 3]}}
  %r = nnvm.broadcast_to %x {shape = [4, 3]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @tile_repeats(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{must be >= 0}}
  %r = nnvm.tile %x {repeats = [1, -1]} : (tensor<2x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @pad_count(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{3 pads for a tensor of rank 2 (need 4)}}
  %r = nnvm.pad %x {pads = [1, 1, 1]} : (tensor<2x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @pad_reflect(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{reflect pads 0, 2 exceed the extent 2 - 1 of axis 0}}
  %r = nnvm.pad %x {pads = [0, 0, 2, 0], mode = "reflect"} : (tensor<2x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{mode must be constant, reflect, edge or wrap}}
  %r = nnvm.pad %x {pads = [0, 0, 0, 0], mode = "symmetric"} : (tensor<2x3xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @resize_rank(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{must have one entry per axis (4)}}
  %r = nnvm.resize %x {size = [4, 4]} : (tensor<1x1x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @resize_mode(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{mode must be nearest, linear or cubic}}
  %r = nnvm.resize %x {size = [1, 1, 4, 4], mode = "area"} : (tensor<1x1x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @resize_nearest_mode(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{unknown nearest_mode}}
  %r = nnvm.resize %x {size = [1, 1, 4, 4], nearest_mode = "simple"} : (tensor<1x1x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @resize_int_linear(%x: tensor<1x1x2x2xi32>) {
  // expected-error @+1 {{linear interpolation needs a float tensor}}
  %r = nnvm.resize %x {size = [1, 1, 4, 4], mode = "linear"} : (tensor<1x1x2x2xi32>) -> tensor<*xi32>
  func.return
}

// -----

func.func @resize_roi(%x: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{roi must be empty or 8 values}}
  %r = nnvm.resize %x {size = [1, 1, 4, 4], roi = [0.0, 1.0]} : (tensor<1x1x2x2xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{cumsum: axis 2 is out of range for rank 2}}
  %r = nnvm.cumsum %x {axis = 2} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @cumsum_bool(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{cumsum does not accept element type i1}}
  %r = nnvm.cumsum %x {axis = 0} : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return
}
