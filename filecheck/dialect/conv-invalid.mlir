// RUN: nnvm-opt %s --split-input-file --verify-diagnostics

func.func @channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{weight expects 2 input channels (2 per group x 1 groups), data has 3}}
  %y = nnvm.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @groups(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{groups=4 must divide input channels 6}}
  %y = nnvm.conv2d %x, %w {groups = 4} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @window(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error @+1 {{the window does not fit the 2x2 input}}
  %y = nnvm.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return %y : tensor<1x4x1x1xf32>
}

// -----

func.func @strides(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{strides and dilation must be >= 1}}
  %y = nnvm.conv2d %x, %w {strides = [0, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @padding_arity(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{strides and dilation need 2 values, padding 4}}
  %y = nnvm.conv2d %x, %w {padding = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @layout(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{layout 'NCXW' is not a blocking of NCHW}}
  %y = nnvm.conv2d %x, %w {data_layout = "NCXW"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// -----

func.func @block_extent(%x: tensor<1x2x6x6x4xf32>, %w: tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x4x4x8xf32> {
  // expected-error @+1 {{data: block axis 8c has extent 4}}
  %y = nnvm.conv2d %x, %w {data_layout = "NCHW8c", kernel_layout = "OIHW8i8o"} : (tensor<1x2x6x6x4xf32>, tensor<2x2x3x3x8x8xf32>) -> tensor<1x2x4x4x8xf32>
  func.return %y : tensor<1x2x4x4x8xf32>
}

// -----

func.func @int_conv(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32> {
  // expected-error @+1 {{conv2d needs float data and weight}}
  %y = nnvm.conv2d %x, %w : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  func.return %y : tensor<1x4x6x6xi32>
}
