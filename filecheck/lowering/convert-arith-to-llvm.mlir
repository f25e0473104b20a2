// RUN: nnvm-opt %s -p convert-arith-to-llvm | filecheck %s

// Index becomes i64; values cross to unconverted ops through unrealized casts. Integer
// constants are made once per block, at its start, in the order they are first needed.
// CHECK-LABEL: func.func @int_ops
func.func @int_ops(%a: i32, %b: i32, %i: index) -> (i32, index) {
  // CHECK-NEXT: %c4 = llvm.mlir.constant(4) : i64
  // CHECK-NEXT: [[ZERO:%.*]] = llvm.mlir.constant(0) : i64
  // CHECK-NEXT: [[ONE:%.*]] = llvm.mlir.constant(1) : i64
  // CHECK-NEXT: %s = llvm.add %a, %b : i32
  // CHECK-NEXT: %p = llvm.mul %s, %b overflow<nsw> : i32
  // CHECK-NEXT: %d = llvm.sdiv %p, %b : i32
  // CHECK-NEXT: %r = llvm.urem %d, %b : i32
  // CHECK-NEXT: %x = llvm.xor %r, %a : i32
  // CHECK-NEXT: %sh = llvm.ashr %x, %b : i32
  // CHECK-NEXT: [[LT:%.*]] = llvm.icmp "slt" %sh, %a : i32
  // CHECK-NEXT: %mn = llvm.select [[LT]], %sh, %a : i1, i32
  %s = arith.addi %a, %b : i32
  %p = arith.muli %s, %b overflow<nsw> : i32
  %d = arith.divsi %p, %b : i32
  %r = arith.remui %d, %b : i32
  %x = arith.xori %r, %a : i32
  %sh = arith.shrsi %x, %b : i32
  %mn = arith.minsi %sh, %a : i32
  // floordivsi: truncating quotient, minus one where remainder and divisor differ in sign
  // CHECK:      [[I:%.*]] = builtin.unrealized_conversion_cast %i : index to i64
  // CHECK-NEXT: [[QT:%.*]] = llvm.sdiv [[I]], %c4 : i64
  // CHECK-NEXT: [[R:%.*]] = llvm.srem [[I]], %c4 : i64
  // CHECK-NEXT: [[NZ:%.*]] = llvm.icmp "ne" [[R]], [[ZERO]] : i64
  // CHECK:      [[QM:%.*]] = llvm.sub [[QT]], [[ONE]] : i64
  // CHECK-NEXT: %q = llvm.select {{%.*}}, [[QM]], [[QT]] : i1, i64
  // CHECK-NEXT: [[Q:%.*]] = builtin.unrealized_conversion_cast %q : i64 to index
  // CHECK-NEXT: func.return %mn, [[Q]] : i32, index
  %c4 = arith.constant 4 : index
  %q = arith.floordivsi %i, %c4 : index
  func.return %mn, %q : i32, index
}

// CHECK-LABEL: func.func @float_ops
func.func @float_ops(%x: f32, %y: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, i1) {
  // CHECK:      %s = llvm.fadd %x, %y {fastmathFlags = #llvm.fastmath<contract>} : f32
  // CHECK-NEXT: %n = llvm.fneg %s : f32
  // CHECK-NEXT: %m = llvm.intr.maxnum(%n, %y) : (f32, f32) -> f32
  // CHECK-NEXT: %mm = llvm.call_intrinsic "llvm.maximum.f32"(%m, %x) : (f32, f32) -> f32
  // CHECK-NEXT: %c = llvm.fcmp "olt" %mm, %x : f32
  // CHECK-NEXT: %w = llvm.fmul %v, %v : vector<8xf32>
  %s = arith.addf %x, %y fastmath<contract> : f32
  %n = arith.negf %s : f32
  %m = arith.maxnumf %n, %y : f32
  %mm = arith.maximumf %m, %x : f32
  %c = arith.cmpf olt, %mm, %x : f32
  %w = arith.mulf %v, %v : vector<8xf32>
  func.return %mm, %w, %c : f32, vector<8xf32>, i1
}

// Casts: float->int through the saturating intrinsics (no llvm.fptosi in xDSL), unsigned
// int->float through a zero-extension.
// CHECK-LABEL: func.func @casts
func.func @casts(%f: f32, %i: i32, %j: index) -> (i32, f32, f64, i64, i16) {
  // CHECK:      %a = llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%f) : (f32) -> i32
  // CHECK-NEXT: [[Z:%.*]] = llvm.zext %i : i32 to i64
  // CHECK-NEXT: %b = llvm.sitofp [[Z]] : i64 to f32
  // CHECK-NEXT: %c = llvm.fpext %b : f32 to f64
  // CHECK-NEXT: %d = llvm.sext %i : i32 to i64
  // CHECK-NEXT: [[J:%.*]] = builtin.unrealized_conversion_cast %j : index to i64
  // CHECK-NEXT: %e = llvm.trunc [[J]] : i64 to i16
  %a = arith.fptosi %f : f32 to i32
  %b = arith.uitofp %i : i32 to f32
  %c = arith.extf %b : f32 to f64
  %d = arith.extsi %i : i32 to i64
  %e = arith.index_cast %j : index to i16
  func.return %a, %b, %c, %d, %e : i32, f32, f64, i64, i16
}

// CHECK-LABEL: func.func @constants
func.func @constants() -> (index, f32, vector<4xf32>, i1) {
  // CHECK-NEXT: %a = llvm.mlir.constant(7) : i64
  // CHECK-NEXT: %d = llvm.mlir.constant(true) : i1
  // CHECK-NEXT: {{%.*}} = builtin.unrealized_conversion_cast %a : i64 to index
  // CHECK-NEXT: %b = llvm.mlir.constant(2.500000e+00 : f32) : f32
  // CHECK-NEXT: %c = llvm.mlir.constant(dense<1.000000e+00> : vector<4xf32>) : vector<4xf32>
  %a = arith.constant 7 : index
  %b = arith.constant 2.5 : f32
  %c = arith.constant dense<1.0> : vector<4xf32>
  %d = arith.constant true
  func.return %a, %b, %c, %d : index, f32, vector<4xf32>, i1
}
