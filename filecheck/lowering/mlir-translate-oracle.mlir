// REQUIRES: mlir-translate
// RUN: nnvm-opt %s --split-input-file -p convert-to-llvm | %mlir-translate --split-input-file --mlir-to-llvmir | filecheck %s

// Upstream MLIR 22 accepts what convert-to-llvm produces (optional oracle: runs only where
// mlir-translate-22 is installed).

// CHECK-LABEL: define void @scalar_loop(ptr %0, ptr %1)
// CHECK:         getelementptr inbounds float, ptr %0
// CHECK:         call float @llvm.fmuladd.f32
// CHECK:         store float
func.func @scalar_loop(%a: memref<16xf32>, %b: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf32>
    %t = math.tanh %x : f32
    %i32 = arith.index_cast %i : index to i32
    %f = arith.sitofp %i32 : i32 to f32
    %s = arith.addf %t, %f : f32
    memref.store %s, %b[%i] : memref<16xf32>
  }
  func.return
}

// -----

// CHECK-LABEL: define void @vector_loop(ptr %0, ptr %1)
// CHECK:         load <8 x float>, ptr %{{.*}}, align 4
// CHECK:         call <8 x float> @llvm.fmuladd.v8f32
// CHECK:         call float @llvm.vector.reduce.fadd.v8f32
func.func @vector_loop(%a: memref<64xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<8xf32>
  %acc = scf.for %i = %c0 to %c64 step %c8 iter_args(%s = %zero) -> (vector<8xf32>) {
    %v = vector.load %a[%i] : memref<64xf32>, vector<8xf32>
    %n = vector.fma %v, %v, %s : vector<8xf32>
    scf.yield %n : vector<8xf32>
  }
  %r = vector.reduction <add>, %acc : vector<8xf32> into f32
  memref.store %r, %out[%c0] : memref<1xf32>
  func.return
}

// -----

// CHECK-LABEL: define void @par(ptr %0)
// CHECK:         call void @GOMP_parallel(ptr @par_par0, ptr %{{.*}}, i32 %{{.*}}, i32 0)
// CHECK-LABEL: define internal void @par_par0(ptr %0)
// CHECK:         call i8 @GOMP_loop_dynamic_start(
func.func @par(%a: memref<100xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  "scf.parallel"(%c0, %c100, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %v = arith.index_cast %i : index to i32
    memref.store %v, %a[%i] : memref<100xi32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// -----

// Masked tails in LLVM 22's masked.load/store form; exp as an inline polynomial.
// CHECK-LABEL: define void @tail(ptr %0, ptr %1)
// CHECK:         call <8 x float> @llvm.masked.load.v8f32.p0(ptr %{{.*}}, <8 x i1> %{{.*}}, <8 x float> zeroinitializer)
// CHECK:         call <8 x float> @llvm.fmuladd.v8f32
// CHECK:         call void @llvm.masked.store.v8f32.p0(<8 x float> %{{.*}}, ptr %{{.*}}, <8 x i1> %{{.*}})
func.func @tail(%x: memref<20xf32>, %y: memref<20xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c20 = arith.constant 20 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c20 step %c8 {
    %v = vector.transfer_read %x[%i], %pad : memref<20xf32>, vector<8xf32>
    %e = math.exp %v : vector<8xf32>
    vector.transfer_write %e, %y[%i] : vector<8xf32>, memref<20xf32>
  }
  func.return
}
