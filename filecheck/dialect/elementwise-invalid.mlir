// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

func.func @relu_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{inferred type tensor<2x3xf32> of result disagrees with the declared tensor<3x2xf32>}}
  %y = nnvm.relu %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

func.func @exp_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{nnvm.exp does not accept element type i32}}
  %y = nnvm.exp %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

func.func @relu_dtype(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{disagrees with the declared tensor<4xf16>}}
  %y = nnvm.relu %x : (tensor<4xf32>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// -----

func.func @not_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{nnvm.logical_not does not accept element type f32}}
  %y = nnvm.logical_not %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @cast_unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cast: data type 'complex-ish' not understood}}
  %y = nnvm.cast %x {to = "complex-ish"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{gelu approximate must be "none" or "tanh"}}
  %y = nnvm.gelu %x {approximate = "exact"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @bad_prop_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{property 'alpha' of nnvm.leaky_relu cannot be "big"}}
  %y = nnvm.leaky_relu %x {alpha = "big"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @operand_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has 2 operands but its type lists 1}}
  %y = nnvm.relu %x, %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
