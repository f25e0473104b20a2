// RUN: not nnvm-opt %s 2>&1 | FileCheck %s

// A symbol defined twice is reported at its second definition (the verifier that finds it
// belongs to the implicit top-level module, which has no position of its own).

// CHECK: symbol-redefinition.mlir:[[# @LINE + 4]]:1: error: Redefinition of symbol "f"
func.func @f(%a: tensor<f32>) -> tensor<f32> {
  func.return %a : tensor<f32>
}
func.func @f(%a: tensor<f32>) -> tensor<f32> {
  func.return %a : tensor<f32>
}
