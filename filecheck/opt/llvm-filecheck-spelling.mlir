// RUN lines from LLVM's tree spell the checker FileCheck; lit.cfg maps that command word onto
// filecheck (a prefix that happens to read FileCheck is left alone).
// RUN: nnvm-opt %s | FileCheck %s
// RUN: nnvm-opt %s | not FileCheck %s --check-prefix=WRONG
// RUN: nnvm-opt %s | FileCheck %s --check-prefix=FileCheck

// CHECK-LABEL: func.func @f
// CHECK: nnvm.relu
// WRONG: nnvm.sigmoid
// FileCheck: nnvm.relu
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nnvm.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
