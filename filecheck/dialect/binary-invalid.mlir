// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{shapes [2, 3], [4] do not broadcast}}
  %0 = nnvm.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @mixed_types(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{operands have different element types f32 and f16}}
  %0 = nnvm.mul %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @compare_result(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{inferred type tensor<3xi1> of result disagrees with the declared tensor<3xf32>}}
  %0 = nnvm.less %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @logic_on_floats(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{nnvm.logical_and does not accept element type f32}}
  %0 = nnvm.logical_and %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @where_condition(%c: tensor<3xf32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{where: condition must be a tensor of i1}}
  %0 = nnvm.where %c, %a, %a : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @add_n_types(%a: tensor<3xf32>, %b: tensor<3xf64>) -> tensor<3xf32> {
  // expected-error @+1 {{add_n operands must share an element type}}
  %0 = nnvm.add_n %a, %b : (tensor<3xf32>, tensor<3xf64>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
