// RUN: nnvm-opt %s -p multiply-by-reciprocal | filecheck %s

// GELU's x / sqrt(2) as te-to-loops writes it (a broadcast scalar constant): one multiply by
// the constant's reciprocal, rounded to f32; the divisor is gone.
// CHECK-LABEL: func.func @gelu_scale
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.constant dense<0.707106769> : vector<16xf32>
// CHECK-NEXT:    %[[Y:[0-9a-z_]+]] = arith.mulf %x, %[[R]] : vector<16xf32>
// CHECK-NEXT:    func.return %[[Y]] : vector<16xf32>
func.func @gelu_scale(%x: vector<16xf32>) -> vector<16xf32> {
  %c = arith.constant 1.41421354 : f32
  %cs = vector.broadcast %c : f32 to vector<16xf32>
  %d = arith.divf %x, %cs : vector<16xf32>
  func.return %d : vector<16xf32>
}

// Scalars keep the division's fast-math flags; a dense divisor is inverted lane by lane;
// f16 rounds the reciprocal to f16.
// CHECK-LABEL: func.func @scalar
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT:    %{{.*}} = arith.mulf %x, %[[R]] fastmath<contract> : f32
// CHECK-LABEL: func.func @dense
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.constant dense<[1.000000e+00, 5.000000e-01, 0.333333343, 2.500000e-01]> : vector<4xf32>
// CHECK-NEXT:    %{{.*}} = arith.mulf %x, %[[R]] : vector<4xf32>
// CHECK-LABEL: func.func @half
// CHECK-NEXT:    %[[R:[0-9a-z_]+]] = arith.constant 3.332520e-01 : f16
// CHECK-NEXT:    %{{.*}} = arith.mulf %x, %[[R]] : f16
func.func @scalar(%x: f32) -> f32 {
  %c = arith.constant 8.0 : f32
  %d = arith.divf %x, %c fastmath<contract> : f32
  func.return %d : f32
}
func.func @dense(%x: vector<4xf32>) -> vector<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %d = arith.divf %x, %c : vector<4xf32>
  func.return %d : vector<4xf32>
}
func.func @half(%x: f16) -> f16 {
  %c = arith.constant 3.0 : f16
  %d = arith.divf %x, %c : f16
  func.return %d : f16
}

// Left alone: a zero divisor (x / 0 is inf or NaN, x * inf differs at 0), a subnormal one
// (its reciprocal overflows), one whose reciprocal is subnormal, a divisor that is not a
// constant, and a divisor constant that something else reads stays for it.
// CHECK-LABEL: func.func @zero
// CHECK:         arith.divf %x, %{{.*}} : f32
// CHECK-LABEL: func.func @subnormal
// CHECK:         arith.divf %x, %{{.*}} : f32
// CHECK-LABEL: func.func @huge
// CHECK:         arith.divf %x, %{{.*}} : f32
// CHECK-LABEL: func.func @variable
// CHECK:         arith.divf %x, %y : f32
// CHECK-LABEL: func.func @shared
// CHECK:         %[[C:[0-9a-z_]+]] = arith.constant 4.000000e+00 : f32
// CHECK:         arith.mulf %x, %{{.*}} : f32
// CHECK:         arith.addf %{{.*}}, %[[C]] : f32
func.func @zero(%x: f32) -> f32 {
  %c = arith.constant 0.0 : f32
  %d = arith.divf %x, %c : f32
  func.return %d : f32
}
func.func @subnormal(%x: f32) -> f32 {
  %c = arith.constant 1.0e-39 : f32
  %d = arith.divf %x, %c : f32
  func.return %d : f32
}
func.func @huge(%x: f32) -> f32 {
  %c = arith.constant 3.0e38 : f32
  %d = arith.divf %x, %c : f32
  func.return %d : f32
}
func.func @variable(%x: f32, %y: f32) -> f32 {
  %d = arith.divf %x, %y : f32
  func.return %d : f32
}
func.func @shared(%x: f32) -> f32 {
  %c = arith.constant 4.0 : f32
  %d = arith.divf %x, %c : f32
  %e = arith.addf %d, %c : f32
  func.return %e : f32
}
