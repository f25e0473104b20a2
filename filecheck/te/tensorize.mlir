// te.tensorize: the loops under the axis become the target's tensor intrinsic, here the CPU's
// byte dot product (`dot_u8i8`: 16 int32 lanes += 4 u8 x 4 i8 each). With AVX512-VNNI it is
// one vpdpbusd per tile; on x86-64-v3 (8 lanes, no VNNI) the same sums from shifts and
// multiplies. The accumulator is initialised by the ordinary loops (a vector store of zeros).
// RUN: nnvm-opt %s -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v4 -mattr=+avx512vnni"}' | filecheck %s
// RUN: nnvm-opt %S/Inputs/tensorize-avx2.mlir -p 'lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | filecheck %s --check-prefix=AVX2
// RUN: nnvm-opt %s | nnvm-opt | filecheck %s --check-prefix=RT
// RUN: not nnvm-opt %S/Inputs/tensorize-invalid.mlir -p 'lower-te-to-loops' 2>&1 | filecheck %s --check-prefix=BAD

// RT: te.tensorize "y" n.i with "dot_u8i8"
// CHECK-LABEL: func.func @dot
// CHECK:         vector.store %{{.*}}, %out[%{{.*}}, %{{.*}}] : memref<4x32xi32>, vector<16xi32>
// CHECK:         scf.for %k.o =
// CHECK:           %[[ACC:.*]] = vector.load %out[{{.*}}] : memref<4x32xi32>, vector<16xi32>
// CHECK-NEXT:      %[[X:.*]] = vector.load %x[{{.*}}] : memref<4x8xui8>, vector<4xui8>
// CHECK-NEXT:      %[[WORD:.*]] = vector.bitcast %[[X]] : vector<4xui8> to vector<1xi32>
// CHECK-NEXT:      %[[S:.*]] = vector.extract %[[WORD]][0] : i32 from vector<1xi32>
// CHECK-NEXT:      %[[XS:.*]] = vector.broadcast %[[S]] : i32 to vector<16xi32>
// CHECK-NEXT:      %[[W:.*]] = vector.load %w[{{.*}}] : memref<2x2x16x4xi8>, vector<64xi8>
// CHECK-NEXT:      %[[WS:.*]] = vector.bitcast %[[W]] : vector<64xi8> to vector<16xi32>
// CHECK-NEXT:      %[[R:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[ACC]], %[[XS]], %[[WS]])
// CHECK-NEXT:      vector.store %[[R]], %out[{{.*}}] : memref<4x32xi32>, vector<16xi32>
func.func @dot(%x: tensor<4x8xui8>, %w: tensor<2x2x16x4xi8>) -> tensor<4x32xi32> {
  %y = te.compute "y" [i, n] sum [k : 8] = cast<i32>(%x[i, k]) * cast<i32>(%w[floordiv(n, 16), floordiv(k, 4), rem(n, 16), rem(k, 4)]) : (tensor<4x8xui8>, tensor<2x2x16x4xi8>) -> tensor<4x32xi32>
  te.schedule {
    te.split "y" n by 16 -> (n.o, n.i)
    te.split "y" k by 4 -> (k.o, k.i)
    te.reorder "y" (i, k.o, n.o, n.i, k.i)
    te.tensorize "y" n.i with "dot_u8i8"
  }
  func.return %y : tensor<4x32xi32>
}

// AVX2-LABEL: func.func @dot8
// AVX2-NOT:     llvm.call_intrinsic
// AVX2:         %[[XS:.*]] = vector.broadcast %{{.*}} : i32 to vector<8xi32>
// AVX2:         arith.shrui
// AVX2:         arith.shrsi
// AVX2:         arith.muli %{{.*}}, %{{.*}} : vector<8xi32>

// BAD: tensorize-invalid.mlir:8:5: error: te.tensorize: the loops under 'k.i' of 'y' do not match 'dot_u8i8': the loops are 4 (reduction) x 16, the intrinsic's 16 x 4 (reduction)
// BAD-NOT: Traceback
