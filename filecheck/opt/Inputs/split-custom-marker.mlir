// Chunks separated by a marker other than mlir-opt's `// -----` (split-input-file.mlir uses it).
func.func @one(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// ---
func.func @two(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = nnvm.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
