// A select whose condition bounds the vectorized axis runs as one load masked to the lanes in
// range (formulas.py lane_range_select); the false value fills the others.
// RUN: nnvm-opt %s --split-input-file -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | filecheck %s

// A pad of the innermost axis: lanes j.o * 8 + k with 1 <= j < 21 read x[i, j - 1]. The lane
// range is [max(0, 1 - base), min(8, 21 - base)), a mask of lanes below hi xor below lo; the
// row's last vector (j.o = 2, 7 lanes) is also under the tail's mask.
// CHECK-LABEL: func.func @pad_columns
// CHECK:         scf.if
// CHECK:           %[[LO:.*]] = arith.maxsi %c0, %{{.*}} : index
// CHECK-NEXT:      %[[HI0:.*]] = arith.minsi %c8, %{{.*}} : index
// CHECK-NEXT:      %[[HI:.*]] = arith.maxsi %[[HI0]], %[[LO]] : index
// CHECK-NEXT:      %[[MH:.*]] = vector.create_mask %[[HI]] : vector<8xi1>
// CHECK-NEXT:      %[[ML:.*]] = vector.create_mask %[[LO]] : vector<8xi1>
// CHECK-NEXT:      %[[M:.*]] = arith.xori %[[MH]], %[[ML]] : vector<8xi1>
// CHECK:           %[[FILL:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-NEXT:      %[[V:.*]] = vector.maskedload %x[%i, %{{.*}}], %[[M]], %[[FILL]] : memref<3x20xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK-NEXT:      vector.store %[[V]], %out[%i, %{{.*}}] : memref<3x23xf32>, vector<8xf32>
// CHECK:         } else {
// CHECK:           %[[T:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<8xi1>
// CHECK:           %[[W:.*]] = vector.maskedload %x[%i, %{{.*}}], %[[T]], %{{.*}}
// CHECK-NEXT:      vector.maskedstore %out[%i, %{{.*}}], %{{.*}}, %[[W]]
// CHECK-NOT:   memref.load %x
func.func @pad_columns(%x: tensor<3x20xf32>) -> tensor<3x23xf32> {
  %p = te.compute "p" [i, j] template "pad" = select(and(j >= 1, j - 1 < 20), %x[i, j - 1], -1.5) : (tensor<3x20xf32>) -> tensor<3x23xf32>
  te.schedule {
    te.split "p" j by 8 -> (j.o, j.i)
    te.vectorize "p" j.i
  }
  func.return %p : tensor<3x23xf32>
}

// -----

// A row condition (uniform across the vector) beside the lane bound: when it fails the range
// is empty (hi = lo), every lane masked off, and the load reads nothing.
// CHECK-LABEL: func.func @pad_rows_and_columns
// CHECK:         %[[RLO:.*]] = arith.cmpi sge, %i, %c1 : index
// CHECK:         %[[RHI:.*]] = arith.cmpi slt, %{{.*}}, %c4 : index
// CHECK:         %[[LO:.*]] = arith.maxsi %c0, %{{.*}} : index
// CHECK:         %[[H0:.*]] = arith.maxsi %{{.*}}, %[[LO]] : index
// CHECK-NEXT:    %[[H1:.*]] = arith.select %[[RLO]], %[[H0]], %[[LO]] : index
// CHECK-NEXT:    %[[HI:.*]] = arith.select %[[RHI]], %[[H1]], %[[LO]] : index
// CHECK-NEXT:    vector.create_mask %[[HI]] : vector<8xi1>
// CHECK:         vector.maskedload %x
// CHECK-NOT:   memref.load %x
func.func @pad_rows_and_columns(%x: tensor<4x8xf32>) -> tensor<6x10xf32> {
  %p = te.compute "p" [i, j] template "pad" = select(and(and(and(i >= 1, i - 1 < 4), j >= 1), j - 1 < 8), %x[i - 1, j - 1], 0.0) : (tensor<4x8xf32>) -> tensor<6x10xf32>
  te.schedule {
    te.split "p" j by 8 -> (j.o, j.i)
    te.vectorize "p" j.i
  }
  func.return %p : tensor<6x10xf32>
}
