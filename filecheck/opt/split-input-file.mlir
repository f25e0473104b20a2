// RUN: nnvm-opt %s --split-input-file | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p cse | filecheck %s --check-prefix=CSE

// Each chunk is parsed and processed on its own; chunks are re-joined with the marker.
// CHECK-LABEL: func.func @first
// CHECK: // -----
// CHECK-LABEL: func.func @second
// CSE-LABEL: func.func @first
// CSE-COUNT-1: nnvm.exp
// CSE-NOT: nnvm.exp
// CSE: // -----
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nnvm.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = nnvm.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %c = nnvm.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// The same SSA names may be reused in another chunk.
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nnvm.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
