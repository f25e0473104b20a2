// RUN: nnvm-opt %s -p convert-to-llvm | filecheck %s --check-prefix=PLAIN
// RUN: nnvm-opt %s -p 'convert-to-llvm{x86-minmax=true scratch="nnvm_scratch_alloc,nnvm_scratch_free"}' | filecheck %s
// RUN: not nnvm-opt %s -p 'convert-to-llvm{scratch="only_one"}' 2>&1 | filecheck %s --check-prefix=BAD

// The CPU target's options of the whole lowering: maximumf/minimumf against a NaN-free
// constant as AVX-512's vmaxps/vminps with the constant first (a 32-lane vector in two
// register slices; a constant with a NaN lane, or a maximum of two values, keeps
// llvm.maximum), and heap scratch from the kernel runtime's allocator instead of
// aligned_alloc / free.
// CHECK-LABEL: llvm.func @clamp
// CHECK:         llvm.call @nnvm_scratch_alloc({{.*}}) : (i64, i64) -> !llvm.ptr
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.max.ps.512"({{.*}}) : (vector<16xf32>, vector<16xf32>, i32) -> vector<16xf32>
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.min.ps.512"
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.min.ps.512"
// CHECK:         llvm.call_intrinsic "llvm.maximum.v16f32"
// CHECK:         llvm.call_intrinsic "llvm.maximum.v16f32"
// CHECK:         llvm.call @nnvm_scratch_free({{.*}}) : (!llvm.ptr) -> ()
// CHECK-NOT:     aligned_alloc
// PLAIN-LABEL: llvm.func @clamp
// PLAIN:         llvm.call @aligned_alloc
// PLAIN-NOT:     llvm.x86.avx512
// PLAIN:         llvm.call @free
// BAD: convert-to-llvm: scratch='only_one' is not 'ALLOC,FREE'
func.func @clamp(%x: memref<32xf32>, %y: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %nan = arith.constant dense<[1.0, 0x7FC00000, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]> : vector<16xf32>
  %z = vector.broadcast %zero : f32 to vector<16xf32>
  %s = vector.broadcast %six : f32 to vector<32xf32>
  %tmp = memref.alloc() : memref<32xf32>
  %lo = vector.load %x[%c0] : memref<32xf32>, vector<16xf32>
  %relu = arith.maximumf %lo, %z : vector<16xf32>
  %all = vector.load %x[%c0] : memref<32xf32>, vector<32xf32>
  %relu6 = arith.minimumf %all, %s : vector<32xf32>
  %bounded = arith.maximumf %lo, %nan : vector<16xf32>
  %both = arith.maximumf %lo, %relu : vector<16xf32>
  vector.store %relu6, %tmp[%c0] : memref<32xf32>, vector<32xf32>
  vector.store %bounded, %y[%c0] : memref<32xf32>, vector<16xf32>
  vector.store %both, %y[%c0] : memref<32xf32>, vector<16xf32>
  memref.dealloc %tmp : memref<32xf32>
  func.return
}
