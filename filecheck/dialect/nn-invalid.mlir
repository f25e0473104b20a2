// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the nn ops: each names the operand, the attribute or the shapes at fault.

func.func @dense_k(%a0: tensor<2x3xf32>, %a1: tensor<4x5xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{dense: data has K = 3 but weight [4, 5] expects K = 5}}
  %0 = nnvm.dense %a0, %a1 : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @dense_weight_rank(%a0: tensor<2x3xf32>, %a1: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{dense: weight must be 2-D [N, K], got rank 1}}
  %0 = nnvm.dense %a0, %a1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @dense_int(%a0: tensor<2x3xi32>, %a1: tensor<4x3xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{dense needs a float element type, got i32}}
  %0 = nnvm.dense %a0, %a1 : (tensor<2x3xi32>, tensor<4x3xi32>) -> tensor<2x4xi32>
  func.return %0 : tensor<2x4xi32>
}

// -----

func.func @dense_result(%a0: tensor<2x3xf32>, %a1: tensor<4x3xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inferred type tensor<2x4xf32> of result disagrees with the declared tensor<2x5xf32>}}
  %0 = nnvm.dense %a0, %a1 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_k(%a0: tensor<2x3xf32>, %a1: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{matmul: contracting dimensions differ}}
  %0 = nnvm.matmul %a0, %a1 : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_batch(%a0: tensor<2x2x3xf32>, %a1: tensor<3x3x5xf32>) -> tensor<2x2x5xf32> {
  // expected-error @+1 {{shapes [2], [3] do not broadcast}}
  %0 = nnvm.matmul %a0, %a1 : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  func.return %0 : tensor<2x2x5xf32>
}

// -----

func.func @matmul_panels(%a: tensor<2x3xf32>, %b: tensor<2x3x16xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{matmul: rhs_panel = 32 needs a [N/32, K, 32] rhs, got [2, 3, 16]}}
  %0 = nnvm.matmul %a, %b {rhs_panel = 32} : (tensor<2x3xf32>, tensor<2x3x16xf32>) -> tensor<2x64xf32>
  func.return %0 : tensor<2x64xf32>
}

// -----

func.func @matmul_mixed(%a0: tensor<2x3xf32>, %a1: tensor<3x5xf16>) -> tensor<2x5xf32> {
  // expected-error @+1 {{matmul operands must share one element type, got f32 and f16}}
  %0 = nnvm.matmul %a0, %a1 : (tensor<2x3xf32>, tensor<3x5xf16>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @batch_matmul_rank(%a0: tensor<3x4xf32>, %a1: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{batch_matmul operands must be 3-D, got ranks 2 and 2}}
  %0 = nnvm.batch_matmul %a0, %a1 : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}

// -----

func.func @batch_matmul_batch(%a0: tensor<2x3x4xf32>, %a1: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{batch_matmul: batch sizes 2 and 3 do not broadcast}}
  %0 = nnvm.batch_matmul %a0, %a1 : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}

// -----

func.func @batch_matmul_transposed(%a0: tensor<2x3x4xf32>, %a1: tensor<2x4x5xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{batch_matmul: contracting dimensions differ (4 vs 5)}}
  %0 = nnvm.batch_matmul %a0, %a1 {transpose_b = true} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// -----

func.func @bias_add_length(%a0: tensor<1x16x4x4xf32>, %a1: tensor<4xf32>) -> tensor<1x16x4x4xf32> {
  // expected-error @+1 {{bias_add: bias must have shape [16], got [4]}}
  %0 = nnvm.bias_add %a0, %a1 : (tensor<1x16x4x4xf32>, tensor<4xf32>) -> tensor<1x16x4x4xf32>
  func.return %0 : tensor<1x16x4x4xf32>
}

// -----

func.func @bias_add_axis(%a0: tensor<2x3xf32>, %a1: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{bias_add axis 2 is out of range for rank 2}}
  %0 = nnvm.bias_add %a0, %a1 {axis = 2} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @softmax_axis(%a0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{nnvm.softmax axis -3 is out of range for rank 2}}
  %0 = nnvm.softmax %a0 {axis = -3} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @log_softmax_int(%a0: tensor<2x3xi64>) -> tensor<2x3xi64> {
  // expected-error @+1 {{nnvm.log_softmax needs a float element type, got i64}}
  %0 = nnvm.log_softmax %a0 : (tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}

// -----

func.func @batch_norm_channels(%a0: tensor<1x3x4x4xf32>, %a1: tensor<4xf32>, %a2: tensor<3xf32>, %a3: tensor<3xf32>, %a4: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{batch_norm: gamma must have shape [3], got [4]}}
  %0 = nnvm.batch_norm %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x4x4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @batch_norm_var(%a0: tensor<1x3x4x4xf32>, %a1: tensor<3xf32>, %a2: tensor<3xf32>, %a3: tensor<3xf32>, %a4: tensor<3x1xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{batch_norm: var must have shape [3], got [3, 1]}}
  %0 = nnvm.batch_norm %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @layer_norm_gamma(%a0: tensor<2x7x16xf32>, %a1: tensor<7xf32>, %a2: tensor<16xf32>) -> tensor<2x7x16xf32> {
  // expected-error @+1 {{layer_norm: gamma of shape [7] does not broadcast to the normalized shape [16]}}
  %0 = nnvm.layer_norm %a0, %a1, %a2 : (tensor<2x7x16xf32>, tensor<7xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
  func.return %0 : tensor<2x7x16xf32>
}

// -----

func.func @layer_norm_axis(%a0: tensor<2x7x16xf32>, %a1: tensor<16xf32>, %a2: tensor<16xf32>) -> tensor<2x7x16xf32> {
  // expected-error @+1 {{layer_norm axis 3 is out of range for rank 3}}
  %0 = nnvm.layer_norm %a0, %a1, %a2 {axis = 3} : (tensor<2x7x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
  func.return %0 : tensor<2x7x16xf32>
}

// -----

func.func @instance_norm_rank(%a0: tensor<2x3xf32>, %a1: tensor<3xf32>, %a2: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{instance_norm: data must be [N, C, spatial...], got rank 2}}
  %0 = nnvm.instance_norm %a0, %a1, %a2 : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @instance_norm_beta(%a0: tensor<2x3x5xf32>, %a1: tensor<3xf32>, %a2: tensor<5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+1 {{instance_norm: beta must have shape [3], got [5]}}
  %0 = nnvm.instance_norm %a0, %a1, %a2 : (tensor<2x3x5xf32>, tensor<3xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  func.return %0 : tensor<2x3x5xf32>
}

// -----

func.func @lrn_size(%a0: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  // expected-error @+1 {{lrn: size must be >= 1, got 0}}
  %0 = nnvm.lrn %a0 {size = 0} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %0 : tensor<1x8x4x4xf32>
}

// -----

func.func @lrn_missing_size(%a0: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  // expected-error @+1 {{property 'size' expected}}
  %0 = nnvm.lrn %a0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %0 : tensor<1x8x4x4xf32>
}

// -----

func.func @prelu_slope(%a0: tensor<1x3x4x4xf32>, %a1: tensor<4x3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{prelu: slope of shape [4, 3, 1, 1] does not broadcast to [1, 3, 4, 4]}}
  %0 = nnvm.prelu %a0, %a1 : (tensor<1x3x4x4xf32>, tensor<4x3x1x1xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}
