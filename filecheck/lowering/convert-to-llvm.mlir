// RUN: nnvm-opt %s -p convert-to-llvm | filecheck %s
// RUN: nnvm-opt %s -p 'convert-to-llvm{approximate-math=false}' | filecheck %s --check-prefix=EXACT

// The whole CPU lowering in one pass: a 2-D parallel loop over rows and 8-wide column
// blocks (the last one masked), exp inlined as a vector polynomial. Only llvm ops remain.
// CHECK-LABEL: llvm.func @exp_kernel(%x: !llvm.ptr, %y: !llvm.ptr) {
// CHECK:         llvm.call @nnvm_parallel
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @exp_kernel_par0(
// CHECK:         llvm.call @nnvm_loop_start(
// CHECK:         llvm.call_intrinsic "llvm.masked.load.v8f32.p0"
// CHECK:         llvm.call_intrinsic "llvm.fmuladd.v8f32"
// CHECK:         llvm.call_intrinsic "llvm.masked.store.v8f32.p0"
// CHECK-NOT:     builtin.unrealized_conversion_cast
// CHECK-NOT:     arith.
// CHECK-NOT:     scf.
// EXACT:         llvm.intr.exp({{%.*}}) : (vector<8xf32>) -> vector<8xf32>
func.func @exp_kernel(%x: memref<4x20xf32>, %y: memref<4x20xf32>) {
  "affine.parallel"() <{lowerBoundsMap = affine_map<() -> (0, 0)>, lowerBoundsGroups = dense<1> : vector<2xi32>, upperBoundsMap = affine_map<() -> (4, 20)>, upperBoundsGroups = dense<1> : vector<2xi32>, steps = [1 : i64, 8 : i64], reductions = []}> ({
  ^bb0(%i: index, %j: index):
    %pad = arith.constant 0.0 : f32
    %v = vector.transfer_read %x[%i, %j], %pad : memref<4x20xf32>, vector<8xf32>
    %e = math.exp %v : vector<8xf32>
    vector.transfer_write %e, %y[%i, %j] : vector<8xf32>, memref<4x20xf32>
    "affine.yield"() : () -> ()
  }) : () -> ()
  func.return
}
