// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the reductions (axes, empty axes, result types).

func.func @sum_axis(%a0: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{nnvm.sum axis 3 is out of range for rank 3}}
  %0 = nnvm.sum %a0 {axes = [3]} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @sum_repeat(%a0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{nnvm.sum: axes [1, -2] repeat an axis}}
  %0 = nnvm.sum %a0 {axes = [1, -2]} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @sum_missing_axes(%a0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{property 'axes' expected}}
  %0 = nnvm.sum %a0 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// -----

func.func @mean_keepdims(%a0: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{inferred type tensor<2x1x4xf32> of result disagrees with the declared tensor<2x4xf32>}}
  %0 = nnvm.mean %a0 {axes = [1], keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @max_empty(%a0: tensor<2x0x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{nnvm.max: cannot reduce an axis of extent 0}}
  %0 = nnvm.max %a0 {axes = [1]} : (tensor<2x0x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @prod_bool(%a0: tensor<2x3xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{nnvm.prod does not accept element type i1}}
  %0 = nnvm.prod %a0 {axes = [0]} : (tensor<2x3xi1>) -> tensor<3xi1>
  func.return %0 : tensor<3xi1>
}

// -----

func.func @min_scalar(%a0: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{nnvm.min: a rank-0 tensor has no axes to reduce}}
  %0 = nnvm.min %a0 {axes = [0]} : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @argmax_axis(%a0: tensor<2x3xf32>) -> tensor<2x1xi64> {
  // expected-error @+1 {{nnvm.argmax axis 2 is out of range for rank 2}}
  %0 = nnvm.argmax %a0 {axis = 2} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  func.return %0 : tensor<2x1xi64>
}

// -----

func.func @argmin_result(%a0: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{inferred type tensor<2x1xi64> of result disagrees with the declared tensor<2x1xf32>}}
  %0 = nnvm.argmin %a0 {axis = 1} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}
