// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

func.func @empty_name() -> tensor<2xf32> {
  // expected-error @+1 {{nnvm.param needs a non-empty name}}
  %w = nnvm.param "" : tensor<2xf32>
  func.return %w : tensor<2xf32>
}

// -----

func.func @unranked() -> tensor<2xf32> {
  // expected-error @+1 {{nnvm.param must produce a ranked tensor}}
  %w = nnvm.param "w" : f32
  func.return %w : tensor<2xf32>
}

// -----

func.func @not_dense() -> tensor<2xf32> {
  // expected-error @+1 {{nnvm.constant expects a dense<...> : tensor<...> value}}
  %c = nnvm.constant 1.0 : f32
  func.return %c : tensor<2xf32>
}
