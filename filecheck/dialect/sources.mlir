// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// Weights are named params (values live in the params store); small values are inline.
// CHECK-LABEL: @sources
// CHECK: %w = nnvm.param "conv1.weight" : tensor<64x3x7x7xf32>
// CHECK: %s = nnvm.constant dense<[1, 3, 224, 224]> : tensor<4xi64>
// CHECK: %e = nnvm.constant dense<1.000000e-05> : tensor<f32>
// CHECK-GENERIC: "nnvm.param"() <{name = "conv1.weight"}> : () -> tensor<64x3x7x7xf32>
// CHECK-GENERIC: "nnvm.constant"() <{value = dense<[1, 3, 224, 224]> : tensor<4xi64>}> : () -> tensor<4xi64>
func.func @sources() -> (tensor<64x3x7x7xf32>, tensor<4xi64>, tensor<f32>) {
  %w = nnvm.param "conv1.weight" : tensor<64x3x7x7xf32>
  %s = nnvm.constant dense<[1, 3, 224, 224]> : tensor<4xi64>
  %e = nnvm.constant dense<1.0e-05> : tensor<f32>
  func.return %w, %s, %e : tensor<64x3x7x7xf32>, tensor<4xi64>, tensor<f32>
}
