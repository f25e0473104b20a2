// RUN: nnvm-opt %s -p lower-te-to-gpu | filecheck %s

// A reduction axis bound to threadIdx.x: a cross-thread reduction in one kernel. Every thread
// initialises the row's accumulator, accumulates its strided share of the row (k = ko * 24 +
// tid, the k tail of 100 = 4 * 24 + 4 masked) in a private register, stores it into its slot of
// a 24-slot workgroup buffer (memref space 3), and the block combines the slots as a tree:
// strides 16 (the upper half incomplete: tid + 16 < 24 too), 8, 4, 2, 1, a barrier after each;
// thread 0 folds the block's result into the accumulator.
// CHECK:      ^bb0(%out: memref<3xf32>, %x: memref<3x100xf32>):
// CHECK:        %ki.red = memref.alloca() {alignment = 64 : i64} : memref<1x24xf32, 3 : i64>
// CHECK-NEXT:   %ki.part = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
// CHECK-NEXT:   %bid_x = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK-NEXT:   %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:   memref.store %[[NEGINF]], %out[%bid_x] : memref<3xf32>
// CHECK-NEXT:   %tid_x = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK:        memref.store %{{.*}}, %ki.part[%c0] : memref<1xf32>
// CHECK-NEXT:   scf.for %ko = %c0 to %c5 step %c1 {
// CHECK:          %[[K:.*]] = arith.addi %{{.*}}, %tid_x : index
// CHECK-NEXT:     %[[IN:.*]] = arith.cmpi slt, %[[K]], %c100 : index
// CHECK-NEXT:     scf.if %[[IN]] {
// CHECK-NEXT:       %[[V:.*]] = memref.load %x[%bid_x, %[[K]]] : memref<3x100xf32>
// CHECK:            arith.maximumf %{{.*}}, %[[V]] : f32
// CHECK:        "gpu.barrier"() : () -> ()
// CHECK-NEXT:   %[[P:.*]] = memref.load %ki.part[%c0] : memref<1xf32>
// CHECK-NEXT:   memref.store %[[P]], %ki.red[%c0, %tid_x] : memref<1x24xf32, 3 : i64>
// CHECK-NEXT:   "gpu.barrier"() : () -> ()
// CHECK-NEXT:   %[[LOW:.*]] = arith.cmpi slt, %tid_x, %c16 : index
// CHECK-NEXT:   %[[PARTNER:.*]] = arith.addi %tid_x, %c16 : index
// CHECK-NEXT:   %[[HAS:.*]] = arith.cmpi slt, %[[PARTNER]], %c24 : index
// CHECK-NEXT:   %[[ACTIVE:.*]] = arith.andi %[[LOW]], %[[HAS]] : i1
// CHECK-NEXT:   scf.if %[[ACTIVE]] {
// CHECK-NEXT:     %[[A:.*]] = memref.load %ki.red[%c0, %tid_x]
// CHECK-NEXT:     %[[B:.*]] = memref.load %ki.red[%c0, %[[PARTNER]]]
// CHECK-NEXT:     %[[M:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT:     memref.store %[[M]], %ki.red[%c0, %tid_x]
// CHECK:        "gpu.barrier"() : () -> ()
// CHECK-NEXT:   arith.cmpi slt, %tid_x, %c8 : index
// CHECK-COUNT-4: "gpu.barrier"() : () -> ()
// CHECK-NEXT:   %[[FIRST:.*]] = arith.cmpi eq, %tid_x, %c0 : index
// CHECK-NEXT:   scf.if %[[FIRST]] {
// CHECK-NEXT:     %[[ACC:.*]] = memref.load %out[%bid_x] : memref<3xf32>
// CHECK-NEXT:     %[[ALL:.*]] = memref.load %ki.red[%c0, %c0]
// CHECK-NEXT:     %[[R:.*]] = arith.maximumf %[[ACC]], %[[ALL]] : f32
// CHECK-NEXT:     memref.store %[[R]], %out[%bid_x] : memref<3xf32>
// CHECK:      sym_name = "rowmax_y", gpu.known_block_size = array<i32: 24, 1, 1>, gpu.known_grid_size = array<i32: 3, 1, 1>
// CHECK:      "gpu.launch_func"(%c3, %c1, %c1, %c24, %c1, %c1, %out, %x)
func.func @rowmax(%x: tensor<3x100xf32>) -> tensor<3xf32> {
  %y = te.compute "y" [i] max [k : 100] = %x[i, k] : (tensor<3x100xf32>) -> tensor<3xf32>
  te.schedule {
    te.split "y" k by 24 -> (ko, ki)
    te.reorder "y" (i, ki, ko)
    te.bind "y" i to "blockIdx.x"
    te.bind "y" ki to "threadIdx.x"
  }
  func.return %y : tensor<3xf32>
}
