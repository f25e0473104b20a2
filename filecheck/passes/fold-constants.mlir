// RUN: python -c "import numpy as np; from nnvm.support.params import save_params_file as s; s('%t.params', {'conv.weight': np.ones((4, 3, 3, 3), np.float32), 'bn.scale': np.full((4, 1, 1, 1), 2, np.float32), 'unused': np.zeros(3, np.float32)})"
// RUN: nnvm-opt %s -p fold-constants --params %t.params --params-out %t.out.params | filecheck %s
// RUN: python -c "from nnvm.support.params import load_params_file as l; p = l('%t.out.params'); print(sorted(p), float(p['conv.weight.mul'].sum()))" | filecheck %s --check-prefix=STORE

// A weight computed from params becomes a new param named after its source; the params it
// came from leave the store; small results stay inline.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[W:.*]] = nnvm.param "conv.weight.mul" : tensor<4x3x3x3xf32>
// CHECK-NEXT: nnvm.conv2d %x, %[[W]]
// CHECK-NEXT: %[[C:.*]] = nnvm.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT: nnvm.mul %{{.*}}, %[[C]]
// CHECK-NOT: bn.scale
// STORE: ['conv.weight.mul'] 216.0
func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x6x6xf32> {
  %w = nnvm.param "conv.weight" : tensor<4x3x3x3xf32>
  %s = nnvm.param "bn.scale" : tensor<4x1x1x1xf32>
  %ws = nnvm.mul %w, %s : (tensor<4x3x3x3xf32>, tensor<4x1x1x1xf32>) -> tensor<4x3x3x3xf32>
  %y = nnvm.conv2d %x, %ws : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %c = nnvm.constant dense<2.0> : tensor<f32>
  %c2 = nnvm.mul %c, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %z = nnvm.mul %y, %c2 : (tensor<1x4x6x6xf32>, tensor<f32>) -> tensor<1x4x6x6xf32>
  func.return %z : tensor<1x4x6x6xf32>
}

// Nothing to fold: everything depends on the input.
// CHECK-LABEL: func.func @runtime_only
// CHECK-NEXT: nnvm.exp %x
// CHECK-NEXT: nnvm.add
// CHECK-NEXT: func.return
func.func @runtime_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = nnvm.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %a = nnvm.add %e, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
