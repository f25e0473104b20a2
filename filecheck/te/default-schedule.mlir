// apply-default-schedule writes each te kernel's schedule as IR, chosen by its stages' kinds.
// The target is pinned (AVX2: 8 f32 lanes) so the checks hold on any host.
// RUN: nnvm-opt %s --split-input-file -p 'lower-to-te,apply-default-schedule{min_parallel_work=0 target="llvm -mcpu=x86-64-v3"}' | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p 'lower-to-te,apply-default-schedule{min_parallel_work=0 target="llvm -mcpu=x86-64-v3"},lower-te-to-loops{target="llvm -mcpu=x86-64-v3"}' | filecheck %s --check-prefix=LOOPS
// RUN: nnvm-opt %s --split-input-file -p 'lower-to-te,apply-default-schedule{target="llvm -mcpu=x86-64-v3"}' | filecheck %s --check-prefix=SMALL

// An elementwise chain: producers inlined, axes fused, native-width vectors, parallel outer.
// CHECK-LABEL: func.func private @fused_add_exp_mul
// CHECK:      te.schedule {
// CHECK-NEXT:   te.compute_inline "add"
// CHECK-NEXT:   te.compute_inline "exp"
// CHECK-NEXT:   te.fuse "mul" (i, j, k) -> mul.fused
// CHECK-NEXT:   te.split "mul" mul.fused by 8 -> (mul.fused.o, mul.fused.i)
// CHECK-NEXT:   te.vectorize "mul" mul.fused.i
// CHECK-NEXT:   te.parallel "mul" mul.fused.o
// CHECK-NEXT: }
// LOOPS-LABEL: func.func private @fused_add_exp_mul
// LOOPS:       "scf.parallel"(%c0, %c12, %c1)
// LOOPS:         math.exp %{{.*}} : vector<8xf32>
// LOOPS-NOT:   memref.alloc
// With the default min_parallel_work, 96 elements are too few to pay for a fork/join.
// SMALL-LABEL: func.func private @fused_add_exp_mul
// SMALL:       te.vectorize "mul" mul.fused.i
// SMALL-NEXT:  }
func.func private @fused_add_exp_mul(%x: tensor<2x3x16xf32>, %y: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %a = nnvm.add %x, %y : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %e = nnvm.exp %a : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %m = nnvm.mul %e, %x : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  func.return %m : tensor<2x3x16xf32>
}

// -----

// A broadcast read (a per-channel scale) or a concat's select needs the axes: the outer axes
// fused, the columns a loop, the channel block one vector (no div/mod of a fused index).
// CHECK-LABEL: func.func private @fused_concat_mul
// CHECK:      te.schedule {
// CHECK-NEXT:   te.compute_inline "concat"
// CHECK-NEXT:   te.fuse "mul" (i, j, k) -> mul.outer
// CHECK-NEXT:   te.vectorize "mul" m
// CHECK-NEXT:   te.parallel "mul" mul.outer
// CHECK-NEXT: }
func.func private @fused_concat_mul(%x: tensor<2x1x5x7x16xf32>, %y: tensor<2x2x5x7x16xf32>, %s: tensor<2x3x1x1x16xf32>) -> tensor<2x3x5x7x16xf32> {
  %c = nnvm.concat %x, %y {axis = 1} : (tensor<2x1x5x7x16xf32>, tensor<2x2x5x7x16xf32>) -> tensor<2x3x5x7x16xf32>
  %m = nnvm.mul %c, %s : (tensor<2x3x5x7x16xf32>, tensor<2x3x1x1x16xf32>) -> tensor<2x3x5x7x16xf32>
  func.return %m : tensor<2x3x5x7x16xf32>
}

// -----

// A layout transform between blocked layouts: vectors of the source's block (4), so each is
// one contiguous load.
// CHECK-LABEL: func.func @reblock
// CHECK:      te.split "layout_transform" m by 4
// LOOPS-LABEL: func.func @reblock
// LOOPS:       vector.load %{{.*}} : memref<1x4x3x3x4xf32>, vector<4xf32>
func.func @reblock(%x: tensor<1x4x3x3x4xf32>) -> tensor<1x2x3x3x8xf32> {
  %y = nnvm.layout_transform %x {src_layout = "NCHW4c", dst_layout = "NCHW8c"} : (tensor<1x4x3x3x4xf32>) -> tensor<1x2x3x3x8xf32>
  func.return %y : tensor<1x2x3x3x8xf32>
}

// -----

// A reduction across rows: the reduction loop goes outside the contiguous axis, which is
// vectorized.
// CHECK-LABEL: func.func private @fused_exp_sum
// CHECK:      te.compute_inline "exp"
// CHECK-NEXT: te.reorder "sum" (i, r1, j)
// CHECK-NEXT: te.vectorize "sum" j
// CHECK-NEXT: te.parallel "sum" i
func.func private @fused_exp_sum(%x: tensor<3x5x20xf32>) -> tensor<3x20xf32> {
  %e = nnvm.exp %x : (tensor<3x5x20xf32>) -> tensor<3x5x20xf32>
  %s = nnvm.sum %e {axes = [1]} : (tensor<3x5x20xf32>) -> tensor<3x20xf32>
  func.return %s : tensor<3x20xf32>
}

// -----

// A reduction along the contiguous axis: split by the vector width and rfactor-ed.
// CHECK-LABEL: func.func @row_max
// CHECK:      te.split "max" r1 by 8 -> (r1.o, r1.i)
// CHECK-NEXT: te.rfactor "max" r1.i -> "max.rf"
// CHECK-NEXT: te.reorder "max.rf" (i, r1.o, r1.i)
// CHECK-NEXT: te.vectorize "max.rf" r1.i
// CHECK-NEXT: te.compute_at "max.rf" at "max" i
// CHECK-NEXT: te.parallel "max" i
// LOOPS-LABEL: func.func @row_max
// LOOPS:       arith.maximumf %{{.*}} : vector<8xf32>
func.func @row_max(%x: tensor<4x64xf32>) -> tensor<4xf32> {
  %m = nnvm.max %x {axes = [1]} : (tensor<4x64xf32>) -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// -----

// conv2d in NCHW8c with its bias and relu: the epilogue is tiled (ow by 6 x two channel
// blocks), the convolution computed at the tile with ow and the two blocks unrolled (ow
// outside, so one broadcast input feeds both blocks' weight vectors) and channels vectorized.
// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK:      te.compute_inline "add"
// CHECK-NEXT: te.split "relu" l by 6 -> (l.o, l.i)
// CHECK-NEXT: te.split "relu" j by 2 -> (j.o, j.i)
// CHECK-NEXT: te.reorder "relu" (i, j.o, k, l.o, j.i, l.i, m)
// CHECK-NEXT: te.fuse "relu" (i, j.o, k) -> relu.tile
// CHECK-NEXT: te.parallel "relu" relu.tile
// CHECK-NEXT: te.vectorize "relu" m
// CHECK-NEXT: te.compute_at "conv2d" at "relu" l.o
// CHECK-NEXT: te.reorder "conv2d" (n, oh, icb, kh, kw, ic, ow, ocb, oc)
// CHECK-NEXT: te.unroll "conv2d" ow
// CHECK-NEXT: te.unroll "conv2d" ocb
// CHECK-NEXT: te.vectorize "conv2d" oc
// The weights prefetched 2 KiB (64 rows of 8 lanes) ahead of the input-channel loop.
// CHECK-NEXT: te.prefetch "conv2d" "arg1" at ic by 64
// The padded input: one tile takes both output blocks, so no other tile reads its input rows,
// and the rows it reads are copied inside it (at the conv's row loop), the channel block one
// vector, instead of a whole padded copy of the input first.
// CHECK-NEXT: te.vectorize "conv2d.pad" m
// CHECK-NEXT: te.compute_at "conv2d.pad" at "conv2d" oh
// LOOPS-LABEL: func.func private @fused_conv2d_add_relu
// LOOPS:       %[[ACC:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x2x1x6x8xf32>
// LOOPS:       scf.for %icb =
// LOOPS:       vector.fma %{{.*}} : vector<8xf32>
func.func private @fused_conv2d_add_relu(%x: tensor<1x2x12x12x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %b: tensor<2x1x1x8xf32>) -> tensor<1x2x12x12x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x12x12x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x12x12x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x2x12x12x8xf32>, tensor<2x1x1x8xf32>) -> tensor<1x2x12x12x8xf32>
  %r = nnvm.relu %a : (tensor<1x2x12x12x8xf32>) -> tensor<1x2x12x12x8xf32>
  func.return %r : tensor<1x2x12x12x8xf32>
}

// -----

// A conv with short rows (a whole row of 6 columns x two channel blocks is 12 accumulators,
// all AVX2 affords) and 16 such pairs of blocks to share among threads: each pair is computed
// for the whole image at once, input-channel blocks outermost, so each block's weights stay in
// L1 for every row.
// CHECK-LABEL: func.func private @fused_conv2d_short_rows
// CHECK:      te.compute_inline "add"
// CHECK-NEXT: te.split "relu" j by 2 -> (j.o, j.i)
// CHECK-NEXT: te.reorder "relu" (i, j.o, k, j.i, l, m)
// CHECK-NEXT: te.fuse "relu" (i, j.o) -> relu.tile
// CHECK-NEXT: te.parallel "relu" relu.tile
// CHECK-NEXT: te.vectorize "relu" m
// CHECK-NEXT: te.compute_at "conv2d" at "relu" relu.tile
// CHECK-NEXT: te.reorder "conv2d" (n, icb, oh, kh, kw, ic, ow, ocb, oc)
// CHECK-NEXT: te.unroll "conv2d" ow
// CHECK-NEXT: te.unroll "conv2d" ocb
// CHECK-NEXT: te.vectorize "conv2d" oc
// CHECK-NEXT: te.prefetch "conv2d" "arg1" at ic by 64
// LOOPS-LABEL: func.func private @fused_conv2d_short_rows
// LOOPS:       memref.alloca() {alignment = 64 : i64} : memref<1x2x6x6x8xf32>
func.func private @fused_conv2d_short_rows(%x: tensor<1x2x6x6x8xf32>, %w: tensor<32x2x3x3x8x8xf32>, %b: tensor<32x1x1x8xf32>) -> tensor<1x32x6x6x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x8xf32>, tensor<32x2x3x3x8x8xf32>) -> tensor<1x32x6x6x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x32x6x6x8xf32>, tensor<32x1x1x8xf32>) -> tensor<1x32x6x6x8xf32>
  %r = nnvm.relu %a : (tensor<1x32x6x6x8xf32>) -> tensor<1x32x6x6x8xf32>
  func.return %r : tensor<1x32x6x6x8xf32>
}

// -----

// The same conv with one pair of blocks (2 tiles of the whole image would leave threads
// idle): one output row a tile, as any conv.
// CHECK-LABEL: func.func private @fused_conv2d_short_rows_few_blocks
// CHECK:      te.split "relu" l by 6 -> (l.o, l.i)
// CHECK-NEXT: te.split "relu" j by 2 -> (j.o, j.i)
// CHECK-NEXT: te.reorder "relu" (i, j.o, k, l.o, j.i, l.i, m)
// CHECK-NEXT: te.fuse "relu" (i, j.o, k) -> relu.tile
func.func private @fused_conv2d_short_rows_few_blocks(%x: tensor<1x2x6x6x8xf32>, %w: tensor<2x2x3x3x8x8xf32>, %b: tensor<2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x8xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x6x6x8xf32>
  %a = nnvm.add %c, %b : (tensor<1x2x6x6x8xf32>, tensor<2x1x1x8xf32>) -> tensor<1x2x6x6x8xf32>
  %r = nnvm.relu %a : (tensor<1x2x6x6x8xf32>) -> tensor<1x2x6x6x8xf32>
  func.return %r : tensor<1x2x6x6x8xf32>
}

// -----

// A depthwise conv computes its padded input inside the output tile: only the 3 rows x 8
// columns the tile reads are copied, into a per-thread buffer.
// CHECK-LABEL: func.func private @fused_depthwise
// CHECK:      te.vectorize "conv2d" oc
// CHECK-NEXT: te.vectorize "conv2d.pad" m
// CHECK-NEXT: te.compute_at "conv2d.pad" at "conv2d" oh
// LOOPS-LABEL: func.func private @fused_depthwise
// LOOPS:       "scf.parallel"
// LOOPS:       %conv2d.pad = memref.alloca() {alignment = 64 : i64} : memref<1x1x3x8x8xf32>
func.func private @fused_depthwise(%x: tensor<1x1x6x6x8xf32>, %w: tensor<1x1x3x3x1x8xf32>) -> tensor<1x1x6x6x8xf32> {
  %c = nnvm.conv2d %x, %w {padding = [1, 1, 1, 1], groups = 8, data_layout = "NCHW8c", kernel_layout = "OIHW1i8o"} : (tensor<1x1x6x6x8xf32>, tensor<1x1x3x3x1x8xf32>) -> tensor<1x1x6x6x8xf32>
  %r = nnvm.relu %c : (tensor<1x1x6x6x8xf32>) -> tensor<1x1x6x6x8xf32>
  func.return %r : tensor<1x1x6x6x8xf32>
}

// -----

// matmul as the output: a cache_write copy is tiled 4 x 16, the product accumulates in a
// register tile (rows unrolled, 16 columns one vector). The row tiles are blocked (i.b) and
// run innermost (i.t), so each column panel of %b is reused by a block of row tiles; here
// both row tiles fit in one block.
// CHECK-LABEL: func.func @matmul
// CHECK:      te.cache_write "matmul" -> "matmul.local"
// CHECK-NEXT: te.tile "matmul" (i, j) by (4, 16) -> (i.o, j.o, i.i, j.i)
// CHECK-NEXT: te.split "matmul" i.o by 2 -> (i.b, i.t)
// CHECK-NEXT: te.reorder "matmul" (i.b, j.o, i.t, i.i, j.i)
// CHECK-NEXT: te.fuse "matmul" (i.b, j.o, i.t) -> matmul.outer
// CHECK-NEXT: te.parallel "matmul" matmul.outer
// CHECK-NEXT: te.vectorize "matmul" j.i
// CHECK-NEXT: te.compute_at "matmul.local" at "matmul" matmul.outer
// CHECK-NEXT: te.reorder "matmul.local" (k, i, j)
// CHECK-NEXT: te.unroll "matmul.local" i
// CHECK-NEXT: te.vectorize "matmul.local" j
// LOOPS-LABEL: func.func @matmul
// LOOPS:       memref.alloca() {alignment = 64 : i64} : memref<4x16xf32>
// LOOPS:       vector.load %{{.*}} : memref<12x32xf32>, vector<16xf32>
func.func @matmul(%a: tensor<8x12xf32>, %b: tensor<12x32xf32>) -> tensor<8x32xf32> {
  %m = nnvm.matmul %a, %b : (tensor<8x12xf32>, tensor<12x32xf32>) -> tensor<8x32xf32>
  func.return %m : tensor<8x32xf32>
}

// -----

// A kernel that already has a schedule (e.g. from a tuning log) keeps it.
// CHECK-LABEL: func.func @tuned
// CHECK:      te.schedule {
// CHECK-NEXT:   te.parallel "y" i
// CHECK-NEXT: }
// CHECK-NOT:  te.schedule
func.func @tuned(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = te.compute "y" [i, j] = exp(%x[i, j]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  te.schedule {
    te.parallel "y" i
  }
  func.return %y : tensor<4x4xf32>
}

// -----

// A deep matmul (K = 2048): the reduction runs in blocks of 1024 (a 1024 x 16 slice of a %b
// panel, 64 KiB, read from L2 by every row tile of a block; at most half the depth). The 256
// rows are 43 row tiles of 6 (the last one 4 rows),
// in two blocks of 22 tiles; a block keeps its accumulators in a buffer (matmul.local,
// computed at the parallel block x panel loop) across the depth blocks.
// CHECK-LABEL: func.func @matmul_blocks
// CHECK:      te.tile "matmul" (i, j) by (132, 16) -> (i.o, j.o, i.i, j.i)
// CHECK:      te.compute_at "matmul.local" at "matmul" matmul.outer
// CHECK-NEXT: te.split "matmul.local" i by 6 -> (i.o, i.i)
// CHECK-NEXT: te.split "matmul.local" k by 1024 -> (k.o, k.i)
// CHECK-NEXT: te.reorder "matmul.local" (k.o, i.o, k.i, i.i, j)
func.func @matmul_blocks(%a: tensor<256x2048xf32>, %b: tensor<2048x64xf32>) -> tensor<256x64xf32> {
  %m = nnvm.matmul %a, %b : (tensor<256x2048xf32>, tensor<2048x64xf32>) -> tensor<256x64xf32>
  func.return %m : tensor<256x64xf32>
}

// -----

// NCHW8c -> NCHW: vectors along w would gather (a stride of 8), so the outer axes are fused
// and parallel and w stays a plain loop (no div/mod of a fully fused index per element).
// CHECK-LABEL: func.func @unblock
// CHECK:       te.schedule {
// CHECK-NEXT:    te.fuse "layout_transform" (i, j, k) -> layout_transform.outer
// CHECK-NEXT:    te.parallel "layout_transform" layout_transform.outer
// CHECK-NEXT:  }
func.func @unblock(%x: tensor<1x2x4x16x8xf32>) -> tensor<1x16x4x16xf32> {
  %y = nnvm.layout_transform %x {src_layout = "NCHW8c", dst_layout = "NCHW"} : (tensor<1x2x4x16x8xf32>) -> tensor<1x16x4x16xf32>
  func.return %y : tensor<1x16x4x16xf32>
}

// -----

// A max pool in NCHW8c: one vector per output position, the window loops outside it, the
// column a loop under the fused (parallel) outer axes (no div/mod per vector); the window's
// maximum is a cache_write stage computed at the column (a register, not the output).
// CHECK-LABEL: func.func @pool_nchwc
// CHECK:       te.cache_write "max_pool2d" -> "max_pool2d.local"
// CHECK-NEXT:  te.reorder "max_pool2d.local" (i, j, k, l, kh, kw, m)
// CHECK-NEXT:  te.vectorize "max_pool2d.local" m
// CHECK-NEXT:  te.fuse "max_pool2d" (i, j, k) -> max_pool2d.outer
// CHECK-NEXT:  te.parallel "max_pool2d" max_pool2d.outer
// CHECK-NEXT:  te.vectorize "max_pool2d" m
// CHECK-NEXT:  te.compute_at "max_pool2d.local" at "max_pool2d" l
func.func @pool_nchwc(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  %y = nnvm.max_pool2d %x {pool_size = [2, 2], strides = [2, 2], layout = "NCHW8c"} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// -----

// A dense of one row (a GEMV): k split into vectors and rfactor-ed; eight outputs computed
// together with k.o outside them, so their partial sums are eight independent FMA chains.
// CHECK-LABEL: func.func private @fused_dense_bias_add_relu
// CHECK:       te.compute_inline "bias_add"
// CHECK-NEXT:  te.split "relu" j by 8 -> (j.o, j.i)
// CHECK-NEXT:  te.fuse "relu" (i, j.o) -> relu.outer
// CHECK-NEXT:  te.parallel "relu" relu.outer
// CHECK-NEXT:  te.compute_at "dense" at "relu" relu.outer
// CHECK-NEXT:  te.split "dense" k by 8 -> (k.o, k.i)
// CHECK-NEXT:  te.rfactor "dense" k.i -> "dense.rf"
// CHECK-NEXT:  te.reorder "dense.rf" (i0, k.o, n, k.i)
// CHECK-NEXT:  te.unroll "dense.rf" n
// CHECK-NEXT:  te.vectorize "dense.rf" k.i
// CHECK-NEXT:  te.compute_at "dense.rf" at "dense" i0
func.func private @fused_dense_bias_add_relu(%x: tensor<1x64xf32>, %w: tensor<16x64xf32>, %b: tensor<16xf32>) -> tensor<1x16xf32> {
  %d = nnvm.dense %x, %w : (tensor<1x64xf32>, tensor<16x64xf32>) -> tensor<1x16xf32>
  %a = nnvm.bias_add %d, %b {axis = 1} : (tensor<1x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  %r = nnvm.relu %a : (tensor<1x16xf32>) -> tensor<1x16xf32>
  func.return %r : tensor<1x16xf32>
}

// -----

// A separable resize: the H pass gathers two rows per output row and the W pass reads two
// values of it per output, so the H pass gets its own loop (inlined, each of its values was
// computed twice); the bias_add it reads, elementwise, is still inlined.
// CHECK-LABEL: func.func @bilinear_upsample
// CHECK:         te.schedule {
// CHECK-NEXT:      te.compute_inline "reshape"
// CHECK-NEXT:      te.compute_inline "bias_add"
// CHECK-NOT:       te.compute_inline
// CHECK:           te.vectorize "resize.axis2"
// CHECK:         }
func.func @bilinear_upsample(%0: tensor<1x3x64xf32>, %1: tensor<3xf32>) -> tensor<1x3x32x32xf32> {
  %2 = nnvm.reshape %0 {shape = [1, 3, 8, 8]} : (tensor<1x3x64xf32>) -> tensor<1x3x8x8xf32>
  %3 = nnvm.bias_add %2, %1 : (tensor<1x3x8x8xf32>, tensor<3xf32>) -> tensor<1x3x8x8xf32>
  %4 = nnvm.resize %3 {size = [1, 3, 32, 32], mode = "linear", nearest_mode = "floor"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x32x32xf32>
  func.return %4 : tensor<1x3x32x32xf32>
}

// -----

// Softmax's exp has two readers (the sum and the division). Over a row shorter than two vectors
// (9 at 8 lanes) the sum runs scalar, so exp gets a vector loop of its own instead of being
// recomputed there; over a longer row (40) the sum is split into vectors and exp is inlined.
// CHECK-LABEL: func.func @softmax_short_rows
// CHECK-NOT:     te.compute_inline "softmax.exp"
// CHECK:         te.vectorize "softmax.exp"
// CHECK-LABEL: func.func @softmax_long_rows
// CHECK:         te.compute_inline "softmax.exp"
func.func @softmax_short_rows(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %y = nnvm.softmax %x : (tensor<4x9xf32>) -> tensor<4x9xf32>
  func.return %y : tensor<4x9xf32>
}
func.func @softmax_long_rows(%x: tensor<4x40xf32>) -> tensor<4x40xf32> {
  %y = nnvm.softmax %x : (tensor<4x40xf32>) -> tensor<4x40xf32>
  func.return %y : tensor<4x40xf32>
}

// -----

// A transform out of a blocked layout (NCHW8c -> NCHW, 12 channels: the last block half
// padding) whose producer, a bilinear resize's W pass, has taps: the W pass is not inlined
// but computed a row at a time at the transform's (n, c // 8, h) loop, one vector of the
// block a position; the transform copies the row out channel by channel.
// CHECK-LABEL: func.func private @fused_resize_layout_transform
// CHECK-NOT:  te.compute_inline "resize.axis3"
// CHECK:      te.split "layout_transform" j by 8 -> (j.o, j.i)
// CHECK-NEXT: te.reorder "layout_transform" (i, j.o, k, j.i, l)
// CHECK-NEXT: te.fuse "layout_transform" (i, j.o, k) -> layout_transform.outer
// CHECK-NEXT: te.parallel "layout_transform" layout_transform.outer
// CHECK-NEXT: te.compute_at "resize.axis3" at "layout_transform" layout_transform.outer
// CHECK-NEXT: te.vectorize "resize.axis3" m
// LOOPS-LABEL: func.func private @fused_resize_layout_transform
// LOOPS:       %[[ROW:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x1x1x16x8xf32>
// LOOPS:       vector.store %{{.*}}, %[[ROW]]
func.func private @fused_resize_layout_transform(%x: tensor<1x2x4x4x8xf32>) -> tensor<1x12x16x16xf32> {
  %r = nnvm.resize %x {size = [1, 2, 16, 16, 8], mode = "linear"} : (tensor<1x2x4x4x8xf32>) -> tensor<1x2x16x16x8xf32>
  %y = nnvm.layout_transform %r {src_layout = "NCHW8c", dst_layout = "NCHW", logical = array<i64: 1, 12, 16, 16>} : (tensor<1x2x16x16x8xf32>) -> tensor<1x12x16x16xf32>
  func.return %y : tensor<1x12x16x16xf32>
}
