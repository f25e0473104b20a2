// te.prefetch of a tensor the stage does not read (prefetch.mlir checks the error).
func.func @other(%W: tensor<4x16xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.compute "y" [i] sum [k : 16] = %W[i, k] : (tensor<4x16xf32>) -> tensor<4xf32>
  te.schedule {
    te.split "y" k by 4 -> (k.o, k.i)
    te.prefetch "y" "arg1" at k.o by 2
  }
  func.return %y : tensor<4xf32>
}
