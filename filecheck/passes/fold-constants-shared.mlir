// RUN: python -c "import numpy as np; from nnvm.support.params import save_params_file as s; s('%t.params', {'w': np.arange(64, dtype=np.float32).reshape(8, 8), 'v': np.ones((8, 8), np.float32)})"
// RUN: nnvm-opt %s -p fold-constants --params %t.params --params-out %t.out.params | filecheck %s
// RUN: python -c "from nnvm.support.params import load_params_file as l; p = l('%t.out.params'); print(sorted(p), p['w.transpose'][0, 1])" | filecheck %s --check-prefix=STORE

// A weight shared by two layers and transposed for each (ALBERT's shared encoder layers): the
// two transposes compute the same thing, so there is one folded param and both matmuls read
// it; the same transpose of another weight is a param of its own.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[T:.*]] = nnvm.param "w.transpose" : tensor<8x8xf32>
// CHECK-NEXT:    %[[A:.*]] = nnvm.matmul %x, %[[T]]
// CHECK-NEXT:    %[[B:.*]] = nnvm.matmul %[[A]], %[[T]]
// CHECK-NEXT:    %[[U:.*]] = nnvm.param "v.transpose" : tensor<8x8xf32>
// CHECK-NEXT:    %[[C:.*]] = nnvm.matmul %x, %[[U]]
// CHECK-NEXT:    %{{.*}} = nnvm.add %[[B]], %[[C]]
// STORE: ['v.transpose', 'w.transpose'] 8.0
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = nnvm.param "w" : tensor<8x8xf32>
  %t1 = nnvm.transpose %w {perm = [1, 0]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = nnvm.matmul %x, %t1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %t2 = nnvm.transpose %w {perm = [1, 0]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = nnvm.matmul %a, %t2 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %v = nnvm.param "v" : tensor<8x8xf32>
  %t3 = nnvm.transpose %v {perm = [1, 0]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %c = nnvm.matmul %x, %t3 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %y = nnvm.add %b, %c : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
