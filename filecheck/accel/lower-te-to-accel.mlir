// lower-te-to-accel alone, on a scheduled te kernel of an int8 conv2d (32 -> 32 channels, 3x3,
// pad 1, on 6x6, relu, per-channel shifts): the copies into inp / wgt / acc become DMA loads
// (the inlined pad stage's border in the LOAD pad fields), the tensorized reduction a GEMM reset
// and one GEMM per input-channel step (its loops folded into the GEMM's two loop levels and
// micro-ops), the output's formula four ALU ops in place and a STORE. accel-insert-tokens then
// pairs each producer with its consumer across the load, compute and store modules.
// RUN: nnvm-opt %s -p lower-te-to-accel --split-input-file | filecheck %s
// RUN: nnvm-opt %s -p lower-te-to-accel,accel-insert-tokens --split-input-file | filecheck %s --check-prefix=TOK
// RUN: not nnvm-opt %S/Inputs/bad_accel_schedules.mlir -p lower-te-to-accel --split-input-file 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not nnvm-opt %s -p 'lower-te-to-accel{config="%S/Inputs/small_acc.json"}' 2>&1 | filecheck %s --check-prefix=FULL

// CHECK:      accel.program {
// CHECK-NEXT:   accel.micro_ops
// CHECK-NEXT:   accel.dma_load {buffer = "uop", sram_base = 0 : i64, dram_base = 0 : i64
// the first tile's reset: 3 rows x 6 columns of one output block, one uop
// CHECK-NEXT:   accel.gemm {uops = array<i64: 0, 1>, loops = array<i64: 1, 18>, acc = array<i64: 0, 1>, inp = array<i64: 0, 0>, wgt = array<i64: 0, 0>, reset}
// rows -1..3 of the padded image: one row and the columns on both sides are padding
// CHECK-NEXT:   accel.dma_load {buffer = "inp", sram_base = 0 : i64, dram_base = 256 : i64, size = array<i64: 4, 6>, x_stride = 6 : i64, pad = array<i64: 1, 0, 1, 1>}
// CHECK-NEXT:   accel.dma_load {buffer = "wgt", sram_base = 0 : i64, dram_base = 32 : i64, size = array<i64: 1, 9>
// rows and columns of the tile in the loop levels, the nine taps in micro-ops
// CHECK-NEXT:   accel.gemm {uops = array<i64: 1, 10>, loops = array<i64: 3, 6>, acc = array<i64: 6, 1>, inp = array<i64: 8, 1>, wgt = array<i64: 0, 0>}
// the second input-channel step into the other inp / wgt buffers (te.double_buffer)
// CHECK-NEXT:   accel.dma_load {buffer = "inp", sram_base = 40 : i64
// CHECK-NEXT:   accel.dma_load {buffer = "wgt", sram_base = 9 : i64
// CHECK-NEXT:   accel.gemm {uops = array<i64: 10, 19>
// the (bias, shift) pair of the output block, copied into acc
// CHECK-NEXT:   accel.dma_load {buffer = "acc", sram_base = 36 : i64, {{.*}}size = array<i64: 1, 2>
// CHECK-NEXT:   accel.alu {{{.*}}op = "add", dst = array<i64: 0, 1>, src = array<i64: 0, 0>}
// CHECK-NEXT:   accel.alu {{{.*}}op = "shr", dst = array<i64: 0, 1>, src = array<i64: 0, 0>}
// CHECK-NEXT:   accel.alu {{{.*}}op = "max", {{.*}}imm = 0 : i64}
// CHECK-NEXT:   accel.alu {{{.*}}op = "min", {{.*}}imm = 127 : i64}
// CHECK-NEXT:   accel.dma_store {sram_base = 0 : i64, dram_base = 1536 : i64, size = array<i64: 1, 18>
// the second tile computes into the other acc buffer
// CHECK-NEXT:   accel.gemm {uops = array<i64: 21, 22>, {{.*}}reset}
// CHECK:        accel.finish
// CHECK-NEXT: } {kernel = "layer", dram = array<i64: 0, 4096, 8192, 20480, 24576, 28672>}
// CHECK-NOT:  accel.token

// TOK:      accel.dma_load {buffer = "wgt", sram_base = 0 : i64
// TOK-NEXT: accel.token_push {queue = "load->compute"}
// TOK-NEXT: accel.token_pop {queue = "load->compute"}
// TOK-NEXT: accel.gemm
// TOK:      accel.alu {{{.*}}op = "min"
// TOK-NEXT: accel.token_push {queue = "compute->store"}
// TOK-NEXT: accel.token_pop {queue = "compute->store"}
// TOK-NEXT: accel.dma_store
// TOK-NEXT: accel.token_push {queue = "store->compute"}
// a load into a buffer waits for the GEMM that read it two steps before
// TOK:      accel.token_pop {queue = "compute->load"}
// TOK-NEXT: accel.dma_load {buffer = "{{inp|wgt}}"
// the last store pushes, FINISH pops: the program ends when its output is in DRAM
// TOK:      accel.dma_store {sram_base = 18 : i64, dram_base = 1590 : i64
// TOK-NEXT: accel.token_push {queue = "store->compute"}
// TOK-NEXT: accel.token_pop {queue = "store->compute"}
// TOK-NEXT: accel.finish

// A configuration whose acc buffer is too small for these tiles (32 entries):
// FULL: lower-te-to-accel.mlir:{{[0-9]+}}:5: error: lower-te-to-accel: the acc buffer holds 32 entries; the schedule's acc stages need 40 ('conv' 2 x 18, 'requant.acc' 2 x 2): choose smaller tiles

// A tensorized block that is not the GEMM core's (the intrinsic's 1 x 16 x 16), a memory scope
// the accelerator does not have, a copy not computed inside its reader:
// BAD: bad_accel_schedules.mlir:24:5: error: te.tensorize: the loops under 'bo' of 'conv' do not match 'gemm': the loops are 16 x 16 (reduction), the intrinsic's 1 x 16 x 16 (reduction)
// BAD: bad_accel_schedules.mlir:45:5: error: te.set_scope: target 'accel' has no memory scope 'shared' (it has global, inp, wgt, acc, out)
// BAD: bad_accel_schedules.mlir:{{[0-9]+}}:{{[0-9]+}}: error: lower-te-to-accel: 'wgt.local' is computed at the root; on the accelerator every stage but the one output is computed at a loop of its reader (te.compute_at) or inlined
// BAD-NOT: Traceback

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
    te.tensorize "conv" bn with "gemm"
    te.double_buffer "inp.local"
    te.double_buffer "wgt.local"
    te.double_buffer "conv"
    te.double_buffer "requant.acc"
  }
  func.return %6 : tensor<1x2x6x6x1x16xi8>
}
