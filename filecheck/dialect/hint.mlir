// The hint dialect: hint.prefetch prints and parses back, in the custom and generic forms.
// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP

// CHECK-LABEL: func.func @prefetch
// CHECK: hint.prefetch %m[%i, %j] {locality = 3 : i64} : memref<4x8xf32>
// CHECK: hint.prefetch %m[%j, %i] {locality = 0 : i64} : memref<4x8xf32>
func.func @prefetch(%m: memref<4x8xf32>, %i: index, %j: index) {
  hint.prefetch %m[%i, %j] {locality = 3 : i64} : memref<4x8xf32>
  hint.prefetch %m[%j, %i] {locality = 0 : i64} : memref<4x8xf32>
  func.return
}
