// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Verifier errors of hint.prefetch (one index per dimension, LLVM's locality 0 to 3).

func.func @indices(%m: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{hint.prefetch: 1 indices for a rank-2 memref}}
  hint.prefetch %m[%i] {locality = 3 : i64} : memref<4x8xf32>
  func.return
}

// -----

func.func @locality(%m: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{hint.prefetch: locality is 0 to 3}}
  hint.prefetch %m[%i, %i] {locality = 4 : i64} : memref<4x8xf32>
  func.return
}
