// RUN: nnvm-opt %s --split-input-file -p convert-affine-to-scf | filecheck %s

// Affine ops are written in generic form: xDSL 0.74 parses `affine.load %m[%i]` with the
// index as a symbol (reference/xdsl-0.74.md, bug 1).

// A tile loop with a tail: the upper bound min(j + 4, 10) uses the outer IV (xDSL's
// lower-affine drops bound operands); the load map mixes a dim and a symbol.
// CHECK-LABEL: func.func @tiled
// CHECK:         scf.for %i = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[HI:.*]] = arith.addi %i, %[[C4]] : index
// CHECK-NEXT:      %[[C10:.*]] = arith.constant 10 : index
// CHECK-NEXT:      %[[UB:.*]] = arith.minsi %[[HI]], %[[C10]] : index
// CHECK-NEXT:      %[[STEP:.*]] = arith.constant 1 : index
// CHECK-NEXT:      scf.for %j = %i to %[[UB]] step %[[STEP]] {
// CHECK-NEXT:        %[[IDX:.*]] = arith.addi %j, %s : index
// CHECK-NEXT:        %x = memref.load %a[%[[IDX]]] : memref<20xf32>
// CHECK-NEXT:        memref.store %x, %b[%j] : memref<10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @tiled(%a: memref<20xf32>, %b: memref<10xf32>, %s: index) {
  "affine.for"() <{lowerBoundMap = affine_map<() -> (0)>, upperBoundMap = affine_map<() -> (10)>, step = 4 : index, operandSegmentSizes = array<i32: 0, 0, 0>}> ({
  ^bb0(%i: index):
    "affine.for"(%i, %i) <{lowerBoundMap = affine_map<(d0) -> (d0)>, upperBoundMap = affine_map<(d0) -> (d0 + 4, 10)>, step = 1 : index, operandSegmentSizes = array<i32: 1, 1, 0>}> ({
    ^bb1(%j: index):
      %x = "affine.load"(%a, %j, %s) <{map = affine_map<(d0)[s0] -> (d0 + s0)>}> : (memref<20xf32>, index, index) -> f32
      "affine.store"(%x, %b, %j) <{map = affine_map<(d0) -> (d0)>}> : (f32, memref<10xf32>, index) -> ()
      "affine.yield"() : () -> ()
    }) : (index, index) -> ()
    "affine.yield"() : () -> ()
  }) : () -> ()
  func.return
}

// -----

// `mod` is never negative (remsi can be); min and apply become arith.
// CHECK-LABEL: func.func @index_math
// CHECK:         %[[R:.*]] = arith.remsi %i, %{{.*}} : index
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[NEG:.*]] = arith.cmpi slt, %[[R]], %[[Z]] : index
// CHECK-NEXT:    %[[ADJ:.*]] = arith.addi %[[R]], %{{.*}} : index
// CHECK-NEXT:    %m = arith.select %[[NEG]], %[[ADJ]], %[[R]] : index
// CHECK:         %f = arith.floordivsi %i, %{{.*}} : index
// CHECK:         %n = arith.minsi %{{.*}}, %{{.*}} : index
func.func @index_math(%i: index) -> (index, index, index) {
  %m = "affine.apply"(%i) <{map = affine_map<(d0) -> (d0 mod 8)>}> : (index) -> index
  %f = "affine.apply"(%i) <{map = affine_map<(d0) -> (d0 floordiv 8)>}> : (index) -> index
  %n = "affine.min"(%i) <{map = affine_map<(d0) -> (d0 * 2, 16)>}> : (index) -> index
  func.return %m, %f, %n : index, index, index
}

// -----

// affine.parallel becomes scf.parallel (run on threads by convert-parallel-to-threads);
// affine.if becomes scf.if on the conjunction of its constraints.
// CHECK-LABEL: func.func @parallel_if
// CHECK:         "scf.parallel"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
// CHECK-NEXT:    ^{{.*}}(%i: index, %j: index):
// CHECK:           %[[C:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      scf.if %[[C]] {
// CHECK-NEXT:        memref.store %v, %a[%i, %j] : memref<4x6xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
func.func @parallel_if(%a: memref<4x6xf32>, %v: f32) {
  "affine.parallel"() <{lowerBoundsMap = affine_map<() -> (0, 0)>, lowerBoundsGroups = dense<1> : vector<2xi32>, upperBoundsMap = affine_map<() -> (4, 6)>, upperBoundsGroups = dense<1> : vector<2xi32>, steps = [1 : i64, 1 : i64], reductions = []}> ({
  ^bb0(%i: index, %j: index):
    "affine.if"(%i, %j) <{condition = affine_set<(d0, d1) : (d1 - d0 >= 0)>}> ({
      "affine.store"(%v, %a, %i, %j) <{map = affine_map<(d0, d1) -> (d0, d1)>}> : (f32, memref<4x6xf32>, index, index) -> ()
      "affine.yield"() : () -> ()
    }, {
    }) : (index, index) -> ()
    "affine.yield"() : () -> ()
  }) : () -> ()
  func.return
}
