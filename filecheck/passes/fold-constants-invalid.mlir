// RUN: python -c "import numpy as np; from nnvm.support.params import save_params_file as s; s('%t.params', {'table': np.ones((4, 2), np.float32)})"
// RUN: nnvm-opt %s -p fold-constants --params %t.params --verify-diagnostics

// An index out of range in a compile-time computation is reported at the op.
func.func @bad_gather() -> tensor<1x2xf32> {
  %t = nnvm.param "table" : tensor<4x2xf32>
  %i = nnvm.constant dense<[7]> : tensor<1xi64>
  // expected-error @+1 {{cannot fold nnvm.gather at compile time}}
  %g = nnvm.gather %t, %i : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<1x2xf32>
  func.return %g : tensor<1x2xf32>
}
