// RUN: nnvm-opt %s --split-input-file -p lower-te-to-gpu | filecheck %s

// A shared stage computed at the reduction's step loop `ko`: one 8 x 8 workgroup buffer (memref
// space 3) per block holds the rows of the block's 8 threads for this step (its region relaxed
// over threadIdx.x), copied by the threads together (thread t copies elements t, t + 8, ...; the
// k tail of 20 = 2 * 8 + 4 masked) between a barrier before (the last step's readers are done)
// and one after (the copy is visible); the threads then read their row from it.
// CHECK:      sym_name = "rowsum_kernels"
// CHECK:        ^bb0(%out: memref<40xf32>, %x: memref<40x20xf32>):
// CHECK:          %x.s = memref.alloca() {alignment = 64 : i64} : memref<8x8xf32, 3 : i64>
// CHECK:          %bid_x = "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:     %tid_x = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:          scf.for %ko = %c0 to %c3 step %c1 {
// CHECK-NEXT:       "gpu.barrier"() : () -> ()
// CHECK:            %[[T:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT:       scf.for %copy = %[[T]] to %c64 step %c8 {
// CHECK-NEXT:         %[[COL:.*]] = arith.remui %copy, %c8 : index
// CHECK-NEXT:         %[[ROW:.*]] = arith.divui %copy, %c8 : index
// CHECK:              %[[K:.*]] = arith.addi %[[COL]], %{{.*}} : index
// CHECK-NEXT:         %[[IN:.*]] = arith.cmpi slt, %[[K]], %c20 : index
// CHECK-NEXT:         scf.if %[[IN]] {
// CHECK:                %[[V:.*]] = memref.load %x[%{{.*}}, %{{.*}}] : memref<40x20xf32>
// CHECK-NEXT:           memref.store %[[V]], %x.s[%{{.*}}, %{{.*}}] : memref<8x8xf32, 3 : i64>
// CHECK:            "gpu.barrier"() : () -> ()
// CHECK:            scf.for %ki = %c0 to %{{.*}} step %c1 {
// CHECK:              memref.load %x.s[%{{.*}}, %{{.*}}] : memref<8x8xf32, 3 : i64>
// CHECK:      sym_name = "rowsum_y", gpu.known_block_size = array<i32: 8, 1, 1>, gpu.known_grid_size = array<i32: 5, 1, 1>
// CHECK:      func.func @rowsum
// CHECK-NOT:    memref.alloca
// CHECK:        "gpu.launch_func"(%c5, %c1, %c1, %c8, %c1, %c1, %out, %x)
func.func @rowsum(%x: tensor<40x20xf32>) -> tensor<40xf32> {
  %y = te.compute "y" [i] sum [k : 20] = %x[i, k] : (tensor<40x20xf32>) -> tensor<40xf32>
  te.schedule {
    te.split "y" i by 8 -> (b, t)
    te.split "y" k by 8 -> (ko, ki)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
    te.cache_read "arg0" for ["y"] -> "x.s" scope "shared"
    te.compute_at "x.s" at "y" ko
  }
  func.return %y : tensor<40xf32>
}

// -----

// A local stage computed at the thread's step loop: a private buffer of the thread's own row
// (1 x 8), no barrier.
// CHECK-LABEL: sym_name = "rowsum_local_kernels"
// CHECK:          %x.l = memref.alloca() {alignment = 64 : i64} : memref<1x8xf32>
// CHECK-NOT:      gpu.barrier
// CHECK:          memref.store %{{.*}}, %x.l[%{{.*}}, %{{.*}}] : memref<1x8xf32>
// CHECK-NOT:      gpu.barrier
// CHECK:      func.func @rowsum_local
func.func @rowsum_local(%x: tensor<40x20xf32>) -> tensor<40xf32> {
  %y = te.compute "y" [i] sum [k : 20] = %x[i, k] : (tensor<40x20xf32>) -> tensor<40xf32>
  te.schedule {
    te.split "y" i by 8 -> (b, t)
    te.split "y" k by 8 -> (ko, ki)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
    te.cache_read "arg0" for ["y"] -> "x.l" scope "local"
    te.compute_at "x.l" at "y" ko
  }
  func.return %y : tensor<40xf32>
}

// -----

// The same shared stage double-buffered: two 8 x 8 tiles, one above the other (16 x 8). Step ko
// fills tile ko % 2 (the view's row offset moved down by 8 rows on odd steps), so no barrier
// is needed before the copy except at the loop's first step; one barrier after it.
// CHECK-LABEL: sym_name = "rowsum_double_kernels"
// CHECK:          %x.s = memref.alloca() {alignment = 64 : i64} : memref<16x8xf32, 3 : i64>
// CHECK:          scf.for %ko = %c0 to %c3 step %c1 {
// CHECK-NOT:        "gpu.barrier"
// CHECK:            %[[FIRST:.*]] = arith.cmpi eq, %ko, %c0 : index
// CHECK-NEXT:       scf.if %[[FIRST]] {
// CHECK-NEXT:         "gpu.barrier"() : () -> ()
// CHECK-NEXT:       }
// CHECK-NEXT:       %[[SLOT:.*]] = arith.remui %ko, %c2 : index
// CHECK-NEXT:       %[[SHIFT:.*]] = arith.muli %[[SLOT]], %c8 : index
// CHECK-NEXT:       %{{.*}} = arith.subi %{{.*}}, %[[SHIFT]] : index
// CHECK:            scf.for %copy = %{{.*}} to %c64 step %c8 {
// CHECK:              memref.store %{{.*}}, %x.s[%{{.*}}, %{{.*}}] : memref<16x8xf32, 3 : i64>
// CHECK:            "gpu.barrier"() : () -> ()
// CHECK-NEXT:       %{{.*}} = arith.muli %ko, %c8 : index
// CHECK-NOT:        "gpu.barrier"
// CHECK:      func.func @rowsum_double
func.func @rowsum_double(%x: tensor<40x20xf32>) -> tensor<40xf32> {
  %y = te.compute "y" [i] sum [k : 20] = %x[i, k] : (tensor<40x20xf32>) -> tensor<40xf32>
  te.schedule {
    te.split "y" i by 8 -> (b, t)
    te.split "y" k by 8 -> (ko, ki)
    te.bind "y" b to "blockIdx.x"
    te.bind "y" t to "threadIdx.x"
    te.cache_read "arg0" for ["y"] -> "x.s" scope "shared"
    te.compute_at "x.s" at "y" ko
    te.double_buffer "x.s"
  }
  func.return %y : tensor<40xf32>
}
