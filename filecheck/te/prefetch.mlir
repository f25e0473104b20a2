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
// RUN: not nnvm-opt %S/Inputs/prefetch-spread-invalid.mlir -p 'lower-te-to-loops' 2>&1 | filecheck %s --check-prefix=SPREAD
// RUN: not nnvm-opt %S/Inputs/prefetch-spread-self.mlir -p 'lower-te-to-loops' 2>&1 | filecheck %s --check-prefix=SELF

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
// row, of the same iteration ahead; a loop the read does not depend on (the tile's columns)
// adds none.
// CHECK-LABEL: func.func @blocks
// CHECK:      scf.for %k = %c0 to %c64 step %c1 {
// CHECK-NEXT:   %[[K:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:   hint.prefetch %W[%c0, %[[K]], %c0] {locality = 3 : i64} : memref<2x64x16xf32>
// CHECK-NEXT:   hint.prefetch %W[%c1, %[[K]], %c0] {locality = 3 : i64} : memref<2x64x16xf32>
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
// SPREAD: prefetch-spread-invalid.mlir:7:5: error: te.prefetch: the spread loop i.o is not outside k
// SPREAD-NOT: Traceback
// SELF: prefetch-spread-self.mlir:7:5: error: te.prefetch: a loop cannot spread its own prefetch

// -----

// `spread i.o`: the two row tiles share the fetch of the next depth block (offset 64): tile i
// at iteration k prefetches the row read at 64 + (i * 64 + k) / 2, so the block streams in
// while both tiles compute instead of while the first one does.
// RT: te.prefetch "c" "arg1" at k by 64 spread i.o
// CHECK-LABEL: func.func @spread
// CHECK:      scf.for %i.o = %c0 to %c2 step %c1 {
// CHECK:        scf.for %k = %c0 to %c64 step %c1 {
// CHECK-NEXT:     %[[P:.*]] = arith.muli %i.o, %c64 : index
// CHECK-NEXT:     %[[Q:.*]] = arith.addi %[[P]], %k : index
// CHECK-NEXT:     %[[D:.*]] = arith.floordivsi %[[Q]], %c2 : index
// CHECK-NEXT:     %[[R:.*]] = arith.addi %[[D]], %c64 : index
// CHECK:          hint.prefetch %B[%[[R]], %c0] {locality = 3 : i64} : memref<64x32xf32>
// CHECK-NEXT:     hint.prefetch %B[%[[R]], %c16] {locality = 3 : i64} : memref<64x32xf32>
// CHECK-NOT:      hint.prefetch
func.func @spread(%A: tensor<16x64xf32>, %B: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %c = te.compute "c" [i, j] sum [k : 64] = %A[i, k] * %B[k, j] : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  te.schedule {
    te.split "c" i by 8 -> (i.o, i.i)
    te.reorder "c" (i.o, k, i.i, j)
    te.unroll "c" i.i
    te.vectorize "c" j
    te.prefetch "c" "arg1" at k by 64 spread i.o
  }
  func.return %c : tensor<16x32xf32>
}
