// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

// Verifier errors of the pooling ops (window attributes, layouts, result types).

func.func @max_pool_rank(%a0: tensor<3x8x8xf32>) -> tensor<3x7x7xf32> {
  // expected-error @+1 {{data has rank 3, layout NCHW needs 4}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2]} : (tensor<3x8x8xf32>) -> tensor<3x7x7xf32>
  func.return %0 : tensor<3x7x7xf32>
}

// -----

func.func @max_pool_values(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{max_pool2d: pool_size, strides and dilation need 2 values, padding 4}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], padding = [1, 1]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @max_pool_stride(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{max_pool2d: pool_size, strides and dilation must be >= 1 and padding >= 0}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], strides = [0, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @max_pool_pad(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{max_pool2d: padding [0, 2, 0, 0] must be smaller than the pool size [2, 2]}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], padding = [0, 2, 0, 0]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @max_pool_window(%a0: tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32> {
  // expected-error @+1 {{nnvm.max_pool2d: the window does not fit the 2x2 input}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [3, 3]} : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  func.return %0 : tensor<1x3x1x1xf32>
}

// -----

func.func @max_pool_missing_size(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{property 'pool_size' expected}}
  %0 = nnvm.max_pool2d %a0 {strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @max_pool_layout(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+1 {{layout 'OIHW' is not a blocking of NCHW}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], layout = "OIHW"} : (tensor<1x3x8x8xf32>) -> tensor<1x3x7x7xf32>
  func.return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @max_pool_block(%a0: tensor<1x2x8x8x4xf32>) -> tensor<1x2x7x7x4xf32> {
  // expected-error @+1 {{data: block axis 8c has extent 4}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], layout = "NCHW8c"} : (tensor<1x2x8x8x4xf32>) -> tensor<1x2x7x7x4xf32>
  func.return %0 : tensor<1x2x7x7x4xf32>
}

// -----

func.func @max_pool_result(%a0: tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error @+1 {{inferred type tensor<1x3x4x4xf32> of result disagrees}}
  %0 = nnvm.max_pool2d %a0 {pool_size = [2, 2], strides = [2, 2], ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
  func.return %0 : tensor<1x3x5x5xf32>
}

// -----

func.func @avg_pool_int(%a0: tensor<1x3x8x8xi32>) -> tensor<1x3x7x7xi32> {
  // expected-error @+1 {{nnvm.avg_pool2d does not accept element type i32}}
  %0 = nnvm.avg_pool2d %a0 {pool_size = [2, 2]} : (tensor<1x3x8x8xi32>) -> tensor<1x3x7x7xi32>
  func.return %0 : tensor<1x3x7x7xi32>
}

// -----

func.func @global_pool_rank(%a0: tensor<1x3x8xf32>) -> tensor<1x3x1xf32> {
  // expected-error @+1 {{data has rank 3, layout NCHW needs 4}}
  %0 = nnvm.global_avg_pool2d %a0 : (tensor<1x3x8xf32>) -> tensor<1x3x1xf32>
  func.return %0 : tensor<1x3x1xf32>
}

// -----

func.func @global_pool_result(%a0: tensor<1x16x7x7xf32>) -> tensor<1x16x1x1xf32> {
  // expected-error @+1 {{data has rank 4, layout NCHW8c needs 5}}
  %0 = nnvm.global_max_pool2d %a0 {layout = "NCHW8c"} : (tensor<1x16x7x7xf32>) -> tensor<1x16x1x1xf32>
  func.return %0 : tensor<1x16x1x1xf32>
}
