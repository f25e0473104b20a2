// RUN: nnvm-opt %s --split-input-file -p convert-math-to-llvm | filecheck %s
// RUN: nnvm-opt %s --split-input-file -p 'convert-math-to-llvm{approximate=false}' | filecheck %s --check-prefix=EXACT
// RUN: nnvm-opt %s --split-input-file -p 'convert-math-to-llvm{ldexp=true}' | filecheck %s --check-prefix=LDEXP

// f32 exp is an inline polynomial: clamp, round x*log2(e) with the 1.5*2^23 trick, Cody-Waite
// reduction, Horner with fmuladd, and 2^n built from exponent bits (no libm call, so it stays
// in vector registers).
// CHECK-LABEL: func.func @exp_vector
// CHECK:         llvm.intr.minnum(%x, {{%.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:         llvm.intr.maxnum
// CHECK:         llvm.call_intrinsic "llvm.fmuladd.v8f32"
// CHECK:         llvm.bitcast {{%.*}} : vector<8xf32> to vector<8xi32>
// CHECK:         llvm.shl
// CHECK:         llvm.bitcast {{%.*}} : vector<8xi32> to vector<8xf32>
// CHECK:         llvm.or
// CHECK-NEXT:    %e = llvm.bitcast {{%.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NEXT:    func.return %e
// CHECK-NOT:     llvm.intr.exp
// EXACT-LABEL: func.func @exp_vector
// EXACT-NEXT:    %e = llvm.intr.exp(%x) : (vector<8xf32>) -> vector<8xf32>
// With ldexp (a target with an instruction for it: AVX-512's vscalefps), 2^n is one llvm.ldexp
// of the polynomial by the rounded n instead of exponent bits shifted into place.
// LDEXP-LABEL: func.func @exp_vector
// LDEXP:         llvm.call_intrinsic "llvm.fmuladd.v8f32"
// LDEXP-NOT:     llvm.shl
// LDEXP:         llvm.call_intrinsic "llvm.ldexp.v8f32.v8i32"({{%.*}}, {{%.*}}) : (vector<8xf32>, vector<8xi32>) -> vector<8xf32>
// LDEXP-NOT:     llvm.shl
// LDEXP:         %e = llvm.bitcast {{%.*}} : vector<8xi32> to vector<8xf32>
// LDEXP-NEXT:    func.return %e
func.func @exp_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %e = math.exp %x : vector<8xf32>
  func.return %e : vector<8xf32>
}

// -----

// Scalars use llvm.select where vectors need an and/or blend.
// CHECK-LABEL: func.func @log_scalar
// CHECK:         llvm.icmp "ult" {{%.*}}, {{%.*}} : i32
// CHECK:         llvm.select {{%.*}}, {{%.*}}, {{%.*}} : i1, f32
// CHECK:         llvm.sitofp {{%.*}} : i32 to f32
// CHECK:         %l = llvm.select
// CHECK-NEXT:    func.return %l : f32
func.func @log_scalar(%x: f32) -> f32 {
  %l = math.log %x : f32
  func.return %l : f32
}

// -----

// f64 keeps LLVM's intrinsic or libm (there is no polynomial for it).
// CHECK-LABEL: func.func @f64
// CHECK-NEXT:    %e = llvm.intr.exp(%x) : (f64) -> f64
// CHECK-NEXT:    %t = llvm.call_intrinsic "llvm.tanh.f64"(%e) : (f64) -> f64
// CHECK-NEXT:    %r = llvm.call @erf(%t) : (f64) -> f64
// CHECK:       llvm.func @erf(f64) -> f64
func.func @f64(%x: f64) -> f64 {
  %e = math.exp %x : f64
  %t = math.tanh %e : f64
  %r = math.erf %t : f64
  func.return %r : f64
}

// -----

// Other math ops: intrinsics, and libm unrolled lane by lane for vectors.
// CHECK-LABEL: func.func @others
// CHECK-COUNT-4: llvm.mlir.constant({{[0-3]}} : i32) : i32
// CHECK-NEXT:    %s = llvm.intr.sqrt(%x) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %a = llvm.intr.fabs(%s) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %f = llvm.intr.fma(%a, %a, %x) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %r = llvm.call_intrinsic "llvm.round.v4f32"(%f) : (vector<4xf32>) -> vector<4xf32>
// CHECK:         llvm.call @log1pf({{%.*}}) : (f32) -> f32
// CHECK-COUNT-3: llvm.call @log1pf
// CHECK:       llvm.func @log1pf(f32) -> f32
func.func @others(%x: vector<4xf32>) -> vector<4xf32> {
  %s = math.sqrt %x : vector<4xf32>
  %a = math.absf %s : vector<4xf32>
  %f = math.fma %a, %a, %x : vector<4xf32>
  %r = math.round %f : vector<4xf32>
  %l = math.log1p %r : vector<4xf32>
  func.return %l : vector<4xf32>
}
