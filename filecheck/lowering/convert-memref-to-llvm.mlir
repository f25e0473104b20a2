// RUN: nnvm-opt %s --split-input-file -p convert-memref-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// A memref is a bare pointer to its first element; accesses are GEPs over the linearized
// index (never ptrtoint arithmetic), with the scalar's alignment.
// CHECK-LABEL: llvm.func @load_store(%a: !llvm.ptr, %b: !llvm.ptr, %i: i64, %j: i64)
func.func @load_store(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %i: index, %j: index) {
  // CHECK-NEXT: [[S:%.*]] = llvm.mlir.constant(8) : i64
  // CHECK-NEXT: [[M:%.*]] = llvm.mul %i, [[S]] overflow<nsw> : i64
  // CHECK-NEXT: [[L:%.*]] = llvm.add [[M]], %j overflow<nsw> : i64
  // CHECK-NEXT: [[P:%.*]] = llvm.getelementptr inbounds %a[[[L]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK-NEXT: %x = llvm.load [[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
  // CHECK:      [[Q:%.*]] = llvm.getelementptr inbounds %b[{{%.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK-NEXT: llvm.store %x, [[Q]] {alignment = 4 : i64} : f32, !llvm.ptr
  // CHECK-NOT:  ptrtoint
  %x = memref.load %a[%i, %j] : memref<4x8xf32>
  memref.store %x, %b[%j, %i] : memref<4x8xf32>
  func.return
}

// -----

// A subview moves the pointer by offset * stride; its own accesses use the source strides,
// and constant indices fold into one constant offset (1 * 8 + 1). Integer constants are made
// once per block, at its start.
// CHECK-LABEL: llvm.func @subview(%a: !llvm.ptr, %i: i64) -> f32
func.func @subview(%a: memref<6x8xf32>, %i: index) -> f32 {
  // CHECK-NEXT: %c1 = llvm.mlir.constant(1) : i64
  // CHECK-NEXT: [[S:%.*]] = llvm.mlir.constant(8) : i64
  // CHECK-NEXT: [[C:%.*]] = llvm.mlir.constant(2) : i64
  // CHECK-NEXT: [[NINE:%.*]] = llvm.mlir.constant(9) : i64
  // CHECK-NEXT: [[O:%.*]] = llvm.mul %i, [[S]] overflow<nsw> : i64
  // CHECK-NEXT: [[T:%.*]] = llvm.add [[O]], [[C]] overflow<nsw> : i64
  // CHECK-NEXT: %v = llvm.getelementptr inbounds %a[[[T]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK-NEXT: [[E:%.*]] = llvm.getelementptr inbounds %v[[[NINE]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  // CHECK-NEXT: %x = llvm.load [[E]] {alignment = 4 : i64} : !llvm.ptr -> f32
  %c1 = arith.constant 1 : index
  %v = memref.subview %a[%i, 2] [4, 4] [1, 1] : memref<6x8xf32> to memref<4x4xf32, strided<[8, 1], offset: ?>>
  %x = memref.load %v[%c1, %c1] : memref<4x4xf32, strided<[8, 1], offset: ?>>
  func.return %x : f32
}

// -----

// Heap buffers are 64-byte aligned (size rounded up to 64); stack buffers too.
// CHECK-LABEL: llvm.func @alloc()
func.func @alloc() {
  // CHECK-NEXT: [[A:%.*]] = llvm.mlir.constant(64) : i64
  // CHECK-NEXT: [[N:%.*]] = llvm.mlir.constant(448) : i64
  // CHECK-NEXT: [[K:%.*]] = llvm.mlir.constant(6) : i64
  // CHECK-NEXT: %m = llvm.call @aligned_alloc([[A]], [[N]]) : (i64, i64) -> !llvm.ptr
  // CHECK-NEXT: %s = llvm.alloca [[K]] x f64 {alignment = 64 : i64} : (i64) -> !llvm.ptr
  // CHECK-NEXT: llvm.call @free(%m) : (!llvm.ptr) -> ()
  %m = memref.alloc() : memref<10x10xf32>
  %s = memref.alloca() : memref<2x3xf64>
  memref.dealloc %m : memref<10x10xf32>
  func.return
}
// CHECK: llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK: llvm.func @free(!llvm.ptr)

// -----

// Globals are flat 64-byte aligned arrays.
// CHECK: llvm.mlir.global internal constant @lut(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<4 x f32>
"memref.global"() <{sym_name = "lut", sym_visibility = "private", type = memref<2x2xf32>,
  initial_value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>, constant}> : () -> ()

// CHECK-LABEL: llvm.func @use_global() -> !llvm.ptr
// CHECK-NEXT:  %g = llvm.mlir.addressof @lut : !llvm.ptr
// CHECK-NEXT:  llvm.return %g : !llvm.ptr
func.func @use_global() -> !llvm.ptr {
  %g = memref.get_global @lut : memref<2x2xf32>
  %p = builtin.unrealized_conversion_cast %g : memref<2x2xf32> to !llvm.ptr
  func.return %p : !llvm.ptr
}

// -----

// CHECK-LABEL: llvm.func @copy(%a: !llvm.ptr, %b: !llvm.ptr)
// CHECK:       llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%b, %a, {{%.*}}, {{%.*}}) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
func.func @copy(%a: memref<3x5xi32>, %b: memref<3x5xi32>) {
  "memref.copy"(%a, %b) : (memref<3x5xi32>, memref<3x5xi32>) -> ()
  func.return
}
