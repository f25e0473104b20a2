// Malformed te IR is a located diagnostic: formula parse errors and verifier errors.
// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

func.func @k(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown axis or let-name 'q'}}
  %y = te.compute "y" [i] = %A[q] : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'exp' takes 1 argument(s), got 2}}
  %y = te.compute "y" [i] = exp(%A[i], 1.0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the formula reads 1 tensor(s), but 2 type(s) are given}}
  %y = te.compute "y" [i] = %A[i] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{%A has rank 1, but is read with 2 indices}}
  %y = te.compute "y" [i] = %A[i, 0] : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>, %n: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'+' combines f32 and i32}}
  %y = te.compute "y" [i] = %A[i] + %n[i] : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{the formula computes f32, but the result holds i32}}
  %y = te.compute "y" [i] = %A[i] : (tensor<4xf32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{te.compute has 2 spatial axes but its result has rank 1}}
  %y = te.compute "y" [i, j] = %A[i] : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{te.compute 'y': axis names repeat: ['k', 'k']}}
  %y = te.compute "y" [] sum [k : 4, k : 1] = %A[k] : (tensor<4xf32>) -> tensor<f32>
  func.return %y : tensor<f32>
}

// -----

func.func @k(%A: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{te.compute: reduction extents must be >= 1}}
  %y = te.compute "y" [] max [k : 0] = %A[k] : (tensor<4xf32>) -> tensor<f32>
  func.return %y : tensor<f32>
}
