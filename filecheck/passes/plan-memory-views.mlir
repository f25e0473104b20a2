// RUN: nnvm-opt %s -p plan-memory | filecheck %s

// A kernel that only reshapes is a view: no storage, its readers read its input's bytes, and
// the input stays live while they do. %a's last direct reader is the second exp, an
// elementwise kernel that would write in place over a dying input; %a is not dying (the view
// %v of it is read after), so %b gets a storage of its own. A view the function returns
// stays a kernel (its result belongs in the caller's buffer).
// CHECK:      %a = func.call @fused_exp(%x) {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK-NEXT: %v = func.call @fused_reshape(%a) {nnvm.view}
// CHECK-NEXT: %b = func.call @fused_exp(%a) {nnvm.storage = array<i64: 1>, nnvm.offset = array<i64: 128>}
// CHECK-NEXT: %c = func.call @fused_reshape(%b) {nnvm.view}
// CHECK-NEXT: %d = func.call @fused_add(%v, %c) {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK-NEXT: %e = func.call @fused_reshape_back(%d) :
// CHECK-NOT:  nnvm.view
// CHECK:      func.return %e
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = func.call @fused_exp(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = func.call @fused_reshape(%a) : (tensor<4x8xf32>) -> tensor<32xf32>
  %b = func.call @fused_exp(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = func.call @fused_reshape(%b) : (tensor<4x8xf32>) -> tensor<32xf32>
  %d = func.call @fused_add(%v, %c) : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %e = func.call @fused_reshape_back(%d) : (tensor<32xf32>) -> tensor<4x8xf32>
  func.return %e : tensor<4x8xf32>
}
func.func private @fused_exp(%0: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {nnvm.pattern = "elemwise"} {
  %1 = nnvm.exp %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
func.func private @fused_reshape(%0: tensor<4x8xf32>) -> tensor<32xf32> attributes {nnvm.pattern = "injective"} {
  %1 = nnvm.reshape %0 {shape = [32]} : (tensor<4x8xf32>) -> tensor<32xf32>
  func.return %1 : tensor<32xf32>
}
func.func private @fused_reshape_back(%0: tensor<32xf32>) -> tensor<4x8xf32> attributes {nnvm.pattern = "injective"} {
  %1 = nnvm.reshape %0 {shape = [4, 8]} : (tensor<32xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
func.func private @fused_add(%0: tensor<32xf32>, %1: tensor<32xf32>) -> tensor<32xf32> attributes {nnvm.pattern = "elemwise"} {
  %2 = nnvm.add %0, %1 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  func.return %2 : tensor<32xf32>
}
