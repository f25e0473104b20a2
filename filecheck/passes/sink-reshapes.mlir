// RUN: nnvm-opt %s -p sink-reshapes | filecheck %s
// RUN: nnvm-opt %s -p sink-reshapes --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// [S, N] -> [1, S, N], a bias and GELU, then back to [S, N]: the elementwise ops move above
// the first reshape (the bias [N] broadcasts into [S, N] as it did into [1, S, N]), the two
// reshapes meet and cancel, so the chain is one epilogue of whatever produced %d.
// CHECK-LABEL: func.func @gelu_between_reshapes
// CHECK-NOT:     nnvm.reshape
// CHECK:         %{{.*}} = nnvm.add %d, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK:         nnvm.erf %{{.*}} : (tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NOT:     nnvm.reshape
// CHECK:         func.return %{{.*}} : tensor<8x32xf32>
func.func @gelu_between_reshapes(%d: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %r = nnvm.reshape %d {shape = [1, 8, 32]} : (tensor<8x32xf32>) -> tensor<1x8x32xf32>
  %x = nnvm.add %r, %b : (tensor<1x8x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  %c = nnvm.constant dense<1.41421354> : tensor<f32>
  %s = nnvm.div %x, %c : (tensor<1x8x32xf32>, tensor<f32>) -> tensor<1x8x32xf32>
  %e = nnvm.erf %s : (tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %y = nnvm.mul %x, %e : (tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  %o = nnvm.reshape %y {shape = [8, 32]} : (tensor<1x8x32xf32>) -> tensor<8x32xf32>
  func.return %o : tensor<8x32xf32>
}

// An operand that would broadcast differently (rank 3), or one that varies along a dimension
// the reshape moves, keeps the reshape where it is.
// CHECK-LABEL: func.func @kept
// CHECK:         %r = nnvm.reshape %d {shape = [1, 8, 32]}
// CHECK-NEXT:    %x = nnvm.add %r, %b3
// CHECK:         %t = nnvm.reshape %d {shape = [16, 16]}
// CHECK-NEXT:    %u = nnvm.add %t, %b16
func.func @kept(%d: tensor<8x32xf32>, %b3: tensor<1x1x32xf32>, %b16: tensor<16xf32>) -> (tensor<1x8x32xf32>, tensor<16x16xf32>) {
  %r = nnvm.reshape %d {shape = [1, 8, 32]} : (tensor<8x32xf32>) -> tensor<1x8x32xf32>
  %x = nnvm.add %r, %b3 : (tensor<1x8x32xf32>, tensor<1x1x32xf32>) -> tensor<1x8x32xf32>
  %t = nnvm.reshape %d {shape = [16, 16]} : (tensor<8x32xf32>) -> tensor<16x16xf32>
  %u = nnvm.add %t, %b16 : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16x16xf32>
  func.return %x, %u : tensor<1x8x32xf32>, tensor<16x16xf32>
}

// A channels-last MLP (ConvNeXt's [H*W, C] matmul viewed as [1, H, W, C] for its bias and
// GELU): the reshape keeps the trailing C, so the bias [C] moves up with the ops and the two
// reshapes cancel. A bias varying along W ([W, C]) would change meaning: that reshape stays.
// CHECK-LABEL: func.func @channels_last_mlp
// CHECK-NOT:     nnvm.reshape
// CHECK:         %{{.*}} = nnvm.add %d, %b : (tensor<12x8xf32>, tensor<8xf32>) -> tensor<12x8xf32>
// CHECK-NEXT:    nnvm.erf %{{.*}} : (tensor<12x8xf32>) -> tensor<12x8xf32>
// CHECK-NEXT:    %r2 = nnvm.reshape %d {shape = [1, 3, 4, 8]}
// CHECK-NEXT:    %x2 = nnvm.add %r2, %bw
func.func @channels_last_mlp(%d: tensor<12x8xf32>, %b: tensor<8xf32>, %bw: tensor<4x8xf32>) -> (tensor<12x8xf32>, tensor<1x3x4x8xf32>) {
  %r = nnvm.reshape %d {shape = [1, 3, 4, 8]} : (tensor<12x8xf32>) -> tensor<1x3x4x8xf32>
  %x = nnvm.add %r, %b : (tensor<1x3x4x8xf32>, tensor<8xf32>) -> tensor<1x3x4x8xf32>
  %e = nnvm.erf %x : (tensor<1x3x4x8xf32>) -> tensor<1x3x4x8xf32>
  %o = nnvm.reshape %e {shape = [12, 8]} : (tensor<1x3x4x8xf32>) -> tensor<12x8xf32>
  %r2 = nnvm.reshape %d {shape = [1, 3, 4, 8]} : (tensor<12x8xf32>) -> tensor<1x3x4x8xf32>
  %x2 = nnvm.add %r2, %bw : (tensor<1x3x4x8xf32>, tensor<4x8xf32>) -> tensor<1x3x4x8xf32>
  func.return %o, %x2 : tensor<12x8xf32>, tensor<1x3x4x8xf32>
}

// A pointwise conv run as a matmul ([N, C, H*W] -> [N, C, H, W]): the per-channel bias_add
// and the relu move above the reshape, onto the matmul's result.
// CHECK-LABEL: func.func @pointwise_epilogue
// CHECK-NEXT:    %mm = nnvm.matmul %w, %rows
// CHECK-NEXT:    %b_4d_3d = nnvm.bias_add %mm, %bias : (tensor<1x58x36xf32>, tensor<58xf32>) -> tensor<1x58x36xf32>
// CHECK-NEXT:    %y_3d = nnvm.relu %b_4d_3d : (tensor<1x58x36xf32>) -> tensor<1x58x36xf32>
// CHECK-NEXT:    %y = nnvm.reshape %y_3d {shape = [1, 58, 6, 6]}
func.func @pointwise_epilogue(%w: tensor<58x58xf32>, %rows: tensor<1x58x36xf32>, %bias: tensor<58xf32>) -> tensor<1x58x6x6xf32> {
  %mm = nnvm.matmul %w, %rows : (tensor<58x58xf32>, tensor<1x58x36xf32>) -> tensor<1x58x36xf32>
  %o = nnvm.reshape %mm {shape = [1, 58, 6, 6]} : (tensor<1x58x36xf32>) -> tensor<1x58x6x6xf32>
  %b_4d = nnvm.bias_add %o, %bias {axis = 1} : (tensor<1x58x6x6xf32>, tensor<58xf32>) -> tensor<1x58x6x6xf32>
  %y = nnvm.relu %b_4d : (tensor<1x58x6x6xf32>) -> tensor<1x58x6x6xf32>
  func.return %y : tensor<1x58x6x6xf32>
}

// STATS: 'sink-reshapes'
// STATS:   (S) 8 sunk - elementwise ops moved above a reshape
// STATS:   (S) 4 composed - reshapes composed or removed
