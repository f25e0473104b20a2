// The opt-level pipelines, runnable by name; weight-changing passes read and write --params.
// RUN: python -c "import numpy as np; from nnvm.support.params import save_params_file as s; r = np.random.default_rng(0); s('%t.params', {'w': r.standard_normal((16, 8, 3, 3)).astype(np.float32), 'g': np.ones(16, np.float32), 'b': np.zeros(16, np.float32), 'm': np.zeros(16, np.float32), 'v': np.ones(16, np.float32)})"
// RUN: nnvm-opt %s -p nnvm-O0 | filecheck %s --check-prefix=O0
// RUN: nnvm-opt %s -p nnvm-O1 | filecheck %s --check-prefix=O1
// RUN: nnvm-opt %s -p nnvm-O3 --params %t.params --params-out %t.out.params | filecheck %s --check-prefix=O3
// RUN: python -c "from nnvm.support.params import load_params_file as l; p = l('%t.out.params'); print(sorted(p), p[sorted(p)[0]].shape)" | filecheck %s --check-prefix=STORE

// At O0 nothing changes.
// O0: nnvm.conv2d
// O0-NEXT: nnvm.batch_norm
// O0-NEXT: nnvm.relu

// At O1, fusion and memory planning only; batch_norm joins no group (it is opaque).
// O1: func.func @main{{.*}}nnvm.memory_plan
// O1: func.call @fused_conv2d_
// O1: func.call @fused_batch_norm_
// O1: func.call @fused_relu_

// At O3, batch norm is folded into the conv's (blocked, precomputed) weight; one kernel
// conv + bias + relu in NCHW8c between two layout transforms.
// O3-NOT: batch_norm
// O3: func.call @fused_layout_transform_
// O3: nnvm.param "w.layout_transform" : tensor<2x1x3x3x8x8xf32>
// O3: func.call @fused_conv2d_add_relu_
// O3: func.call @fused_layout_transform_
// O3: func.func private @fused_conv2d_add_relu_
// O3: nnvm.conv2d {{.*}}data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"
// STORE: (2, 1, 3, 3, 8, 8)
func.func @main(%x: tensor<1x8x10x10xf32>) -> tensor<1x16x8x8xf32> {
  %w = nnvm.param "w" : tensor<16x8x3x3xf32>
  %g = nnvm.param "g" : tensor<16xf32>
  %b = nnvm.param "b" : tensor<16xf32>
  %m = nnvm.param "m" : tensor<16xf32>
  %v = nnvm.param "v" : tensor<16xf32>
  %c = nnvm.conv2d %x, %w : (tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x8x8xf32>
  %n = nnvm.batch_norm %c, %g, %b, %m, %v : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r = nnvm.relu %n : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  func.return %r : tensor<1x16x8x8xf32>
}
