// accel-partition alone: nnvm.quantize's int8 chains (requant=shift) become accel ops when the
// accelerator runs them; a dilated conv, a chain whose int32 sums something else reads, and the
// quantize / dequantize steps around each layer stay as they were.
// RUN: nnvm-opt %s -p accel-partition | filecheck %s
// RUN: nnvm-opt %s -p accel-partition --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: nnvm-opt %s -p accel-partition | nnvm-opt --print-op-generic | nnvm-opt | filecheck %s
// RUN: not nnvm-opt %s -p 'accel-partition{config="%S/Inputs/none.json"}' 2>&1 | filecheck %s --check-prefix=NOCFG

// CHECK-LABEL: func.func @main
// CHECK:      %q = nnvm.cast %clipped {to = "int8"}
// CHECK:      %[[Y:.*]] = accel.conv2d %q : tensor<1x16x8x8xi8>, %w : tensor<32x16x3x3xi8> bias %b : tensor<32x1x1xi32> rounding %r : tensor<32x1x1xi32> shift %s : tensor<32x1x1xi32> {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} -> tensor<1x32x8x8xi8>
// CHECK-NEXT: nnvm.cast %[[Y]] {to = "float32"}
// no bias: the operand is left out
// CHECK:      accel.conv2d %q2 : tensor<1x32x8x8xi8>, %w2 : tensor<16x32x1x1xi8> rounding %r2 : {{.*}} shift %s2 : {{.*}} {strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} -> tensor<1x16x4x4xi8>
// the dilated conv stays an nnvm.conv2d over its casts
// CHECK:      nnvm.conv2d {{.*}}dilation = [2, 2]
// CHECK:      accel.dense %qd : tensor<2x32xi8>, %wd : tensor<10x32xi8> bias %bd : tensor<10xi32> rounding %rd : tensor<10xi32> shift %sd : tensor<10xi32> -> tensor<2x10xi8>
// its int32 sums are also returned: no accel op
// CHECK:      nnvm.dense %{{.*}}, %{{.*}} : (tensor<2x32xf32>, tensor<10x32xf32>)
// CHECK-NOT:  accel.

// STATS: 'accel-partition'
// STATS-NEXT: 3 offloaded
// STATS-NEXT: 1 refused

// NOCFG: cannot read accel config {{.*}}none.json

func.func @main(%x: tensor<1x16x8x8xf32>, %xd: tensor<2x32xf32>) -> (tensor<1x16x4x4xf32>, tensor<2x10xf32>, tensor<2x10xi32>, tensor<1x16x8x8xf32>) {
  %clipped = nnvm.clip %x {min = -127.0, max = 127.0} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %q = nnvm.cast %clipped {to = "int8"} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xi8>
  %qf = nnvm.cast %q {to = "float32"} : (tensor<1x16x8x8xi8>) -> tensor<1x16x8x8xf32>
  %w = nnvm.param "w" : tensor<32x16x3x3xi8>
  %wf = nnvm.cast %w {to = "float32"} : (tensor<32x16x3x3xi8>) -> tensor<32x16x3x3xf32>
  %c = nnvm.conv2d %qf, %wf {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  %acc = nnvm.cast %c {to = "int32"} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xi32>
  %b = nnvm.param "b" : tensor<32x1x1xi32>
  %ab = nnvm.add %acc, %b : (tensor<1x32x8x8xi32>, tensor<32x1x1xi32>) -> tensor<1x32x8x8xi32>
  %r = nnvm.param "r" : tensor<32x1x1xi32>
  %ar = nnvm.add %ab, %r : (tensor<1x32x8x8xi32>, tensor<32x1x1xi32>) -> tensor<1x32x8x8xi32>
  %s = nnvm.param "s" : tensor<32x1x1xi32>
  %sh = nnvm.bit_shift %ar, %s {direction = "right"} : (tensor<1x32x8x8xi32>, tensor<32x1x1xi32>) -> tensor<1x32x8x8xi32>
  %sat = nnvm.clip %sh {min = -128.0, max = 127.0} : (tensor<1x32x8x8xi32>) -> tensor<1x32x8x8xi32>
  %y = nnvm.cast %sat {to = "int8"} : (tensor<1x32x8x8xi32>) -> tensor<1x32x8x8xi8>
  %yf = nnvm.cast %y {to = "float32"} : (tensor<1x32x8x8xi8>) -> tensor<1x32x8x8xf32>

  %clipped2 = nnvm.clip %yf {min = -127.0, max = 127.0} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  %q2 = nnvm.cast %clipped2 {to = "int8"} : (tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xi8>
  %q2f = nnvm.cast %q2 {to = "float32"} : (tensor<1x32x8x8xi8>) -> tensor<1x32x8x8xf32>
  %w2 = nnvm.param "w2" : tensor<16x32x1x1xi8>
  %w2f = nnvm.cast %w2 {to = "float32"} : (tensor<16x32x1x1xi8>) -> tensor<16x32x1x1xf32>
  %c2 = nnvm.conv2d %q2f, %w2f {strides = [2, 2]} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x4x4xf32>
  %acc2 = nnvm.cast %c2 {to = "int32"} : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xi32>
  %r2 = nnvm.param "r2" : tensor<16x1x1xi32>
  %ar2 = nnvm.add %acc2, %r2 : (tensor<1x16x4x4xi32>, tensor<16x1x1xi32>) -> tensor<1x16x4x4xi32>
  %s2 = nnvm.param "s2" : tensor<16x1x1xi32>
  %sh2 = nnvm.bit_shift %ar2, %s2 {direction = "right"} : (tensor<1x16x4x4xi32>, tensor<16x1x1xi32>) -> tensor<1x16x4x4xi32>
  %sat2 = nnvm.clip %sh2 {min = -128.0, max = 127.0} : (tensor<1x16x4x4xi32>) -> tensor<1x16x4x4xi32>
  %y2 = nnvm.cast %sat2 {to = "int8"} : (tensor<1x16x4x4xi32>) -> tensor<1x16x4x4xi8>
  %y2f = nnvm.cast %y2 {to = "float32"} : (tensor<1x16x4x4xi8>) -> tensor<1x16x4x4xf32>

  %q3f = nnvm.cast %q {to = "float32"} : (tensor<1x16x8x8xi8>) -> tensor<1x16x8x8xf32>
  %w3 = nnvm.param "w3" : tensor<16x16x3x3xi8>
  %w3f = nnvm.cast %w3 {to = "float32"} : (tensor<16x16x3x3xi8>) -> tensor<16x16x3x3xf32>
  %c3 = nnvm.conv2d %q3f, %w3f {padding = [2, 2, 2, 2], dilation = [2, 2]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %acc3 = nnvm.cast %c3 {to = "int32"} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xi32>
  %r3 = nnvm.param "r3" : tensor<16x1x1xi32>
  %ar3 = nnvm.add %acc3, %r3 : (tensor<1x16x8x8xi32>, tensor<16x1x1xi32>) -> tensor<1x16x8x8xi32>
  %s3 = nnvm.param "s3" : tensor<16x1x1xi32>
  %sh3 = nnvm.bit_shift %ar3, %s3 {direction = "right"} : (tensor<1x16x8x8xi32>, tensor<16x1x1xi32>) -> tensor<1x16x8x8xi32>
  %sat3 = nnvm.clip %sh3 {min = -128.0, max = 127.0} : (tensor<1x16x8x8xi32>) -> tensor<1x16x8x8xi32>
  %y3 = nnvm.cast %sat3 {to = "int8"} : (tensor<1x16x8x8xi32>) -> tensor<1x16x8x8xi8>
  %y3f = nnvm.cast %y3 {to = "float32"} : (tensor<1x16x8x8xi8>) -> tensor<1x16x8x8xf32>

  %clippedd = nnvm.clip %xd {min = -127.0, max = 127.0} : (tensor<2x32xf32>) -> tensor<2x32xf32>
  %qd = nnvm.cast %clippedd {to = "int8"} : (tensor<2x32xf32>) -> tensor<2x32xi8>
  %qdf = nnvm.cast %qd {to = "float32"} : (tensor<2x32xi8>) -> tensor<2x32xf32>
  %wd = nnvm.param "wd" : tensor<10x32xi8>
  %wdf = nnvm.cast %wd {to = "float32"} : (tensor<10x32xi8>) -> tensor<10x32xf32>
  %d = nnvm.dense %qdf, %wdf : (tensor<2x32xf32>, tensor<10x32xf32>) -> tensor<2x10xf32>
  %accd = nnvm.cast %d {to = "int32"} : (tensor<2x10xf32>) -> tensor<2x10xi32>
  %bd = nnvm.param "bd" : tensor<10xi32>
  %abd = nnvm.add %accd, %bd : (tensor<2x10xi32>, tensor<10xi32>) -> tensor<2x10xi32>
  %rd = nnvm.param "rd" : tensor<10xi32>
  %ard = nnvm.add %abd, %rd : (tensor<2x10xi32>, tensor<10xi32>) -> tensor<2x10xi32>
  %sd = nnvm.param "sd" : tensor<10xi32>
  %shd = nnvm.bit_shift %ard, %sd {direction = "right"} : (tensor<2x10xi32>, tensor<10xi32>) -> tensor<2x10xi32>
  %satd = nnvm.clip %shd {min = -128.0, max = 127.0} : (tensor<2x10xi32>) -> tensor<2x10xi32>
  %yd = nnvm.cast %satd {to = "int8"} : (tensor<2x10xi32>) -> tensor<2x10xi8>
  %ydf = nnvm.cast %yd {to = "float32"} : (tensor<2x10xi8>) -> tensor<2x10xf32>

  %qef = nnvm.cast %qd {to = "float32"} : (tensor<2x32xi8>) -> tensor<2x32xf32>
  %wef = nnvm.cast %wd {to = "float32"} : (tensor<10x32xi8>) -> tensor<10x32xf32>
  %e = nnvm.dense %qef, %wef : (tensor<2x32xf32>, tensor<10x32xf32>) -> tensor<2x10xf32>
  %acce = nnvm.cast %e {to = "int32"} : (tensor<2x10xf32>) -> tensor<2x10xi32>
  %are = nnvm.add %acce, %rd : (tensor<2x10xi32>, tensor<10xi32>) -> tensor<2x10xi32>
  %she = nnvm.bit_shift %are, %sd {direction = "right"} : (tensor<2x10xi32>, tensor<10xi32>) -> tensor<2x10xi32>
  %sate = nnvm.clip %she {min = -128.0, max = 127.0} : (tensor<2x10xi32>) -> tensor<2x10xi32>
  %ye = nnvm.cast %sate {to = "int8"} : (tensor<2x10xi32>) -> tensor<2x10xi8>
  func.return %y2f, %ydf, %acce, %y3f : tensor<1x16x4x4xf32>, tensor<2x10xf32>, tensor<2x10xi32>, tensor<1x16x8x8xf32>
}
