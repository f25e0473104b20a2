// RUN: nnvm-opt %s --split-input-file --verify-diagnostics --pass infer-shapes

// A declared result type that contradicts inference is rejected at the op.
func.func @wrong_result(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{inferred type tensor<2x3xf32> of result disagrees with the declared tensor<2x4xf32>}}
  %y = nnvm.relu %x : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// -----

// Shapes that do not broadcast: found once infer-shapes makes the operand static.
func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<*xf32> {
  %r = nnvm.relu %a : (tensor<2x3xf32>) -> tensor<*xf32>
  // expected-error @+1 {{do not broadcast}}
  %s = nnvm.add %r, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<*xf32>
  func.return %s : tensor<*xf32>
}
