// te.prefetch spread by its own loop (prefetch.mlir checks the error).
func.func @inside(%A: tensor<16x64xf32>, %B: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %c = te.compute "c" [i, j] sum [k : 64] = %A[i, k] * %B[k, j] : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  te.schedule {
    te.split "c" i by 8 -> (i.o, i.i)
    te.reorder "c" (k, i.o, i.i, j)
    te.prefetch "c" "arg1" at k by 8 spread k
  }
  func.return %c : tensor<16x32xf32>
}
