// Each schedule primitive's effect on the loop nest that lower-te-to-loops emits.
// RUN: nnvm-opt %s --split-input-file -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | filecheck %s

// No schedule: one loop per axis, the reduction initialised just outside its loop. Kernels
// take memrefs, inputs then outputs, and return nothing (the kernel ABI).
// CHECK-LABEL: func.func @plain(%A: memref<5x16xf32>, %B: memref<16x9xf32>, %out: memref<5x9xf32>)
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK-NEXT:   scf.for %j = %c0 to %c9 step %c1 {
// CHECK-NEXT:     %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     memref.store %[[Z]], %out[%i, %j]
// CHECK-NEXT:     scf.for %k = %c0 to %c16 step %c1 {
// CHECK:            %[[ACC:.*]] = memref.load %out[%i, %j]
// CHECK-NEXT:       math.fma %{{.*}}, %{{.*}}, %[[ACC]]
func.func @plain(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  func.return %C : tensor<5x9xf32>
}

// -----

// split: 4 does not divide 9, so the inner loop runs min(4, 9 - j.o * 4) times (the tail).
// CHECK-LABEL: func.func @split
// CHECK:      scf.for %j.o = %c0 to %c3 step %c1 {
// CHECK-NEXT:   %[[S:.*]] = arith.muli %j.o, %c4 : index
// CHECK-NEXT:   %[[R:.*]] = arith.subi %c9, %[[S]] : index
// CHECK-NEXT:   %[[UB:.*]] = arith.minsi %c4, %[[R]] : index
// CHECK-NEXT:   scf.for %j.i = %c0 to %[[UB]] step %c1 {
// CHECK-NEXT:     %[[O:.*]] = arith.muli %j.o, %c4 : index
// CHECK-NEXT:     %[[J:.*]] = arith.addi %[[O]], %j.i : index
// CHECK-NEXT:     memref.load %x[%i, %[[J]]]
func.func @split(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.split "y" j by 4 -> (j.o, j.i)
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// split nparts: the outer loop has the given extent, the inner one ceil(9 / 2) = 5.
// CHECK-LABEL: func.func @split_nparts
// CHECK:      scf.for %j.o = %c0 to %c2 step %c1 {
// CHECK:        arith.minsi %c5
func.func @split_nparts(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.split "y" j nparts 2 -> (j.o, j.i)
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// reorder: with the reduction outermost, the accumulator gets its own initialising nest.
// CHECK-LABEL: func.func @reorder
// CHECK:      scf.for %j = %c0 to %c9 step %c1 {
// CHECK-NEXT:   scf.for %i = %c0 to %c5 step %c1 {
// CHECK:          memref.store {{.*}}, %out[%i, %j]
// CHECK:      scf.for %k = %c0 to %c16 step %c1 {
// CHECK-NEXT:   scf.for %j_1 = %c0 to %c9 step %c1 {
// CHECK-NEXT:     scf.for %i_1 = %c0 to %c5 step %c1 {
func.func @reorder(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.reorder "C" (k, j, i)
  }
  func.return %C : tensor<5x9xf32>
}

// -----

// tile: two splits and a reorder; both inner loops have tails here.
// CHECK-LABEL: func.func @tile
// CHECK:      scf.for %i.o = %c0 to %c3 step %c1 {
// CHECK-NEXT:   scf.for %j.o = %c0 to %c3 step %c1 {
// CHECK:          scf.for %i.i = %c0 to %{{.*}} step %c1 {
// CHECK:            scf.for %j.i = %c0 to %{{.*}} step %c1 {
func.func @tile(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.tile "y" (i, j) by (2, 4) -> (i.o, j.o, i.i, j.i)
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// fuse: one loop of 5 * 9 iterations; the axes come back as div and rem.
// CHECK-LABEL: func.func @fuse
// CHECK:      scf.for %f = %c0 to %c45 step %c1 {
// CHECK-NEXT:   %[[I:.*]] = arith.floordivsi %f, %c9 : index
// CHECK-NEXT:   %[[J:.*]] = arith.remsi %f, %c9 : index
// CHECK-NEXT:   memref.load %x[%[[I]], %[[J]]]
func.func @fuse(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.fuse "y" (i, j) -> f
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// vectorize: a short innermost loop becomes one vector op per formula op. Longer than one
// native vector (8 lanes here) and not a multiple of it, it is whole native vectors with the
// last lanes masked off (LLVM splits a <9 x float> load, a <29 x float> into four pieces).
// CHECK-LABEL: func.func @vectorize
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK-NEXT:   %[[M:.*]] = vector.create_mask %c9 : vector<16xi1>
// CHECK:        %[[V:.*]] = vector.maskedload %x[%i, %c0], %[[M]], %{{.*}} : memref<5x9xf32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[V]] : vector<16xf32>
// CHECK-NEXT:   vector.maskedstore %out[%i, %c0], %[[M]], %[[E]] : memref<5x9xf32>, vector<16xi1>, vector<16xf32>
func.func @vectorize(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.vectorize "y" j
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// vectorize with a tail: full tiles are vectors, the last partial tile one masked vector (its
// lanes below the bound); a broadcast operand is loaded once and splat.
// CHECK-LABEL: func.func @vectorize_tail
// CHECK:      %[[FULL:.*]] = arith.cmpi eq, %[[UB:.*]], %c4 : index
// CHECK-NEXT: scf.if %[[FULL]] {
// CHECK:        vector.load %x[%i, %{{.*}}] : memref<5x9xf32>, vector<4xf32>
// CHECK:        %[[B:.*]] = memref.load %b[%i] : memref<5xf32>
// CHECK-NEXT:   vector.broadcast %[[B]] : f32 to vector<4xf32>
// CHECK:        vector.store
// CHECK-NEXT: } else {
// CHECK-NEXT:   %[[M:.*]] = vector.create_mask %[[UB]] : vector<4xi1>
// CHECK:        vector.maskedload %x[%i, %{{.*}}], %[[M]], %{{.*}} : memref<5x9xf32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
// CHECK:        vector.maskedstore %out[%i, %{{.*}}], %[[M]], %{{.*}} : memref<5x9xf32>, vector<4xi1>, vector<4xf32>
func.func @vectorize_tail(%x: tensor<5x9xf32>, %b: tensor<5xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = %x[i, j] * %b[i] : (tensor<5x9xf32>, tensor<5xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.split "y" j by 4 -> (j.o, j.i)
    te.vectorize "y" j.i
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// vectorize a long loop: steps of the native width (8 x f32) and a masked remainder.
// CHECK-LABEL: func.func @vectorize_long
// CHECK:      scf.for %j = %c0 to %c96 step %c8 {
// CHECK:        vector.load %x[%j] : memref<100xf32>, vector<8xf32>
// CHECK:      %[[REST:.*]] = arith.subi %c100, %c96 : index
// CHECK-NEXT: %[[M:.*]] = vector.create_mask %[[REST]] : vector<8xi1>
// CHECK:      vector.maskedload %x[%c96], %[[M]]
func.func @vectorize_long(%x: tensor<100xf32>) -> tensor<100xf32> {
  %y = te.compute "y" [j] = %x[j] + 1.0 : (tensor<100xf32>) -> tensor<100xf32>
  te.schedule {
    te.vectorize "y" j
  }
  func.return %y : tensor<100xf32>
}

// -----

// parallel: the loop becomes scf.parallel (lowered to the thread pool by the CPU backend).
// CHECK-LABEL: func.func @parallel
// CHECK:      "scf.parallel"(%c0, %c5, %c1)
// CHECK-NEXT: ^bb0(%i: index):
// CHECK-NEXT:   scf.for %j = %c0 to %c9 step %c1 {
// CHECK:        scf.reduce
func.func @parallel(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.parallel "y" i
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// unroll: the loop is replaced by one copy of its body per iteration.
// CHECK-LABEL: func.func @unroll
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK-NEXT:   memref.load %x[%i, %c0]
// CHECK:        memref.load %x[%i, %c1]
// CHECK:        memref.load %x[%i, %c2]
// CHECK-NOT:    scf.for
// CHECK:      func.return
func.func @unroll(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  te.schedule {
    te.unroll "y" j
  }
  func.return %y : tensor<5x3xf32>
}

// -----

// compute_inline: the producer's formula is evaluated where it is read; no buffer, one nest.
// CHECK-LABEL: func.func @compute_inline
// CHECK-NOT:  memref.alloc
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK-NEXT:   scf.for %j = %c0 to %c9 step %c1 {
// CHECK-NEXT:     %[[X:.*]] = memref.load %x[%i, %j]
// CHECK-NEXT:     %[[E:.*]] = math.exp %[[X]] : f32
// CHECK:          arith.addf %[[E]]
// CHECK-NOT:  scf.for
func.func @compute_inline(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %e = te.compute "e" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %y = te.compute "y" [i, j] = %e[i, j] + 1.0 : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.compute_inline "e"
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// compute_root (the default): the producer has its own nest and a whole buffer.
// CHECK-LABEL: func.func @compute_root
// CHECK:      %[[E:.*]] = memref.alloc() {alignment = 64 : i64} : memref<5x9xf32>
// CHECK:      memref.store {{.*}}, %[[E]][%i, %j]
// CHECK:      memref.load %[[E]][%i_1, %j_1]
// CHECK:      memref.dealloc %[[E]]
func.func @compute_root(%x: tensor<5x9xf32>) -> tensor<5x9xf32> {
  %e = te.compute "e" [i, j] = exp(%x[i, j]) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  %y = te.compute "y" [i, j] = %e[i, j] + 1.0 : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.compute_inline "e"
    te.compute_root "e"
  }
  func.return %y : tensor<5x9xf32>
}

// -----

// compute_at: the producer is computed inside the consumer's loop, over the region one
// iteration reads (here a row of 9), into a small buffer hoisted to the entry; its rows hold
// whole native vectors (9 -> 16 at 8 lanes), so vector accesses to it need no mask.
// CHECK-LABEL: func.func @compute_at
// CHECK:      %[[L:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x16xf32>
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK-NEXT:   scf.for %j = %c0 to %c9 step %c1 {
// CHECK:          memref.store %{{.*}}, %[[L]][%c0, %j]
// CHECK:          scf.for %k = %c0 to %c16 step %c1 {
// CHECK:        scf.for %j_1 = %c0 to %c9 step %c1 {
// CHECK-NEXT:     memref.load %[[L]][%c0, %j_1]
func.func @compute_at(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.compute_at "C" at "D" i
  }
  func.return %D : tensor<5x9xf32>
}

// -----

// compute_at a tile with its tail: the region (2 x 4) starts at the tile's corner; at the
// edges its loops are guarded so the producer never computes outside its tensor. The loop it
// is computed at is versioned: a full tile of columns (4) and the tail, each with its own
// copy of the producer and the copy-out, both into the one local buffer.
// CHECK-LABEL: func.func @compute_at_tile
// CHECK:      %[[L:.*]] = memref.alloca() {alignment = 64 : i64} : memref<2x4xf32>
// CHECK-NOT:  memref.alloca
// CHECK:      scf.for %i.o = %c0 to %c3 step %c1 {
// CHECK-NEXT:   scf.for %j.o = %c0 to %c3 step %c1 {
// CHECK-NEXT:     %[[C:.*]] = arith.muli %j.o, %c4 : index
// CHECK-NEXT:     %[[ROOM:.*]] = arith.subi %c9, %[[C]] : index
// CHECK-NEXT:     %[[FULL:.*]] = arith.cmpi sge, %[[ROOM]], %c4 : index
// CHECK-NEXT:     scf.if %[[FULL]] {
// CHECK-NEXT:       %[[R:.*]] = arith.muli %i.o, %c2 : index
// CHECK:            arith.subi %c5, %[[R]] : index
// CHECK:            scf.for %i = %c0 to
// CHECK:              scf.for %j = %c0 to
// CHECK:                scf.for %k = %c0 to %c16 step %c1 {
// CHECK:                  memref.store %{{.*}}, %[[L]]
// CHECK:            scf.for %j.i = %c0 to %c4 step %c1 {
// CHECK:          } else {
// CHECK:                scf.for %k_1 = %c0 to %c16 step %c1 {
// CHECK:                  memref.store %{{.*}}, %[[L]]
func.func @compute_at_tile(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  %D = te.compute "D" [i, j] = max(%C[i, j], 0.0) : (tensor<5x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.tile "D" (i, j) by (2, 4) -> (i.o, j.o, i.i, j.i)
    te.compute_at "C" at "D" j.o
  }
  func.return %D : tensor<5x9xf32>
}

// -----

// cache_write: C.local accumulates one row in a local buffer (of whole vectors); C copies it out.
// CHECK-LABEL: func.func @cache_write
// CHECK:      %[[L:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x16xf32>
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK:          scf.for %k = %c0 to %c16 step %c1 {
// CHECK:            memref.store %{{.*}}, %[[L]][%c0, %j]
// CHECK:        scf.for %j_1 = %c0 to %c9 step %c1 {
// CHECK-NEXT:     %[[V:.*]] = memref.load %[[L]][%c0, %j_1]
// CHECK-NEXT:     memref.store %[[V]], %out[%i, %j_1]
func.func @cache_write(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.cache_write "C" -> "C.local"
    te.compute_at "C.local" at "C" i
  }
  func.return %C : tensor<5x9xf32>
}

// -----

// cache_read: the readers read a copy; computed at a loop, the copy is the panel that one
// iteration uses (here the row k of B, copied inside the k loop).
// CHECK-LABEL: func.func @cache_read
// CHECK:      %[[P:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x16xf32>
// CHECK:      scf.for %k = %c0 to %c16 step %c1 {
// CHECK-NEXT:   scf.for %ax1 = %c0 to %c9 step %c1 {
// CHECK-NEXT:     %[[B:.*]] = memref.load %B[%k, %ax1]
// CHECK-NEXT:     memref.store %[[B]], %[[P]][%c0, %ax1]
// CHECK:        scf.for %i_1 = %c0 to %c5 step %c1 {
// CHECK-NEXT:     scf.for %j_1 = %c0 to %c9 step %c1 {
// CHECK:            memref.load %[[P]][%c0, %j_1]
func.func @cache_read(%A: tensor<5x16xf32>, %B: tensor<16x9xf32>) -> tensor<5x9xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x9xf32>) -> tensor<5x9xf32>
  te.schedule {
    te.reorder "C" (k, i, j)
    te.cache_read "arg1" for ["C"] -> "B.local"
    te.compute_at "B.local" at "C" k
  }
  func.return %C : tensor<5x9xf32>
}

// -----

// cache_read with a panel layout: B (16x36) is copied into [36/8][16][8] column panels, the
// last one padded with zeros; C reads B[k, j] as B.p[j // 8, k, j % 8]. Computed at C's j.o,
// the copy is the one 16x8 panel that iteration streams through, vector by vector.
// CHECK-LABEL: func.func @cache_read_panel
// CHECK:      %[[P:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x16x8xf32>
// CHECK:      scf.for %j.o = %c0 to %c5 step %c1 {
// CHECK-NEXT:   scf.for %ax0 = %c0 to %c16 step %c1 {
// CHECK-NEXT:     scf.for %ax1i = %c0 to %c8 step %c1 {
// CHECK-NEXT:       %[[O:.*]] = arith.muli %j.o, %c8 : index
// CHECK-NEXT:       %[[J:.*]] = arith.addi %[[O]], %ax1i : index
// CHECK-NEXT:       %[[IN:.*]] = arith.cmpi slt, %[[J]], %c36 : index
// CHECK-NEXT:       %[[V:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT:         memref.load %B[%ax0, %[[J]]] : memref<16x36xf32>
// CHECK:            } else {
// CHECK-NEXT:         arith.constant 0.000000e+00 : f32
// CHECK:            memref.store %[[V]], %[[P]][%c0, %ax0, %ax1i] : memref<1x16x8xf32>
// CHECK:        scf.for %i = %c0 to %c5 step %c1 {
// CHECK:          scf.for %k = %c0 to %c16 step %c1 {
// CHECK:            %[[Q:.*]] = arith.floordivsi %{{.*}}, %c8 : index
// CHECK-NEXT:       %[[R:.*]] = arith.remsi %{{.*}}, %c8 : index
// CHECK-NEXT:       %[[Q0:.*]] = arith.subi %[[Q]], %j.o : index
// (the panel's index j // 8 - j.o is 0, the only position of a dimension of size 1: constant)
// CHECK-NEXT:       vector.load %[[P]][%c0, %k, %[[R]]] : memref<1x16x8xf32>, vector<8xf32>
func.func @cache_read_panel(%A: tensor<5x16xf32>, %B: tensor<16x36xf32>) -> tensor<5x36xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<5x16xf32>, tensor<16x36xf32>) -> tensor<5x36xf32>
  te.schedule {
    te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 8
    te.split "C" j by 8 -> (j.o, j.i)
    te.reorder "C" (j.o, i, k, j.i)
    te.vectorize "C" j.i
    te.compute_at "B.p" at "C" j.o
  }
  func.return %C : tensor<5x36xf32>
}

// -----

// rfactor: a row sum split by 8; C.rf keeps 8 partial sums (vectorized across k.i), C adds
// them up.
// CHECK-LABEL: func.func @rfactor
// CHECK:      %[[RF:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x8xf32>
// CHECK:      scf.for %i = %c0 to %c5 step %c1 {
// CHECK:        vector.store %{{.*}}, %[[RF]][%c0, %c0] : memref<1x8xf32>, vector<8xf32>
// CHECK-NEXT:   scf.for %k.o = %c0 to %c4 step %c1 {
// CHECK:          %[[X:.*]] = vector.load %A[%i, %{{.*}}] : memref<5x32xf32>, vector<8xf32>
// CHECK:          %[[ACC:.*]] = vector.load %[[RF]][%c0, %c0] : memref<1x8xf32>, vector<8xf32>
// CHECK-NEXT:     %[[SUM:.*]] = arith.addf %[[ACC]], %[[X]] : vector<8xf32>
// CHECK-NEXT:     vector.store %[[SUM]], %[[RF]][%c0, %c0]
// CHECK:        scf.for %k.i = %c0 to %c8 step %c1 {
// CHECK:          memref.load %[[RF]][%c0, %k.i]
func.func @rfactor(%A: tensor<5x32xf32>) -> tensor<5xf32> {
  %S = te.compute "S" [i] sum [k : 32] = %A[i, k] : (tensor<5x32xf32>) -> tensor<5xf32>
  te.schedule {
    te.split "S" k by 8 -> (k.o, k.i)
    te.rfactor "S" k.i -> "S.rf"
    te.reorder "S.rf" (i, k.o, k.i)
    te.vectorize "S.rf" k.i
    te.compute_at "S.rf" at "S" i
  }
  func.return %S : tensor<5xf32>
}
