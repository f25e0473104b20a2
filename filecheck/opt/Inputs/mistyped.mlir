func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  // channels: the weight wants 4 inputs, data has 3
  %y = nnvm.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}
