// apply-tuning-log gives a kernel the logged schedule of its workload on the target named
// (here x86-64-v3, so the test does not depend on the host); a kernel without a record is
// left for apply-default-schedule. The log holds one record per kernel shape, and one for
// another target that must not apply.
// RUN: nnvm-opt %s -p 'apply-tuning-log{log="%S/Inputs/apply-tuning-log.jsonl" target="llvm -mcpu=x86-64-v3"}' | filecheck %s
// Without a log, or with one that is not there: exit 1 with the reason
// RUN: not nnvm-opt %s -p apply-tuning-log 2>&1 | filecheck %s --check-prefix=NOLOG
// RUN: not nnvm-opt %s -p 'apply-tuning-log{log="%t.missing.jsonl"}' 2>&1 | filecheck %s --check-prefix=MISSING
// NOLOG: error: apply-tuning-log needs a log: apply-tuning-log{log=PATH}
// MISSING: error: {{.*}}missing.jsonl: no such tuning log
// RUN: nnvm-opt %s -p 'apply-tuning-log{log="%S/Inputs/apply-tuning-log.jsonl" target="llvm -mcpu=x86-64-v3"}' --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// CHECK-LABEL: func.func @tuned
// CHECK:       te.schedule {
// CHECK-NEXT:    te.tile "mm" (i, j) by (2, 8) -> (i.o, j.o, i.i, j.i)
// CHECK-NEXT:    te.reorder "mm" (i.o, j.o, k, i.i, j.i)
// CHECK-NEXT:    te.vectorize "mm" j.i
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @untuned
// CHECK-NOT:   te.schedule
// CHECK:       func.return

// STATS: 'apply-tuning-log'
// STATS: (S) 1 tuned
// STATS: (S) 1 untuned
// STATS: (S) 0 stale

func.func @tuned(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %y = te.compute "mm" [i, j] sum [k : 8] template "matmul" = %x[i, k] * %w[k, j] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
func.func @untuned(%x: tensor<4x8xf32>, %w: tensor<8x32xf32>) -> tensor<4x32xf32> {
  %y = te.compute "mm" [i, j] sum [k : 8] template "matmul" = %x[i, k] * %w[k, j] : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  func.return %y : tensor<4x32xf32>
}
