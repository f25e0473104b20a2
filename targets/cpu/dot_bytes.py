"""The CPU's byte dot-product tensor intrinsic (`te.tensorize ... with "dot_u8i8"`):

    out[j] += sum_{q < 4} u8 x[q] * i8 w[j, q]          j < lanes (int32), w[j] 4 bytes apart

one x86 `vpdpbusd` per tile where the CPU has VNNI (AVX512-VNNI: 16 lanes; AVX-VNNI or
AVX512-VNNI with VL: 8 lanes); elsewhere the same int32 sums from shifts and multiplies (exact,
about 8x the instructions). x's 4 bytes are broadcast to every lane as one int32, w's
4 x lanes bytes are one vector load (the dense's packed weight layout, nn.pack_dot_weight).
The products of unsigned and signed bytes are at most 255 * 128 in magnitude, and vpdpbusd
adds the four of a lane without saturating: the result equals numpy's int32 sums."""

from __future__ import annotations

from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    Signedness,
    TensorType,
    VectorType,
    i8,
    i32,
)
from xdsl.ir import SSAValue

from nnvm.dialects.nnvm.nn import DOT_BYTES
from nnvm.dialects.te import builder as te
from nnvm.dialects.te.builder import Expr, TensorRef
from nnvm.dialects.te.intrinsics import TensorIntrinsic
from nnvm.lowering.te_to_loops.tensorize import TileOperand
from nnvm.lowering.te_to_loops.vectorize import VectorEmitter

NAME = "dot_u8i8"
u8 = IntegerType(8, Signedness.UNSIGNED)

VNNI_INTRINSICS = {
    (16, "avx512vnni"): "llvm.x86.avx512.vpdpbusd.512",
    (8, "avx512vnni+avx512vl"): "llvm.x86.avx512.vpdpbusd.256",
    (8, "avxvnni"): "llvm.x86.avxvnni.vpdpbusd.256",
}


def vnni_instruction(lanes: int, features: frozenset[str]) -> str | None:
    """The LLVM intrinsic of vpdpbusd over `lanes` int32 lanes the features allow, if any."""
    for (n, needs), name in VNNI_INTRINSICS.items():
        if n == lanes and all(f in features for f in needs.split("+")):
            return name
    return None


def _formula(j: Expr, q: Expr, x: TensorRef, w: TensorRef) -> Expr:
    return te.cast(x[q], i32) * te.cast(w[j, q], i32)


def dot_bytes_intrinsic(lanes: int, features: frozenset[str]) -> TensorIntrinsic:
    """The intrinsic for `lanes` int32 outputs; vpdpbusd where `features` have VNNI."""
    instruction = vnni_instruction(lanes, features)

    def emit(gen: VectorEmitter, out: TileOperand, operands: list[TileOperand]) -> None:
        x, w = operands
        acc_t = VectorType(i32, [lanes])
        acc = gen.add1(vector.LoadOp(out.buffer, out.indices, acc_t))
        quad = gen.add1(vector.LoadOp(x.buffer, x.indices, VectorType(u8, [DOT_BYTES])))
        word = gen.add1(vector.BitcastOp(quad, VectorType(i32, [1])))
        scalar = gen.add1(vector.ExtractOp(word, [0], i32))
        xs = gen.add1(vector.BroadcastOp(scalar, acc_t))
        wb = gen.add1(vector.LoadOp(w.buffer, w.indices, VectorType(i8, [DOT_BYTES * lanes])))
        ws = gen.add1(vector.BitcastOp(wb, acc_t))
        if instruction is not None:
            result = gen.add1(llvm.CallIntrinsicOp(instruction, [acc, xs, ws], [acc_t]))
        else:
            result = _dot_by_shifts(gen, acc, xs, ws, acc_t)
        gen.add(vector.StoreOp(result, out.buffer, out.indices))

    return TensorIntrinsic(
        NAME,
        (TensorType(u8, [DOT_BYTES]), TensorType(i8, [lanes, DOT_BYTES])),
        _formula,
        (lanes,),
        (DOT_BYTES,),
        emit,
    )


def _dot_by_shifts(
    gen: VectorEmitter, acc: SSAValue, xs: SSAValue, ws: SSAValue, t: VectorType
) -> SSAValue:
    """vpdpbusd in plain int32 lanes: byte q of each word zero-extended (x) or sign-extended
    (w) by shifting it to the top and back, multiplied and added."""

    def splat(value: int) -> SSAValue:
        attr = DenseIntOrFPElementsAttr.from_list(t, [value] * t.get_shape()[0])
        return gen.add1(arith.ConstantOp(attr))

    top = splat(24)
    for q in range(DOT_BYTES):
        up = splat(24 - 8 * q)
        xq = gen.add1(arith.ShRUIOp(gen.add1(arith.ShLIOp(xs, up)), top))
        wq = gen.add1(arith.ShRSIOp(gen.add1(arith.ShLIOp(ws, up)), top))
        acc = gen.add1(arith.AddiOp(acc, gen.add1(arith.MuliOp(xq, wq))))
    return acc
