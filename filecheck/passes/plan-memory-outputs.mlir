// RUN: nnvm-opt %s -p 'fuse{enable=false},plan-memory' | filecheck %s

// A kernel whose result is a graph output still ends the life of what it reads last: %a dies
// at the sigmoid that makes the first output, so %c reuses its storage (a training graph
// returns gradients all along its backward pass; before, every value they read stayed live).
// CHECK: storages = array<i64: 64, 64>
// CHECK: %a = func.call {{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
// CHECK: %b = func.call {{.*}} {nnvm.storage = array<i64: 1>, nnvm.offset = array<i64: 64>}
// CHECK: %o1 = func.call
// CHECK: %c = func.call {{.*}} {nnvm.storage = array<i64: 0>, nnvm.offset = array<i64: 0>}
func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = nnvm.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %b = nnvm.tanh %x : (tensor<8xf32>) -> tensor<8xf32>
  %o1 = nnvm.sigmoid %a : (tensor<8xf32>) -> tensor<8xf32>
  %c = nnvm.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %o2 = nnvm.add %b, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %o1, %o2 : tensor<8xf32>, tensor<8xf32>
}
