// RUN: nnvm-opt %s --split-input-file -p convert-vector-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// Vector loads and stores: a GEP to the first element, `align` of the scalar (numpy buffers
// are not 32-byte aligned). vector.fma is llvm.fmuladd, as upstream lowers it (fused where the CPU
// has FMA; an exact llvm.fma would be a libm call per lane where it has not).
// CHECK-LABEL: llvm.func @load_fma_store(%a: !llvm.ptr, %b: !llvm.ptr, %s: f32, %i: i64)
// CHECK-NEXT:    [[Z:%.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    [[P:%.*]] = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %v = llvm.load [[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-NEXT:    [[U:%.*]] = llvm.mlir.undef : vector<8xf32>
// CHECK-NEXT:    [[E:%.*]] = llvm.insertelement %s, [[U]][[[Z]] : i32] : vector<8xf32>
// CHECK-NEXT:    %w = llvm.shufflevector [[E]], [[E]] [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK-NEXT:    %f = llvm.call_intrinsic "llvm.fmuladd.v8f32"(%v, %w, %v) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    [[Q:%.*]] = llvm.getelementptr inbounds %b[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %f, [[Q]] {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
func.func @load_fma_store(%a: memref<64xf32>, %b: memref<64xf32>, %s: f32, %i: index) {
  %v = vector.load %a[%i] : memref<64xf32>, vector<8xf32>
  %w = vector.broadcast %s : f32 to vector<8xf32>
  %f = vector.fma %v, %w, %v : vector<8xf32>
  vector.store %f, %b[%i] : memref<64xf32>, vector<8xf32>
  func.return
}

// -----

// Reductions map to llvm.vector.reduce.*; an extract is a one-lane shuffle and a bitcast.
// CHECK-LABEL: llvm.func @reduce(%v: vector<8xf32>, %acc: f32) -> f32
// CHECK-NEXT:    %s = "llvm.intr.vector.reduce.fadd"(%acc, %v) <{fastmathFlags = #llvm.fastmath<reassoc>}> : (f32, vector<8xf32>) -> f32
// CHECK-NEXT:    %m = llvm.call_intrinsic "llvm.vector.reduce.fmax.v8f32"(%v) : (vector<8xf32>) -> f32
// CHECK-NEXT:    [[L:%.*]] = llvm.shufflevector %v, %v [3] : vector<8xf32>
// CHECK-NEXT:    %e = llvm.bitcast [[L]] : vector<1xf32> to f32
func.func @reduce(%v: vector<8xf32>, %acc: f32) -> f32 {
  %s = vector.reduction <add>, %v, %acc fastmath<reassoc> : vector<8xf32> into f32
  %m = vector.reduction <maxnumf>, %v : vector<8xf32> into f32
  %e = vector.extract %v[3] : f32 from vector<8xf32>
  %t = arith.addf %s, %m : f32
  %u = arith.addf %t, %e : f32
  func.return %u : f32
}

// -----

// A transfer that may run past the end is a masked load: lanes < size - index.
// CHECK-LABEL: llvm.func @tail(%a: !llvm.ptr, %i: i64) -> vector<8xf32>
// CHECK:         [[SIZE:%.*]] = llvm.mlir.constant(13) : i64
// CHECK:         [[LEFT:%.*]] = llvm.sub [[SIZE]], %i : i64
// CHECK-NEXT:    [[STEP:%.*]] = llvm.mlir.constant(dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xi64>) : vector<8xi64>
// CHECK:         [[B:%.*]] = llvm.shufflevector
// CHECK-NEXT:    [[M:%.*]] = llvm.icmp "slt" [[STEP]], [[B]] : vector<8xi64>
// CHECK-NEXT:    [[P:%.*]] = llvm.getelementptr %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %v = llvm.call_intrinsic "llvm.masked.load.v8f32.p0"([[P]], [[M]], {{%.*}}) : (!llvm.ptr, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
func.func @tail(%a: memref<13xf32>, %i: index) -> vector<8xf32> {
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %a[%i], %pad : memref<13xf32>, vector<8xf32>
  func.return %v : vector<8xf32>
}

// -----

// In-bounds transfers are plain loads/stores.
// CHECK-LABEL: llvm.func @in_bounds(%a: !llvm.ptr, %i: i64)
// CHECK:         %v = llvm.load {{%.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:         llvm.store %v, {{%.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
func.func @in_bounds(%a: memref<16xf32>, %i: index) {
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %a[%i], %pad {in_bounds = [true]} : memref<16xf32>, vector<8xf32>
  vector.transfer_write %v, %a[%i] {in_bounds = [true]} : vector<8xf32>, memref<16xf32>
  func.return
}
