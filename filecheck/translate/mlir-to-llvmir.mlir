// RUN: nnvm-translate --mlir-to-llvmir %s | filecheck %s
// RUN: not nnvm-translate --mlir-to-llvmir %S/../opt/Inputs/conv-param.mlir 2>&1 | filecheck %s --check-prefix=UNLOWERED

// llvm-dialect IR becomes LLVM IR text.
// CHECK: define void @"scale"(ptr %"x", ptr %"y")
// CHECK: fmul float
llvm.func @scale(%x: !llvm.ptr, %y: !llvm.ptr) {
  %c = llvm.mlir.constant(2.0 : f32) : f32
  %v = llvm.load %x : !llvm.ptr -> f32
  %m = llvm.fmul %v, %c : f32
  llvm.store %m, %y : f32, !llvm.ptr
  llvm.return
}

// IR that is not lowered to the llvm dialect yet is refused, naming what is left.
// UNLOWERED: error:
// UNLOWERED-SAME: nnvm.
