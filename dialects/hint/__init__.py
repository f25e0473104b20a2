"""The `hint` dialect: what a loop nest may tell the machine without changing any result.

`hint.prefetch %A[%i, %j] {locality = 3}` asks the CPU to bring the cache line holding element
[%i, %j] of memref %A closer (MLIR's `memref.prefetch`, which xDSL's memref dialect lacks; read
prefetches only). `locality` is LLVM's 0 (no temporal locality) to 3 (keep in all levels). An
address outside the memref is allowed: a prefetch never faults. convert-memref-to-llvm lowers
it to `llvm.prefetch`."""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    name = "hint.prefetch"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    locality = prop_def(IntegerAttr.constr(type=i64))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$memref `[` $indices `]` attr-dict `:` type($memref)"

    def __init__(self, memref: SSAValue, indices: list[SSAValue], locality: int = 3):
        super().__init__(
            operands=[memref, indices], properties={"locality": IntegerAttr(locality, i64)}
        )

    def verify_(self) -> None:
        t = self.memref.type
        assert isinstance(t, MemRefType)
        if len(self.indices) != len(t.get_shape()):
            raise VerifyException(
                f"hint.prefetch: {len(self.indices)} indices for a rank-{len(t.get_shape())} memref"
            )
        if not 0 <= self.locality.value.data <= 3:
            raise VerifyException("hint.prefetch: locality is 0 to 3")


HINT = Dialect("hint", [PrefetchOp], [])
