// RUN: nnvm-opt %s | filecheck %s
// RUN: NNVM_ROUNDTRIP
// RUN: NNVM_GENERIC_ROUNDTRIP

// Unary elementwise ops: one operand, same shape and element type out.

// CHECK-LABEL: @relu
// CHECK: %{{.*}} = nnvm.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @sigmoid
// CHECK: %{{.*}} = nnvm.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.sigmoid"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @sigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @tanh
// CHECK: %{{.*}} = nnvm.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.tanh"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @erf
// CHECK: %{{.*}} = nnvm.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.erf"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @exp
// CHECK: %{{.*}} = nnvm.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @log
// CHECK: %{{.*}} = nnvm.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.log"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @log(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @sqrt
// CHECK: %{{.*}} = nnvm.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.sqrt"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @sqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @rsqrt
// CHECK: %{{.*}} = nnvm.rsqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.rsqrt"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @rsqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.rsqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @reciprocal
// CHECK: %{{.*}} = nnvm.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.reciprocal"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @reciprocal(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @neg
// CHECK: %{{.*}} = nnvm.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.neg"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @neg(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @abs
// CHECK: %{{.*}} = nnvm.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.abs"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @abs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @floor
// CHECK: %{{.*}} = nnvm.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.floor"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @floor(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @ceil
// CHECK: %{{.*}} = nnvm.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.ceil"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @ceil(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @round
// CHECK: %{{.*}} = nnvm.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.round"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @round(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @hard_swish
// CHECK: %{{.*}} = nnvm.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-GENERIC: "nnvm.hard_swish"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @hard_swish(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nnvm.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: @relu_int
// CHECK: %{{.*}} = nnvm.relu %x : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-GENERIC: "nnvm.relu"(%x) : (tensor<4xi32>) -> tensor<4xi32>
func.func @relu_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %y = nnvm.relu %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// CHECK-LABEL: @leaky_relu
// CHECK: %{{.*}} = nnvm.leaky_relu %x {alpha = 0.2} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: "nnvm.leaky_relu"(%x) <{alpha = 2.000000e-01 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
func.func @leaky_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.leaky_relu %x {alpha = 0.2} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: @leaky_relu_default
// CHECK: %{{.*}} = nnvm.leaky_relu %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: "nnvm.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
func.func @leaky_relu_default(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.leaky_relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: @relu6
// CHECK: %{{.*}} = nnvm.clip %x {min = 0.0, max = 6.0} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: "nnvm.clip"(%x) <{min = 0.000000e+00 : f64, max = 6.000000e+00 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
func.func @relu6(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.clip %x {min = 0.0, max = 6.0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: @hard_sigmoid
// CHECK: %{{.*}} = nnvm.hard_sigmoid %x {alpha = 0.1666, beta = 0.6} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: "nnvm.hard_sigmoid"(%x) <{alpha = 1.666000e-01 : f64, beta = 6.000000e-01 : f64}> : (tensor<4xf32>) -> tensor<4xf32>
func.func @hard_sigmoid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.hard_sigmoid %x {alpha = 0.1666, beta = 0.6} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: @gelu_tanh
// CHECK: %{{.*}} = nnvm.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-GENERIC: "nnvm.gelu"(%x) <{approximate = "tanh"}> : (tensor<4xf32>) -> tensor<4xf32>
func.func @gelu_tanh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: @neg_f16
// CHECK: %{{.*}} = nnvm.neg %x : (tensor<4xf16>) -> tensor<4xf16>
// CHECK-GENERIC: "nnvm.neg"(%x) : (tensor<4xf16>) -> tensor<4xf16>
func.func @neg_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = nnvm.neg %x : (tensor<4xf16>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// CHECK-LABEL: @isnan
// CHECK: %{{.*}} = nnvm.isnan %x : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-GENERIC: "nnvm.isnan"(%x) : (tensor<4xf32>) -> tensor<4xi1>
func.func @isnan(%x: tensor<4xf32>) -> tensor<4xi1> {
  %y = nnvm.isnan %x : (tensor<4xf32>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// CHECK-LABEL: @logical_not
// CHECK: %{{.*}} = nnvm.logical_not %x : (tensor<4xi1>) -> tensor<4xi1>
// CHECK-GENERIC: "nnvm.logical_not"(%x) : (tensor<4xi1>) -> tensor<4xi1>
func.func @logical_not(%x: tensor<4xi1>) -> tensor<4xi1> {
  %y = nnvm.logical_not %x : (tensor<4xi1>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// CHECK-LABEL: @cast
// CHECK: %{{.*}} = nnvm.cast %x {to = "int64"} : (tensor<4xf32>) -> tensor<4xi64>
// CHECK-GENERIC: "nnvm.cast"(%x) <{to = "int64"}> : (tensor<4xf32>) -> tensor<4xi64>
func.func @cast(%x: tensor<4xf32>) -> tensor<4xi64> {
  %y = nnvm.cast %x {to = "int64"} : (tensor<4xf32>) -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}

// Small floats keep MLIR's float spelling (a dot before the exponent) so they parse back.
// CHECK-LABEL: @tiny_alpha
// CHECK: nnvm.leaky_relu %x {alpha = 1.0e-05} : (tensor<4xf32>) -> tensor<4xf32>
func.func @tiny_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nnvm.leaky_relu %x {alpha = 1.0e-05} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
