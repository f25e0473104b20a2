// Layers accel-lower-layers refuses (lower-layers.mlir checks the errors).
func.func @strides(%x: tensor<1x16x8x8xi8>, %w: tensor<16x16x3x3xi8>, %r: tensor<16xi32>, %s: tensor<16xi32>) -> tensor<1x16x6x3xi8> {
  %y = accel.conv2d %x : tensor<1x16x8x8xi8>, %w : tensor<16x16x3x3xi8> rounding %r : tensor<16xi32> shift %s : tensor<16xi32> {strides = array<i64: 1, 2>} -> tensor<1x16x6x3xi8>
  func.return %y : tensor<1x16x6x3xi8>
}
// -----
func.func @padding(%x: tensor<1x16x8x8xi8>, %w: tensor<16x16x3x3xi8>, %r: tensor<16xi32>, %s: tensor<16xi32>) -> tensor<1x16x7x7xi8> {
  %y = accel.conv2d %x : tensor<1x16x8x8xi8>, %w : tensor<16x16x3x3xi8> rounding %r : tensor<16xi32> shift %s : tensor<16xi32> {padding = array<i64: 1, 1, 0, 0>} -> tensor<1x16x7x7xi8>
  func.return %y : tensor<1x16x7x7xi8>
}
// -----
func.func @too_big(%x: tensor<1x16x40x40xi8>, %w: tensor<16x16x33x33xi8>, %r: tensor<16xi32>, %s: tensor<16xi32>) -> tensor<1x16x8x8xi8> {
  %y = accel.conv2d %x : tensor<1x16x40x40xi8>, %w : tensor<16x16x33x33xi8> rounding %r : tensor<16xi32> shift %s : tensor<16xi32> -> tensor<1x16x8x8xi8>
  func.return %y : tensor<1x16x8x8xi8>
}
