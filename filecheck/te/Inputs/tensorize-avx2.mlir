// The byte dot product on x86-64-v3 (tensorize.mlir checks it): 8 lanes, no VNNI.
func.func @dot8(%x: tensor<2x8xui8>, %w: tensor<2x2x8x4xi8>) -> tensor<2x16xi32> {
  %y = te.compute "y" [i, n] sum [k : 8] = cast<i32>(%x[i, k]) * cast<i32>(%w[floordiv(n, 8), floordiv(k, 4), rem(n, 8), rem(k, 4)]) : (tensor<2x8xui8>, tensor<2x2x8x4xi8>) -> tensor<2x16xi32>
  te.schedule {
    te.split "y" n by 8 -> (n.o, n.i)
    te.split "y" k by 4 -> (k.o, k.i)
    te.reorder "y" (i, k.o, n.o, n.i, k.i)
    te.tensorize "y" n.i with "dot_u8i8"
  }
  func.return %y : tensor<2x16xi32>
}
