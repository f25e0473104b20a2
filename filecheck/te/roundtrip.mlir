// The te dialect's custom syntax survives printing, re-parsing and the generic form.
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// CHECK-LABEL: func.func @matmul
// CHECK: te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-GENERIC: "te.compute"() <{tag = "C", axis_names = ["i", "j", "k"], reduce = "sum", reduce_extents = array<i64: 16>}> ({
// CHECK-GENERIC: ^bb0(%i: index, %j: index, %k: index):
// CHECK-GENERIC: "te.read"(%A, %i, %k) : (tensor<4x16xf32>, index, index) -> f32
// CHECK-GENERIC: "te.yield"
func.func @matmul(%A: tensor<4x16xf32>, %B: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %C = te.compute "C" [i, j] sum [k : 16] = %A[i, k] * %B[k, j] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return %C : tensor<4x8xf32>
}

// -----

// Values used twice are let-bound; literals take their context's type or say it.
// CHECK-LABEL: func.func @formulas
// CHECK: te.compute "leaky" [i, j] = let v0 = %x[i, j] in select(v0 > 0.0, v0, v0 * 0.1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: te.compute "pad" [i, j] template "pad" = select(and(i >= 1, i - 1 < 4), %x[i - 1, j], -inf) : (tensor<4x8xf32>) -> tensor<6x8xf32>
// CHECK: te.compute "mixed" [i] = cast<f32>(cast<i64>(i)) + exp(-%b[floordiv(i * 2, 3)]) * 2.5 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: te.compute "wide" [i] = cast<f64>(%b[i]) + 1.5 : (tensor<8xf32>) -> tensor<8xf64>
// CHECK: te.compute "typed" [i] = cast<f32>((2.0 : f64)) + %b[i] : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: te.compute "cmp" [i] = ne(%b[i], %b[7 - i]) : (tensor<8xf32>) -> tensor<8xi1>
// CHECK: te.compute "nan" [i] = not(cmpf.uno(%b[i], %b[i])) : (tensor<8xf32>) -> tensor<8xi1>
// CHECK: te.compute "ints" [i] = max(%n[i], 0) / 3 + rem(%n[i], 2) : (tensor<8xi32>) -> tensor<8xi32>
// CHECK: te.compute "top" [] max [r : 8] = %b[r] : (tensor<8xf32>) -> tensor<f32>
func.func @formulas(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %n: tensor<8xi32>) -> tensor<8xf32> {
  %0 = te.compute "leaky" [i, j] = let v = %x[i, j] in select(v > 0.0, v, v * 0.1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = te.compute "pad" [i, j] template "pad" = select(and(i >= 1, i - 1 < 4), %x[i - 1, j], -inf) : (tensor<4x8xf32>) -> tensor<6x8xf32>
  %2 = te.compute "mixed" [i] = cast<f32>(cast<i64>(i)) + exp(-%b[floordiv(i * 2, 3)]) * (2.5 : f32) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = te.compute "wide" [i] = cast<f64>(%b[i]) + 1.5 : (tensor<8xf32>) -> tensor<8xf64>
  %8 = te.compute "typed" [i] = cast<f32>((2.0 : f64)) + %b[i] : (tensor<8xf32>) -> tensor<8xf32>
  %4 = te.compute "cmp" [i] = ne(%b[i], %b[7 - i]) : (tensor<8xf32>) -> tensor<8xi1>
  %5 = te.compute "nan" [i] = not(cmpf.uno(%b[i], %b[i])) : (tensor<8xf32>) -> tensor<8xi1>
  %6 = te.compute "ints" [i] = max(%n[i], 0) / 3 + rem(%n[i], 2) : (tensor<8xi32>) -> tensor<8xi32>
  %7 = te.compute "top" [] max [r : 8] = %b[r] : (tensor<8xf32>) -> tensor<f32>
  func.return %2 : tensor<8xf32>
}

// -----

// Constants, externs and a schedule with every primitive.
// CHECK-LABEL: func.func @schedule
// CHECK: %[[T:.*]] = te.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: te.extern @my_kernel(%x, %[[T]]) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK:      te.schedule {
// CHECK-NEXT:   te.split "C" j by 4 -> (j.o, j.i)
// CHECK-NEXT:   te.split "C" i nparts 2 -> (i.o, i.i)
// CHECK-NEXT:   te.tile "D" (i, j) by (2, 4) -> (io, jo, ii, ji)
// CHECK-NEXT:   te.fuse "D" (io, jo) -> f
// CHECK-NEXT:   te.reorder "C" (i.o, j.o, i.i, j.i)
// CHECK-NEXT:   te.vectorize "D" ji
// CHECK-NEXT:   te.parallel "D" f
// CHECK-NEXT:   te.unroll "D" ii
// CHECK-NEXT:   te.compute_at "C" at "D" f
// CHECK-NEXT:   te.compute_inline "E"
// CHECK-NEXT:   te.compute_root "E"
// CHECK-NEXT:   te.cache_write "D" -> "D.local"
// CHECK-NEXT:   te.cache_read "arg0" for ["C", "D"] -> "A.local"
// CHECK-NEXT:   te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 32
// CHECK-NEXT:   te.rfactor "C" k -> "C.rf"
// CHECK-NEXT:   te.bind "D" f to "blockIdx.x"
// CHECK-NEXT:   te.tensorize "D" ji with "vta.gemm"
// CHECK-NEXT:   te.set_scope "C" "acc"
// CHECK-NEXT:   te.double_buffer "A.local"
// CHECK-NEXT: }
func.func @schedule(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = te.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = te.extern @my_kernel(%x, %t) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  te.schedule {
    te.split "C" j by 4
    te.split "C" i nparts 2 -> (i.o, i.i)
    te.tile "D" (i, j) by (2, 4) -> (io, jo, ii, ji)
    te.fuse "D" (io, jo) -> f
    te.reorder "C" (i.o, j.o, i.i, j.i)
    te.vectorize "D" ji
    te.parallel "D" f
    te.unroll "D" ii
    te.compute_at "C" at "D" f
    te.compute_inline "E"
    te.compute_root "E"
    te.cache_write "D"
    te.cache_read "arg0" for ["C", "D"] -> "A.local"
    te.cache_read "arg1" for ["C"] -> "B.p" panel 1 by 32
    te.rfactor "C" k
    te.bind "D" f to "blockIdx.x"
    te.tensorize "D" ji with "vta.gemm"
    te.set_scope "C" "acc"
    te.double_buffer "A.local"
  }
  func.return %y : tensor<2xf32>
}
