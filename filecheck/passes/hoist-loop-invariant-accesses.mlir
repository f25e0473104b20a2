// RUN: nnvm-opt %s -p hoist-loop-invariant-accesses | filecheck %s

// A 2-vector register tile: accumulated in a depth loop, the second column only where the
// tile is not at a tail (a guard inside the loop). Both become iter_args; the guarded update
// is an scf.if result; the tile is loaded once before the loop and stored once after it.
// CHECK-LABEL: func.func @tile
// CHECK:         %[[A0:[0-9a-z_]+]] = vector.load %acc[%{{.*}}, %{{.*}}] : memref<2x16xf32>, vector<16xf32>
// CHECK:         %[[A1:[0-9a-z_]+]] = vector.load %acc[%{{.*}}, %{{.*}}] : memref<2x16xf32>, vector<16xf32>
// CHECK:         %[[R0:[0-9a-z_]+]], %[[R1:[0-9a-z_]+]] = scf.for %k = %c0 to %n step %c1 iter_args(%[[X0:[0-9a-z_]+]] = %[[A0]], %[[X1:[0-9a-z_]+]] = %[[A1]]) -> (vector<16xf32>, vector<16xf32>) {
// CHECK-NOT:       vector.load %acc
// CHECK-NOT:       vector.store {{.*}} %acc
// CHECK:           %[[F0:[0-9a-z_]+]] = vector.fma %{{.*}}, %{{.*}}, %[[X0]]
// CHECK:           %[[G:[0-9a-z_]+]] = scf.if %full -> (vector<16xf32>) {
// CHECK:             %[[F1:[0-9a-z_]+]] = vector.fma %{{.*}}, %{{.*}}, %[[X1]]
// CHECK:             scf.yield %[[F1]] : vector<16xf32>
// CHECK:           } else {
// CHECK:             scf.yield %[[X1]] : vector<16xf32>
// CHECK:           scf.yield %[[F0]], %[[G]] : vector<16xf32>, vector<16xf32>
// CHECK:         vector.store %[[R0]], %acc
// CHECK:         vector.store %[[R1]], %acc
func.func @tile(%a: memref<64x16xf32>, %w: memref<64x16xf32>, %out: memref<2x16xf32>, %n: index, %full: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %acc = memref.alloca() : memref<2x16xf32>
  vector.store %zero, %acc[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
  vector.store %zero, %acc[%c1, %c0] : memref<2x16xf32>, vector<16xf32>
  scf.for %k = %c0 to %n step %c1 {
    %x = vector.load %a[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %y = vector.load %w[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %s0 = vector.load %acc[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
    %t0 = vector.fma %x, %y, %s0 : vector<16xf32>
    vector.store %t0, %acc[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
    scf.if %full {
      %s1 = vector.load %acc[%c1, %c0] : memref<2x16xf32>, vector<16xf32>
      %t1 = vector.fma %y, %x, %s1 : vector<16xf32>
      vector.store %t1, %acc[%c1, %c0] : memref<2x16xf32>, vector<16xf32>
    }
  }
  %r0 = vector.load %acc[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
  %r1 = vector.load %acc[%c1, %c0] : memref<2x16xf32>, vector<16xf32>
  vector.store %r0, %out[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
  vector.store %r1, %out[%c1, %c0] : memref<2x16xf32>, vector<16xf32>
  func.return
}

// Left alone: an index that varies in the loop, a buffer that escapes (here into a call), and
// a function argument (another pointer may alias it).
// CHECK-LABEL: func.func @kept
// CHECK:         scf.for %k = %c0 to %n step %c1 {
// CHECK:           vector.load %v[%k, %c0]
// CHECK:           vector.store {{.*}}, %v[%k, %c0]
// CHECK:           vector.load %e[%c0, %c0]
// CHECK:           vector.store {{.*}}, %e[%c0, %c0]
// CHECK:           vector.load %out[%c0, %c0]
// CHECK:           vector.store {{.*}}, %out[%c0, %c0]
func.func private @sink(memref<2x16xf32>)
func.func @kept(%a: memref<64x16xf32>, %out: memref<2x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.alloca() : memref<64x16xf32>
  %e = memref.alloca() : memref<2x16xf32>
  scf.for %k = %c0 to %n step %c1 {
    %x = vector.load %a[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %s = vector.load %v[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %t = arith.addf %s, %x : vector<16xf32>
    vector.store %t, %v[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %p = vector.load %e[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
    %q = arith.addf %p, %x : vector<16xf32>
    vector.store %q, %e[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
    %o = vector.load %out[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
    %u = arith.addf %o, %x : vector<16xf32>
    vector.store %u, %out[%c0, %c0] : memref<2x16xf32>, vector<16xf32>
  }
  func.call @sink(%e) : (memref<2x16xf32>) -> ()
  func.return
}

// A row of register tiles kept in one buffer across the blocks of a reduction (a conv whose
// input channels run in blocks): the tile's places are [%r, %col] and [%r, %col + 1], indices
// computed inside the depth loop from values fixed in it. They are promoted out of the depth
// loop (their indices recomputed in front of it), not out of the column loop they vary in.
// CHECK-LABEL: func.func @row_of_tiles
// CHECK:         scf.for %t = %c0 to %c4 step %c1 {
// CHECK:           %[[COL:[0-9a-z_]+]] = arith.muli %t, %c2 : index
// CHECK:           %[[COL2:[0-9a-z_]+]] = arith.muli %t, %c2 : index
// CHECK:           %[[NEXT:[0-9a-z_]+]] = arith.addi %[[COL2]], %c1 : index
// CHECK:           %[[A0:[0-9a-z_]+]] = vector.load %acc[%r, %[[COL]], %c0]
// CHECK:           %[[A1:[0-9a-z_]+]] = vector.load %acc[%r, %[[NEXT]], %c0]
// CHECK:           %[[R0:[0-9a-z_]+]], %[[R1:[0-9a-z_]+]] = scf.for %k = %c0 to %n step %c1 iter_args(%{{.*}} = %[[A0]], %{{.*}} = %[[A1]])
// CHECK-NOT:         %acc
// CHECK:           }
// CHECK:           vector.store %[[R0]], %acc[%r, %[[COL]], %c0]
// CHECK:           vector.store %[[R1]], %acc[%r, %[[NEXT]], %c0]
func.func @row_of_tiles(%a: memref<64x16xf32>, %w: memref<64x16xf32>, %n: index, %r: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %acc = memref.alloca() : memref<4x8x16xf32>
  scf.for %t = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %n step %c1 {
      %x = vector.load %a[%k, %c0] : memref<64x16xf32>, vector<16xf32>
      %y = vector.load %w[%k, %c0] : memref<64x16xf32>, vector<16xf32>
      %col = arith.muli %t, %c2 : index
      %s0 = vector.load %acc[%r, %col, %c0] : memref<4x8x16xf32>, vector<16xf32>
      %t0 = vector.fma %x, %y, %s0 : vector<16xf32>
      vector.store %t0, %acc[%r, %col, %c0] : memref<4x8x16xf32>, vector<16xf32>
      %col2 = arith.muli %t, %c2 : index
      %next = arith.addi %col2, %c1 : index
      %s1 = vector.load %acc[%r, %next, %c0] : memref<4x8x16xf32>, vector<16xf32>
      %t1 = vector.fma %y, %x, %s1 : vector<16xf32>
      vector.store %t1, %acc[%r, %next, %c0] : memref<4x8x16xf32>, vector<16xf32>
    }
  }
  func.return
}

// Left alone: places [%i] and [%j], both fixed in the loop, that may be the same place (no
// constant separates them), and two vectors 8 lanes apart that overlap.
// CHECK-LABEL: func.func @maybe_overlapping
// CHECK:         scf.for %k = %c0 to %n step %c1 {
// CHECK:           vector.load %acc[%i, %c0]
// CHECK:           vector.store {{.*}}, %acc[%j, %c0]
// CHECK:           vector.load %lanes[%c0]
// CHECK:           vector.store {{.*}}, %lanes[%c8]
func.func @maybe_overlapping(%a: memref<64x16xf32>, %n: index, %i: index, %j: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %acc = memref.alloca() : memref<4x16xf32>
  %lanes = memref.alloca() : memref<32xf32>
  scf.for %k = %c0 to %n step %c1 {
    %x = vector.load %a[%k, %c0] : memref<64x16xf32>, vector<16xf32>
    %s = vector.load %acc[%i, %c0] : memref<4x16xf32>, vector<16xf32>
    %t = arith.addf %s, %x : vector<16xf32>
    vector.store %t, %acc[%j, %c0] : memref<4x16xf32>, vector<16xf32>
    %p = vector.load %lanes[%c0] : memref<32xf32>, vector<16xf32>
    %q = arith.addf %p, %x : vector<16xf32>
    vector.store %q, %lanes[%c8] : memref<32xf32>, vector<16xf32>
  }
  func.return
}
