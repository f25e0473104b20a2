func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = nnvm.frobnicate %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
