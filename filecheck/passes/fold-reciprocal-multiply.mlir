// RUN: nnvm-opt %s -p fold-reciprocal-multiply | filecheck %s

// A SiLU epilogue as te-to-loops writes it: x * (1 / (1 + exp(-x))), the 1 a broadcast
// scalar. The multiply by the reciprocal becomes one division; the reciprocal is gone.
// CHECK-LABEL: func.func @silu
// CHECK:         %[[D:[0-9a-z_]+]] = arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NEXT:    %[[Q:[0-9a-z_]+]] = arith.divf %x, %[[D]] : vector<16xf32>
// CHECK-NEXT:    func.return %[[Q]] : vector<16xf32>
func.func @silu(%x: vector<16xf32>) -> vector<16xf32> {
  %one = arith.constant 1.000000e+00 : f32
  %n = arith.negf %x : vector<16xf32>
  %e = math.exp %n : vector<16xf32>
  %ones = vector.broadcast %one : f32 to vector<16xf32>
  %d = arith.addf %ones, %e : vector<16xf32>
  %ones2 = vector.broadcast %one : f32 to vector<16xf32>
  %r = arith.divf %ones2, %d : vector<16xf32>
  %y = arith.mulf %x, %r : vector<16xf32>
  func.return %y : vector<16xf32>
}

// Scalars, the reciprocal on the left, a splat constant 1 and the multiply's fast-math flags.
// CHECK-LABEL: func.func @scalar_left
// CHECK-NEXT:    %[[Q:[0-9a-z_]+]] = arith.divf %a, %d fastmath<contract> : f32
// CHECK-NEXT:    func.return %[[Q]] : f32
// CHECK-LABEL: func.func @splat
// CHECK-NEXT:    %{{.*}} = arith.divf %a, %d : vector<8xf32>
func.func @scalar_left(%a: f32, %d: f32) -> f32 {
  %one = arith.constant 1.000000e+00 : f32
  %r = arith.divf %one, %d : f32
  %y = arith.mulf %r, %a fastmath<contract> : f32
  func.return %y : f32
}
func.func @splat(%a: vector<8xf32>, %d: vector<8xf32>) -> vector<8xf32> {
  %ones = arith.constant dense<1.000000e+00> : vector<8xf32>
  %r = arith.divf %ones, %d : vector<8xf32>
  %y = arith.mulf %a, %r : vector<8xf32>
  func.return %y : vector<8xf32>
}

// Left alone: a reciprocal with a second use (the division would run twice), one computed
// outside the multiply's loop (a softmax's 1 / sum, hoisted: a division per element inside
// the loop instead of one), and a numerator that is not 1.
// CHECK-LABEL: func.func @two_uses
// CHECK:         %[[R:[0-9a-z_]+]] = arith.divf %{{.*}}, %d : f32
// CHECK-NEXT:    %{{.*}} = arith.mulf %a, %[[R]] : f32
// CHECK-NEXT:    %{{.*}} = arith.mulf %b, %[[R]] : f32
// CHECK-LABEL: func.func @hoisted
// CHECK:         %[[R:[0-9a-z_]+]] = arith.divf %{{.*}}, %s : f32
// CHECK:         scf.for
// CHECK:           arith.mulf %{{.*}}, %[[R]] : f32
// CHECK-LABEL: func.func @not_one
// CHECK:         %[[R:[0-9a-z_]+]] = arith.divf %{{.*}}, %d : f32
// CHECK-NEXT:    arith.mulf %a, %[[R]] : f32
func.func @two_uses(%a: f32, %b: f32, %d: f32) -> (f32, f32) {
  %one = arith.constant 1.000000e+00 : f32
  %r = arith.divf %one, %d : f32
  %y = arith.mulf %a, %r : f32
  %z = arith.mulf %b, %r : f32
  func.return %y, %z : f32, f32
}
func.func @hoisted(%m: memref<64xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.000000e+00 : f32
  %r = arith.divf %one, %s : f32
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %m[%i] : memref<64xf32>
    %y = arith.mulf %v, %r : f32
    memref.store %y, %m[%i] : memref<64xf32>
  }
  func.return
}
func.func @not_one(%a: f32, %d: f32) -> f32 {
  %two = arith.constant 2.000000e+00 : f32
  %r = arith.divf %two, %d : f32
  %y = arith.mulf %a, %r : f32
  func.return %y : f32
}
