// A tensorize over loops in the wrong order (tensorize.mlir checks the error).
func.func @dot(%x: tensor<4x8xui8>, %w: tensor<2x2x16x4xi8>) -> tensor<4x32xi32> {
  %y = te.compute "y" [i, n] sum [k : 8] = cast<i32>(%x[i, k]) * cast<i32>(%w[floordiv(n, 16), floordiv(k, 4), rem(n, 16), rem(k, 4)]) : (tensor<4x8xui8>, tensor<2x2x16x4xi8>) -> tensor<4x32xi32>
  te.schedule {
    te.split "y" n by 16 -> (n.o, n.i)
    te.split "y" k by 4 -> (k.o, k.i)
    te.reorder "y" (i, n.o, k.o, k.i, n.i)
    te.tensorize "y" k.i with "dot_u8i8"
  }
  func.return %y : tensor<4x32xi32>
}
