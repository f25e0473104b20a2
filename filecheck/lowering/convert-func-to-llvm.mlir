// RUN: nnvm-opt %s --split-input-file -p convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// Kernel ABI: memref arguments are bare pointers; public kernels keep external linkage,
// private helpers with a body become internal; declarations stay external.
// CHECK-LABEL: llvm.func @kernel(%in: !llvm.ptr, %out: !llvm.ptr, %n: i64) {
// CHECK-NEXT:    %s = llvm.call @helper(%in, %out) : (!llvm.ptr, !llvm.ptr) -> f32
// CHECK-NEXT:    llvm.call @ext(%s) : (f32) -> ()
// CHECK-NEXT:    llvm.return
func.func @kernel(%in: memref<16xf32>, %out: memref<16xf32>, %n: index) {
  %s = func.call @helper(%in, %out) : (memref<16xf32>, memref<16xf32>) -> f32
  func.call @ext(%s) : (f32) -> ()
  func.return
}
// CHECK-LABEL: llvm.func internal @helper(%a: !llvm.ptr, %b: !llvm.ptr) -> f32 {
// CHECK-NEXT:    %c = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    llvm.return %c : f32
func.func private @helper(%a: memref<16xf32>, %b: memref<16xf32>) -> f32 {
  %c = arith.constant 1.0 : f32
  func.return %c : f32
}
// CHECK: llvm.func @ext(f32)
func.func private @ext(f32)

// -----

// `llvm.*` argument attributes (noalias, ...) are kept.
// CHECK-LABEL: llvm.func @attrs(%a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr) {
// CHECK-NEXT:    llvm.return
func.func @attrs(%a: memref<4xf32> {llvm.noalias}, %b: memref<4xf32> {other.attr}) {
  func.return
}
