// RUN: nnvm-opt %s -p convert-parallel-to-threads | filecheck %s

// The body of an outermost scf.parallel is outlined and run by nnvm_parallel (targets/cpu/nnvm_threads.c); the values it
// uses from outside travel in a struct on the caller's stack (constants are re-created).
// CHECK-LABEL: func.func @scale(%a: memref<10x7xf32>, %b: memref<10x7xf32>)
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(!llvm.ptr, !llvm.ptr)> {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[A:.*]] = builtin.unrealized_conversion_cast %a : memref<10x7xf32> to !llvm.ptr
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr %[[CTX]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(!llvm.ptr, !llvm.ptr)>
// CHECK-NEXT:    llvm.store %[[A]], %[[S0]] {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @scale_par0 : !llvm.ptr
// CHECK-NEXT:    %[[NTP:.*]] = llvm.mlir.addressof @nnvm_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[NT:.*]] = llvm.load %[[NTP]] {alignment = 4 : i64} : !llvm.ptr -> i32
// CHECK-NEXT:    %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.call @nnvm_parallel(%[[FN]], %[[CTX]], %[[NT]], %[[FLAGS]]) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    func.return
// CHECK:       llvm.func @nnvm_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-NEXT:  llvm.func @nnvm_team_size() -> i32
// CHECK-NEXT:  llvm.func @nnvm_loop_start(i64, i64, i64, i64, !llvm.ptr, !llvm.ptr) -> i8
// CHECK-NEXT:  llvm.func @nnvm_loop_next(!llvm.ptr, !llvm.ptr) -> i8
// CHECK-NEXT:  llvm.func @nnvm_loop_end()
// CHECK-NEXT:  llvm.mlir.global weak @nnvm_num_threads(0 : i32) {addr_space = 0 : i32, alignment = 4 : i64} : i32

// The threads share out the collapsed 10 x 7 space dynamically: chunks of
// max(ceil(n / (4 * nthreads)), 1) iterations from nnvm_loop_start/_next, each run
// as a loop that recovers (i, j) by division; the nested parallel loop runs sequentially.
// CHECK-LABEL: func.func private @scale_par0(%{{.*}}: !llvm.ptr)
// CHECK:         %[[LO:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[HI:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[NTH:.*]] = llvm.call @nnvm_team_size() : () -> i32
// CHECK-NEXT:    %[[NTHI:.*]] = arith.index_cast %[[NTH]] : i32 to index
// CHECK:         %[[TOTAL:.*]] = arith.muli
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[PARTS:.*]] = arith.muli %[[NTHI]], %[[FOUR]] : index
// CHECK-NEXT:    %[[CH0:.*]] = arith.ceildivsi %[[TOTAL]], %[[PARTS]] : index
// CHECK-NEXT:    %[[CHUNK:.*]] = arith.maxsi %[[CH0]], %[[C1]] : index
// CHECK-NEXT:    %[[S:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[E:.*]] = arith.index_cast %[[TOTAL]] : index to i64
// CHECK-NEXT:    %[[I1:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[CH:.*]] = arith.index_cast %[[CHUNK]] : index to i64
// CHECK-NEXT:    %[[GOT:.*]] = llvm.call @nnvm_loop_start(%[[S]], %[[E]], %[[I1]], %[[CH]], %[[LO]], %[[HI]]) : (i64, i64, i64, i64, !llvm.ptr, !llvm.ptr) -> i8
// CHECK-NEXT:    %[[FALSE:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    %[[HAS:.*]] = arith.cmpi ne, %[[GOT]], %[[FALSE]] : i8
// CHECK-NEXT:    cf.cond_br %[[HAS]], ^[[CHUNKBB:.*]], ^[[DONE:.*]]
// CHECK-NEXT:  ^[[CHUNKBB]]:
// CHECK-NEXT:    %[[L:.*]] = llvm.load %[[LO]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    %[[H:.*]] = llvm.load %[[HI]] {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK-NEXT:    %[[BEGIN:.*]] = arith.index_cast %[[L]] : i64 to index
// CHECK-NEXT:    %[[END:.*]] = arith.index_cast %[[H]] : i64 to index
// CHECK-NEXT:    scf.for %[[LIN:.*]] = %[[BEGIN]] to %[[END]] step %{{.*}} {
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[LIN]], %{{.*}} : index
// CHECK-NEXT:      %[[I:.*]] = arith.divui %[[LIN]], %{{.*}} : index
// CHECK:           %x = memref.load
// CHECK:           scf.for
// CHECK-NOT:       scf.parallel
// CHECK:           memref.store
// CHECK:         %[[MORE:.*]] = llvm.call @nnvm_loop_next(%[[LO]], %[[HI]]) : (!llvm.ptr, !llvm.ptr) -> i8
// CHECK-NEXT:    %[[HASM:.*]] = arith.cmpi ne, %[[MORE]], %[[FALSE]] : i8
// CHECK-NEXT:    cf.cond_br %[[HASM]], ^[[CHUNKBB]], ^[[DONE]]
// CHECK-NEXT:  ^[[DONE]]:
// CHECK-NEXT:    llvm.call @nnvm_loop_end() : () -> ()
// CHECK-NEXT:    func.return
func.func @scale(%a: memref<10x7xf32>, %b: memref<10x7xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  %c7 = arith.constant 7 : index
  %two = arith.constant 2.0 : f32
  "scf.parallel"(%c0, %c0, %c10, %c7, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %a[%i, %j] : memref<10x7xf32>
    %y = arith.mulf %x, %two : f32
    "scf.parallel"(%c0, %c2, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb1(%k: index):
      memref.store %y, %b[%i, %j] : memref<10x7xf32>
      scf.reduce
    }) : (index, index, index) -> ()
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// A static alloca at the top of the body (a thread's scratch tile) is made once per thread at
// the outlined function's entry, not once per iteration inside the chunk loop, and first there:
// before the chunk-size arithmetic, whose control flow would leave it outside LLVM's entry
// block (a dynamic alloca, which LLVM cannot keep in registers).
// CHECK-LABEL: func.func private @scratch_par0(%{{.*}}: !llvm.ptr)
// CHECK-NEXT:    llvm.mlir.constant(1) : i64
// CHECK-NEXT:    llvm.alloca
// CHECK-NEXT:    llvm.alloca
// CHECK-NEXT:    %[[T:.*]] = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
// CHECK:         llvm.call @nnvm_team_size
// CHECK:         llvm.call @nnvm_loop_start
// CHECK:         scf.for
// CHECK-NOT:       memref.alloca
// CHECK:           memref.store %{{.*}}, %[[T]]
func.func @scratch(%a: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  "scf.parallel"(%c0, %c10, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %t = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
    %x = memref.load %a[%i] : memref<10xf32>
    memref.store %x, %t[%c0] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
