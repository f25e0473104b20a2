// te.prefetch: at the top of each iteration of the named loop, a hint.prefetch of the element
// the stage reads `offset` iterations later (inner loops at 0), and of each other cache line
// the loops inside read there (a vector wider than a line, a short unrolled loop);
// convert-to-llvm makes it llvm.prefetch (read, locality 3, data) on a GEP that need not be in
// bounds.
// RUN: nnvm-opt %s --split-input-file -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"},convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: nnvm-opt %s --split-input-file -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | nnvm-opt --split-input-file | filecheck %s
// RUN: nnvm-opt %s --split-input-file | nnvm-opt --split-input-file | filecheck %s --check-prefix=RT
// RUN: not nnvm-opt %S/Inputs/prefetch-invalid.mlir -p 'lower-te-to-loops' 2>&1 | filecheck %s --check-prefix=BAD

// RT: te.prefetch "y" "arg0" at k.o by 8
// CHECK-LABEL: func.func @gemv
// CHECK:      scf.for %k.o = %c0 to %c64 step %c1 {
// CHECK-NEXT:   %[[A:.*]] = arith.addi %k.o, %c8 : index
// CHECK-NEXT:   %[[S:.*]] = arith.muli %[[A]], %c16 : index
// CHECK-NEXT:   hint.prefetch %W[%i, %[[S]]] {locality = 3 : i64} : memref<4x1024xf32>
// CHECK-NEXT:   scf.for %k.i
// LLVM-LABEL: llvm.func @gemv
// LLVM:       %[[P:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:       llvm.call_intrinsic "llvm.prefetch.p0"(%[[P]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i32) -> ()
func.func @gemv(%W: tensor<4x1024xf32>, %x: tensor<1024xf32>) -> tensor<4xf32> {
  %y = te.compute "y" [i] sum [k : 1024] = %W[i, k] * %x[k] : (tensor<4x1024xf32>, tensor<1024xf32>) -> tensor<4xf32>
  te.schedule {
    te.split "y" k by 16 -> (k.o, k.i)
    te.prefetch "y" "arg0" at k.o by 8
  }
  func.return %y : tensor<4xf32>
}

// -----

// A vector of 32 floats spans two 64-byte lines: both are prefetched (a matmul panel's row,
// read by 8 rows: 16 vector multiply-adds an iteration, at least 8 per prefetch).
// CHECK-LABEL: func.func @panel
// CHECK:      scf.for %k = %c0 to %c64 step %c1 {
// CHECK-NEXT:   %[[K:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:   hint.prefetch %B[%[[K]], %c0] {locality = 3 : i64} : memref<64x32xf32>
// CHECK-NEXT:   hint.prefetch %B[%[[K]], %c16] {locality = 3 : i64} : memref<64x32xf32>
// CHECK-NOT:    hint.prefetch
// CHECK:      }
func.func @panel(%A: tensor<8x64xf32>, %B: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %c = te.compute "c" [i, j] sum [k : 64] = %A[i, k] * %B[k, j] : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  te.schedule {
    te.reorder "c" (k, i, j)
    te.unroll "c" i
    te.vectorize "c" j
    te.prefetch "c" "arg1" at k by 8
  }
  func.return %c : tensor<8x32xf32>
}

// -----

// One row of 32 floats (2 multiply-adds an iteration): the first line only (an LSTM step's
// weights sit in L2; more prefetches for the work made it 1.07-1.35x slower).
// CHECK-LABEL: func.func @one_row
// CHECK:      scf.for %k = %c0 to %c64 step %c1 {
// CHECK-NEXT:   %[[K:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:   hint.prefetch %B[%[[K]], %c0] {locality = 3 : i64} : memref<64x32xf32>
// CHECK-NOT:    hint.prefetch
// CHECK:      }
func.func @one_row(%A: tensor<1x64xf32>, %B: tensor<64x32xf32>) -> tensor<1x32xf32> {
  %c = te.compute "c" [i, j] sum [k : 64] = %A[i, k] * %B[k, j] : (tensor<1x64xf32>, tensor<64x32xf32>) -> tensor<1x32xf32>
  te.schedule {
    te.reorder "c" (i, k, j)
    te.vectorize "c" j
    te.prefetch "c" "arg1" at k by 8
  }
  func.return %c : tensor<1x32xf32>
}

// -----

// An unrolled loop over rows of the weights (a conv tile's channel blocks): one prefetch per
// row; a loop the read does not depend on (the tile's columns) adds none.
// CHECK-LABEL: func.func @blocks
// CHECK:      scf.for %k = %c0 to %c64 step %c1 {
// CHECK-NEXT:   %[[K0:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:   hint.prefetch %W[%c0, %[[K0]], %c0] {locality = 3 : i64} : memref<2x64x16xf32>
// CHECK-NEXT:   %[[K1:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:   hint.prefetch %W[%c1, %[[K1]], %c0] {locality = 3 : i64} : memref<2x64x16xf32>
// CHECK-NOT:    hint.prefetch
// CHECK:      }
func.func @blocks(%W: tensor<2x64x16xf32>, %x: tensor<8x64xf32>) -> tensor<2x8x16xf32> {
  %y = te.compute "y" [o, c, j] sum [k : 64] = %W[o, k, j] * %x[c, k] : (tensor<2x64x16xf32>, tensor<8x64xf32>) -> tensor<2x8x16xf32>
  te.schedule {
    te.reorder "y" (k, c, o, j)
    te.unroll "y" c
    te.unroll "y" o
    te.vectorize "y" j
    te.prefetch "y" "arg0" at k by 8
  }
  func.return %y : tensor<2x8x16xf32>
}

// BAD: prefetch-invalid.mlir:6:5: error: te.prefetch: 'y' does not read 'arg1'
// BAD-NOT: Traceback
