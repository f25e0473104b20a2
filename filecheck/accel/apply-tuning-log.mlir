// accel-apply-tuning-log alone and before accel-lower-layers: a layer whose kernel the log
// holds a record for takes that record's schedule (te schedule IR, as an attribute the kernel
// text carries) and accel-lower-layers lowers it instead of the default: here one virtual
// thread and tiles of 2 output blocks x 6 rows x 12 columns. A layer without a record keeps
// the default; statistics count both.
// RUN: python %S/Inputs/write_accel_log.py %t.jsonl
// RUN: nnvm-opt %s -p 'accel-apply-tuning-log{log="%t.jsonl"}' --mlir-pass-statistics 2>&1 | filecheck %s
// RUN: nnvm-opt %s -p 'accel-apply-tuning-log{log="%t.jsonl"},accel-lower-layers' | filecheck %s --check-prefix=LOWER
// RUN: not nnvm-opt %s -p accel-apply-tuning-log 2>&1 | filecheck %s --check-prefix=NOLOG

// CHECK:      'accel-apply-tuning-log'
// CHECK-NEXT:   (S) 1 tuned
// CHECK-NEXT:   (S) 1 untuned
// CHECK-NEXT:   (S) 0 stale
// CHECK-LABEL: func.func @tuned
// CHECK:      accel.conv2d {{.*}}{schedule = "te.schedule {\0A  te.split \22out\22 ob by 2 -> (ob.o, ob.i)\0A  te.split \22out\22 y by 6
// CHECK-NOT:  te.double_buffer
// CHECK-SAME: strides = array<i64: 1, 1>
// CHECK-LABEL: func.func @untuned
// CHECK-NOT:  schedule =
// CHECK:      func.return

// LOWER-LABEL: func.func @tuned
// LOWER:       tiling = array<i64: 2, 3, 6, 12>, order = "weights", virtual_threads = 1 : i64
// LOWER-LABEL: func.func @untuned
// LOWER:       virtual_threads = 2 : i64

// NOLOG: error: accel-apply-tuning-log needs a log: accel-apply-tuning-log{log=PATH}

func.func @tuned(%x: tensor<1x48x12x12xi8>, %w: tensor<40x48x3x3xi8>, %r: tensor<40x1x1xi32>, %s: tensor<40x1x1xi32>) -> tensor<1x40x12x12xi8> {
  %y = accel.conv2d %x : tensor<1x48x12x12xi8>, %w : tensor<40x48x3x3xi8> rounding %r : tensor<40x1x1xi32> shift %s : tensor<40x1x1xi32> {strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} -> tensor<1x40x12x12xi8>
  func.return %y : tensor<1x40x12x12xi8>
}

func.func @untuned(%x: tensor<1x32x8x8xi8>, %w: tensor<16x32x1x1xi8>, %r: tensor<16x1x1xi32>, %s: tensor<16x1x1xi32>) -> tensor<1x16x8x8xi8> {
  %y = accel.conv2d %x : tensor<1x32x8x8xi8>, %w : tensor<16x32x1x1xi8> rounding %r : tensor<16x1x1xi32> shift %s : tensor<16x1x1xi32> {strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} -> tensor<1x16x8x8xi8>
  func.return %y : tensor<1x16x8x8xi8>
}
