// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// Broadcasting binary ops, comparisons (i1 results), logic, where and add_n.

// CHECK-LABEL: @arith
// CHECK: nnvm.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.sub %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.mul %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.div %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.pow %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.maximum %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.minimum %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: nnvm.mod %a, %b {fmod = true} : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-GENERIC: "nnvm.add"(%a, %b) : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-GENERIC: "nnvm.mod"(%a, %b) <{fmod = true}> : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
func.func @arith(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = nnvm.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = nnvm.sub %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %2 = nnvm.mul %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %3 = nnvm.div %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %4 = nnvm.pow %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %5 = nnvm.maximum %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %6 = nnvm.minimum %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %7 = nnvm.mod %a, %b {fmod = true} : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: @compare
// CHECK: nnvm.equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.not_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.less %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.less_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.greater %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.greater_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
// CHECK: nnvm.logical_and %{{.*}}, %{{.*}} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// CHECK: nnvm.logical_or %{{.*}}, %{{.*}} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// CHECK: nnvm.logical_xor %{{.*}}, %{{.*}} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
func.func @compare(%a: tensor<4xi64>, %b: tensor<1xi64>) -> tensor<4xi1> {
  %0 = nnvm.equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %1 = nnvm.not_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %2 = nnvm.less %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %3 = nnvm.less_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %4 = nnvm.greater %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %5 = nnvm.greater_equal %a, %b : (tensor<4xi64>, tensor<1xi64>) -> tensor<4xi1>
  %6 = nnvm.logical_and %0, %1 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %7 = nnvm.logical_or %6, %2 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %8 = nnvm.logical_xor %7, %3 : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %8 : tensor<4xi1>
}

// CHECK-LABEL: @select
// CHECK: nnvm.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
// CHECK: nnvm.add_n %x, %y, %x : (tensor<3xf32>, tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
func.func @select(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<1xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %0 = nnvm.where %c, %x, %y : (tensor<2x1xi1>, tensor<3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %1 = nnvm.add_n %x, %y, %x : (tensor<3xf32>, tensor<1xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}
