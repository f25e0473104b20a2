// RUN: nnvm-opt %s -p infer-shapes,cse --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: nnvm-opt %s -p infer-shapes,cse --mlir-print-ir-before=cse -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: nnvm-opt %s --pass infer-shapes --pass cse --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: nnvm-opt %s --pass 'builtin.module(infer-shapes,func.func(cse))' | filecheck %s --check-prefix=NESTED

// AFTER: // -----// IR Dump After InferShapesPass (infer-shapes) //----- //
// AFTER: nnvm.exp %x : (tensor<4xf32>) -> tensor<4xf32>
// AFTER: // -----// IR Dump After CommonSubexpressionElimination (cse) //----- //
// AFTER-COUNT-1: nnvm.exp
// AFTER-NOT: nnvm.exp

// BEFORE-NOT: IR Dump Before InferShapesPass
// BEFORE: // -----// IR Dump Before CommonSubexpressionElimination (cse) //----- //
// BEFORE-COUNT-2: nnvm.exp

// TIMING: Execution time report
// TIMING: Total Execution Time:
// TIMING: Parser
// TIMING: InferShapesPass (infer-shapes)
// TIMING: CommonSubexpressionElimination (cse)
// TIMING: Total

// NESTED-COUNT-1: nnvm.exp
// NESTED-NOT: nnvm.exp
func.func @f(%x: tensor<4xf32>) -> tensor<*xf32> {
  %a = nnvm.exp %x : (tensor<4xf32>) -> tensor<*xf32>
  %b = nnvm.exp %x : (tensor<4xf32>) -> tensor<*xf32>
  %c = nnvm.add %a, %b : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  func.return %c : tensor<*xf32>
}
