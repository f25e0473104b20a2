// RUN: nnvm-opt %s -p convert-scf-to-cf,convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts | filecheck %s

// A loop after convert-scf-to-cf: its index block arguments become i64 and the branches
// llvm.br / llvm.cond_br.
// CHECK-LABEL: llvm.func @count(%n: i64) -> i64 {
// CHECK-NEXT:    %c0 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %c1 = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%c0, %c0 : i64, i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64, %[[ACC:.*]]: i64):
// CHECK-NEXT:    %[[C:.*]] = llvm.icmp "slt" %[[I]], %n : i64
// CHECK-NEXT:    llvm.cond_br %[[C]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    %[[NEXT_ACC:.*]] = llvm.add %[[ACC]], %[[I]] : i64
// CHECK-NEXT:    %[[NEXT_I:.*]] = llvm.add %[[I]], %c1 : i64
// CHECK-NEXT:    llvm.br ^[[HEAD]](%[[NEXT_I]], %[[NEXT_ACC]] : i64, i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return %[[ACC]] : i64
func.func @count(%n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %s = arith.addi %acc, %i : index
    scf.yield %s : index
  }
  func.return %r : index
}
