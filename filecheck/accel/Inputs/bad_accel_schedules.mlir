// Schedules lower-te-to-accel refuses (filecheck/accel/lower-te-to-accel.mlir runs these).
func.func @layer(%0: tensor<1x2x6x6x1x16xi8>, %1: tensor<2x2x3x3x16x16xi8>, %2: tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi8> {
  %3 = te.compute "inp.pad" [i, j, k, l, m, n] template "pad" = let v0 = k - 1 in let v1 = l - 1 in select(and(and(and(k >= 1, v0 < 6), l >= 1), v1 < 6), %0[i, j, v0, v1, m, n], 0) : (tensor<1x2x6x6x1x16xi8>) -> tensor<1x2x8x8x1x16xi8>
  %4 = te.compute "conv" [n, ob, y, x, bn, bo] sum [ib : 2, ky : 3, kx : 3, bi : 16] = cast<i32>(%3[n, ib, y + ky, x + kx, bn, bi]) * cast<i32>(%1[ob, ib, ky, kx, bo, bi]) : (tensor<1x2x8x8x1x16xi8>, tensor<2x2x3x3x16x16xi8>) -> tensor<1x2x6x6x1x16xi32>
  %5 = te.compute "res" [n, ob, y, x, bn, bo] = min(max(shr(%4[n, ob, y, x, bn, bo] + %2[ob, 0, bn, bo], %2[ob, 1, bn, bo]), 0), 127) : (tensor<1x2x6x6x1x16xi32>, tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi32>
  %6 = te.compute "out" [n, ob, y, x, bn, bo] = cast<i8>(%5[n, ob, y, x, bn, bo]) : (tensor<1x2x6x6x1x16xi32>) -> tensor<1x2x6x6x1x16xi8>
  te.schedule {
    te.split "out" ob by 1 -> (ob.o, ob.i)
    te.split "out" y by 3 -> (y.o, y.i)
    te.split "out" x by 6 -> (x.o, x.i)
    te.reorder "out" (n, ob.o, y.o, x.o, ob.i, y.i, x.i, bn, bo)
    te.set_scope "conv" "acc"
    te.compute_at "conv" at "out" x.o
    te.cache_read "arg2" for ["res"] -> "requant.acc" scope "acc"
    te.compute_at "requant.acc" at "out" x.o
    te.compute_inline "res"
    te.cache_read "inp.pad" for ["conv"] -> "inp.local" scope "inp"
    te.compute_inline "inp.pad"
    te.cache_read "arg1" for ["conv"] -> "wgt.local" scope "wgt"
    te.split "conv" ib by 1 -> (ib.o, ib.i)
    te.reorder "conv" (ib.o, n, ob, y, x, ib.i, ky, kx, bn, bo, bi)
    te.compute_at "inp.local" at "conv" ib.o
    te.compute_at "wgt.local" at "conv" ib.o
    te.tensorize "conv" bo with "gemm"
    te.double_buffer "inp.local"
    te.double_buffer "wgt.local"
    te.double_buffer "conv"
    te.double_buffer "requant.acc"
  }
  func.return %6 : tensor<1x2x6x6x1x16xi8>
}

// -----

func.func @layer(%0: tensor<1x2x6x6x1x16xi8>, %1: tensor<2x2x3x3x16x16xi8>, %2: tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi8> {
  %3 = te.compute "inp.pad" [i, j, k, l, m, n] template "pad" = let v0 = k - 1 in let v1 = l - 1 in select(and(and(and(k >= 1, v0 < 6), l >= 1), v1 < 6), %0[i, j, v0, v1, m, n], 0) : (tensor<1x2x6x6x1x16xi8>) -> tensor<1x2x8x8x1x16xi8>
  %4 = te.compute "conv" [n, ob, y, x, bn, bo] sum [ib : 2, ky : 3, kx : 3, bi : 16] = cast<i32>(%3[n, ib, y + ky, x + kx, bn, bi]) * cast<i32>(%1[ob, ib, ky, kx, bo, bi]) : (tensor<1x2x8x8x1x16xi8>, tensor<2x2x3x3x16x16xi8>) -> tensor<1x2x6x6x1x16xi32>
  %5 = te.compute "res" [n, ob, y, x, bn, bo] = min(max(shr(%4[n, ob, y, x, bn, bo] + %2[ob, 0, bn, bo], %2[ob, 1, bn, bo]), 0), 127) : (tensor<1x2x6x6x1x16xi32>, tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi32>
  %6 = te.compute "out" [n, ob, y, x, bn, bo] = cast<i8>(%5[n, ob, y, x, bn, bo]) : (tensor<1x2x6x6x1x16xi32>) -> tensor<1x2x6x6x1x16xi8>
  te.schedule {
    te.split "out" ob by 1 -> (ob.o, ob.i)
    te.split "out" y by 3 -> (y.o, y.i)
    te.split "out" x by 6 -> (x.o, x.i)
    te.reorder "out" (n, ob.o, y.o, x.o, ob.i, y.i, x.i, bn, bo)
    te.set_scope "conv" "shared"
    te.compute_at "conv" at "out" x.o
    te.cache_read "arg2" for ["res"] -> "requant.acc" scope "acc"
    te.compute_at "requant.acc" at "out" x.o
    te.compute_inline "res"
    te.cache_read "inp.pad" for ["conv"] -> "inp.local" scope "inp"
    te.compute_inline "inp.pad"
    te.cache_read "arg1" for ["conv"] -> "wgt.local" scope "wgt"
    te.split "conv" ib by 1 -> (ib.o, ib.i)
    te.reorder "conv" (ib.o, n, ob, y, x, ib.i, ky, kx, bn, bo, bi)
    te.compute_at "inp.local" at "conv" ib.o
    te.compute_at "wgt.local" at "conv" ib.o
    te.tensorize "conv" bn with "gemm"
    te.double_buffer "inp.local"
    te.double_buffer "wgt.local"
    te.double_buffer "conv"
    te.double_buffer "requant.acc"
  }
  func.return %6 : tensor<1x2x6x6x1x16xi8>
}

// -----

func.func @layer(%0: tensor<1x2x6x6x1x16xi8>, %1: tensor<2x2x3x3x16x16xi8>, %2: tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi8> {
  %3 = te.compute "inp.pad" [i, j, k, l, m, n] template "pad" = let v0 = k - 1 in let v1 = l - 1 in select(and(and(and(k >= 1, v0 < 6), l >= 1), v1 < 6), %0[i, j, v0, v1, m, n], 0) : (tensor<1x2x6x6x1x16xi8>) -> tensor<1x2x8x8x1x16xi8>
  %4 = te.compute "conv" [n, ob, y, x, bn, bo] sum [ib : 2, ky : 3, kx : 3, bi : 16] = cast<i32>(%3[n, ib, y + ky, x + kx, bn, bi]) * cast<i32>(%1[ob, ib, ky, kx, bo, bi]) : (tensor<1x2x8x8x1x16xi8>, tensor<2x2x3x3x16x16xi8>) -> tensor<1x2x6x6x1x16xi32>
  %5 = te.compute "res" [n, ob, y, x, bn, bo] = min(max(shr(%4[n, ob, y, x, bn, bo] + %2[ob, 0, bn, bo], %2[ob, 1, bn, bo]), 0), 127) : (tensor<1x2x6x6x1x16xi32>, tensor<2x2x1x16xi32>) -> tensor<1x2x6x6x1x16xi32>
  %6 = te.compute "out" [n, ob, y, x, bn, bo] = cast<i8>(%5[n, ob, y, x, bn, bo]) : (tensor<1x2x6x6x1x16xi32>) -> tensor<1x2x6x6x1x16xi8>
  te.schedule {
    te.split "out" ob by 1 -> (ob.o, ob.i)
    te.split "out" y by 3 -> (y.o, y.i)
    te.split "out" x by 6 -> (x.o, x.i)
    te.reorder "out" (n, ob.o, y.o, x.o, ob.i, y.i, x.i, bn, bo)
    te.set_scope "conv" "acc"
    te.compute_at "conv" at "out" x.o
    te.cache_read "arg2" for ["res"] -> "requant.acc" scope "acc"
    te.compute_at "requant.acc" at "out" x.o
    te.compute_inline "res"
    te.cache_read "inp.pad" for ["conv"] -> "inp.local" scope "inp"
    te.compute_inline "inp.pad"
    te.cache_read "arg1" for ["conv"] -> "wgt.local" scope "wgt"
    te.split "conv" ib by 1 -> (ib.o, ib.i)
    te.reorder "conv" (ib.o, n, ob, y, x, ib.i, ky, kx, bn, bo, bi)
    te.compute_at "inp.local" at "conv" ib.o
    te.tensorize "conv" bn with "gemm"
    te.double_buffer "inp.local"
    te.double_buffer "conv"
    te.double_buffer "requant.acc"
  }
  func.return %6 : tensor<1x2x6x6x1x16xi8>
}
