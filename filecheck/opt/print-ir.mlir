// RUN: nnvm-opt %s -p infer-shapes,cse --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: nnvm-opt %s -p infer-shapes,cse --mlir-print-ir-before=cse -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: nnvm-opt %s --pass infer-shapes --pass cse --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: nnvm-opt %s --pass 'builtin.module(infer-shapes,func.func(cse))' | filecheck %s --check-prefix=NESTED
// nnvm-O<n> expands into its passes, as mlir-opt expands a pipeline: one dump (and one timing
// line) per inner pass, never one for the whole level.
// RUN: nnvm-opt %s -p infer-shapes,nnvm-O3 --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=O3
// RUN: nnvm-opt %s -p infer-shapes,nnvm-O1 --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=O1-TIMING

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

// O3: IR Dump After InferShapesPass (infer-shapes)
// O3-NOT: nnvm-O3
// O3: IR Dump After SimplifyInferencePass (simplify-inference)
// O3: IR Dump After FoldScaleAxisPass (fold-scale-axis)
// O3: IR Dump After AlterLayoutPass (alter-layout)
// O3: IR Dump After FoldConstantsPass (fold-constants)
// O3: IR Dump After FuseOpsPass (fuse)
// O3: IR Dump After CommonSubexpressionElimination (cse)
// O3: IR Dump After DeadCodeElimination (dce)
// O3: IR Dump After PlanMemoryPass (plan-memory)
// O3-NOT: IR Dump

// O1-TIMING: Parser
// O1-TIMING-NEXT: InferShapesPass (infer-shapes)
// O1-TIMING-NEXT: FuseOpsPass (fuse)
// O1-TIMING-NEXT: PlanMemoryPass (plan-memory)
// O1-TIMING-NEXT: Output

// NESTED-COUNT-1: nnvm.exp
// NESTED-NOT: nnvm.exp
func.func @f(%x: tensor<4xf32>) -> tensor<*xf32> {
  %a = nnvm.exp %x : (tensor<4xf32>) -> tensor<*xf32>
  %b = nnvm.exp %x : (tensor<4xf32>) -> tensor<*xf32>
  %c = nnvm.add %a, %b : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  func.return %c : tensor<*xf32>
}
