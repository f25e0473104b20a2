// RUN: nnvm-opt %s --split-input-file | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p cse | filecheck %s --check-prefix=CSE
// The bare flag takes no value: the file may follow it, as with mlir-opt.
// RUN: nnvm-opt --split-input-file %s | filecheck %s
// RUN: nnvm-opt --split-input-file %s -p cse | filecheck %s --check-prefix=CSE
// A custom marker only comes as --split-input-file=MARKER; output chunks are joined with it.
// RUN: nnvm-opt '--split-input-file=// ---' %S/Inputs/split-custom-marker.mlir | filecheck %s --check-prefix=MARKER
// RUN: nnvm-opt %S/Inputs/split-custom-marker.mlir '--split-input-file=// ---' | filecheck %s --check-prefix=MARKER
// RUN: not nnvm-opt --split-input-file= %s 2>&1 | filecheck %s --check-prefix=EMPTY

// Each chunk is parsed and processed on its own; chunks are re-joined with the marker.
// CHECK-LABEL: func.func @first
// CHECK: // -----
// CHECK-LABEL: func.func @second
// CSE-LABEL: func.func @first
// CSE-COUNT-1: nnvm.exp
// CSE-NOT: nnvm.exp
// CSE: // -----
// MARKER-LABEL: func.func @one
// MARKER: {{^}}// ---{{$}}
// MARKER-LABEL: func.func @two
// MARKER: nnvm.neg
// EMPTY: nnvm-opt: error: --split-input-file=MARKER needs a non-empty marker
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
