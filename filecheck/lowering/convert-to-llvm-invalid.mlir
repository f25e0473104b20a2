// RUN: nnvm-opt %s --split-input-file --verify-diagnostics -p convert-to-llvm

// Input the CPU lowering cannot take is reported at the op, never as a traceback.

// expected-error @+1 {{@returns_memref: returning a memref is not supported by the kernel ABI; pass the output buffer as an argument instead}}
func.func @returns_memref(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}

// -----

func.func @dynamic(%a: memref<?xf32>, %i: index) -> f32 {
  // expected-error @+1 {{memref.load: dynamic shapes are not supported (memref<?xf32>)}}
  %x = memref.load %a[%i] : memref<?xf32>
  func.return %x : f32
}

// -----

func.func @two_d_vector(%a: memref<4x8xf32>) -> vector<2x8xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{vector.load: only 1-D vectors are supported, got vector<2x8xf32>}}
  %v = vector.load %a[%c0, %c0] : memref<4x8xf32>, vector<2x8xf32>
  func.return %v : vector<2x8xf32>
}

// -----

func.func @parallel_reduction(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{scf.parallel with reductions is not supported; reduce into a buffer instead}}
  %r = "scf.parallel"(%c0, %c8, %c1, %z) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> ({
  ^bb0(%i: index):
    %x = memref.load %a[%i] : memref<8xf32>
    "scf.reduce"(%x) ({
    ^bb1(%l: f32, %r: f32):
      %s = arith.addf %l, %r : f32
      "scf.reduce.return"(%s) : (f32) -> ()
    }) : (f32) -> ()
  }) : (index, index, index, f32) -> f32
  func.return %r : f32
}

// -----

func.func @unsupported_op(%a: i32, %b: i32) -> i32 {
  // expected-error @+1 {{convert-to-llvm could not lower: math.ipowi (unsupported op, type or layout)}}
  %p = math.ipowi %a, %b : i32
  func.return %p : i32
}

// -----

// expected-error @+1 {{convert-to-llvm: @still_tensors argument #0 is a tensor (tensor<2x3xf32>); lower to loops first}}
func.func @still_tensors(%a: tensor<2x3xf32>) {
  func.return
}
