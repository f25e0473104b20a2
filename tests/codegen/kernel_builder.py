"""Build small func/affine/scf/vector kernels from Python (xDSL 0.74 cannot parse affine custom
syntax correctly, and the te lowering that will produce these programs does not exist yet)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from xdsl.context import Context
from xdsl.dialects import affine, arith, func, math, scf, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    VectorType,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
from nnvm.targets.llvm import build_shared_library, compile_jit, load_library

INDEX = IndexType()


def memref_of(shape: Sequence[int], elem: Attribute = f32) -> MemRefType:
    return MemRefType(elem, list(shape))


class KernelBuilder:
    """Appends ops to the innermost open block; loops are context managers yielding IVs."""

    def __init__(self, name: str, arg_types: Sequence[Attribute]):
        self.func = func.FuncOp(name, (list(arg_types), []))
        self.args = list(self.func.body.block.args)
        self._blocks: list[Block] = [self.func.body.block]
        self.module = ModuleOp([self.func])

    # -- plumbing ----------------------------------------------------------------------------
    def op(self, op: Operation) -> SSAValue:
        self._blocks[-1].add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def index(self, v: int) -> SSAValue:
        return self.op(arith.ConstantOp(IntegerAttr(v, INDEX)))

    def f32(self, v: float) -> SSAValue:
        return self.op(arith.ConstantOp(FloatAttr(v, f32)))

    def finish(self) -> ModuleOp:
        self.op(func.ReturnOp())
        self.module.verify()
        return self.module

    # -- loops -------------------------------------------------------------------------------
    @contextmanager
    def affine_for(
        self,
        lb: int | tuple[AffineMap, Sequence[SSAValue]],
        ub: int | tuple[AffineMap, Sequence[SSAValue]],
        step: int = 1,
    ) -> Iterator[SSAValue]:
        """affine.for with constant bounds, or (map, operands) bounds such as min(i+T, N)."""
        block = Block(arg_types=[INDEX])
        self._blocks.append(block)
        yield block.args[0]
        self._blocks.pop()
        block.add_op(affine.YieldOp.get())
        lb_ops, lb_map = ((), lb) if isinstance(lb, int) else (lb[1], AffineMapAttr(lb[0]))
        ub_ops, ub_map = ((), ub) if isinstance(ub, int) else (ub[1], AffineMapAttr(ub[0]))
        self.op(
            affine.ForOp.from_region(lb_ops, ub_ops, [], [], lb_map, ub_map, Region(block), step)
        )

    @contextmanager
    def affine_for_iter(
        self, lb: int, ub: int, init: SSAValue, step: int = 1
    ) -> Iterator[tuple[SSAValue, SSAValue, list[SSAValue]]]:
        """affine.for carrying one value; append the next value to the yielded list."""
        block = Block(arg_types=[INDEX, init.type])
        self._blocks.append(block)
        out: list[SSAValue] = []
        yield block.args[0], block.args[1], out
        self._blocks.pop()
        block.add_op(affine.YieldOp.get(out[0]))
        loop = affine.ForOp.from_region([], [], [init], [init.type], lb, ub, Region(block), step)
        self.op(loop)
        out[:] = [loop.results[0]]

    @contextmanager
    def parallel(self, bounds: Sequence[tuple[int, int]], steps: Sequence[int] | None = None):
        """scf.parallel over constant bounds (the construct that runs on the thread pool)."""
        steps = steps or [1] * len(bounds)
        lbs = [self.index(lo) for lo, _ in bounds]
        ubs = [self.index(hi) for _, hi in bounds]
        sts = [self.index(s) for s in steps]
        block = Block(arg_types=[INDEX] * len(bounds))
        self._blocks.append(block)
        yield list(block.args)
        self._blocks.pop()
        block.add_op(scf.ReduceOp())
        self.op(scf.ParallelOp(lbs, ubs, sts, Region(block)))

    @contextmanager
    def affine_parallel(
        self, bounds: Sequence[tuple[int, int]], steps: Sequence[int] | None = None
    ):
        """affine.parallel over constant bounds (lowered to scf.parallel)."""
        steps = steps or [1] * len(bounds)
        n = len(bounds)
        block = Block(arg_types=[INDEX] * n)
        self._blocks.append(block)
        yield list(block.args)
        self._blocks.pop()
        block.add_op(affine.YieldOp.get())
        op = affine.ParallelOp.create(
            operands=[],
            result_types=[],
            properties={
                "reductions": ArrayAttr([]),
                "lowerBoundsMap": AffineMapAttr(
                    AffineMap(0, 0, tuple(AffineExpr.constant(lo) for lo, _ in bounds))
                ),
                "lowerBoundsGroups": DenseIntOrFPElementsAttr.from_list(
                    TensorType(i32, [n]),
                    [1] * n,
                ),
                "upperBoundsMap": AffineMapAttr(
                    AffineMap(0, 0, tuple(AffineExpr.constant(hi) for _, hi in bounds))
                ),
                "upperBoundsGroups": DenseIntOrFPElementsAttr.from_list(
                    TensorType(i32, [n]),
                    [1] * n,
                ),
                "steps": ArrayAttr([IntegerAttr(s, 64) for s in steps]),
            },
            regions=[Region(block)],
        )
        self.op(op)

    # -- memory ------------------------------------------------------------------------------
    def load(self, ref: SSAValue, idx: Sequence[SSAValue]) -> SSAValue:
        return self.op(affine.LoadOp(ref, list(idx)))

    def store(self, value: SSAValue, ref: SSAValue, idx: Sequence[SSAValue]) -> None:
        self.op(affine.StoreOp(value, ref, list(idx)))

    def load_map(self, ref: SSAValue, m: AffineMap, operands: Sequence[SSAValue]) -> SSAValue:
        return self.op(affine.LoadOp(ref, list(operands), AffineMapAttr(m)))

    def vload(self, ref: SSAValue, idx: Sequence[SSAValue], n: int) -> SSAValue:
        t = ref.type
        assert isinstance(t, MemRefType)
        return self.op(vector.LoadOp(ref, list(idx), VectorType(t.element_type, [n])))

    def vstore(self, value: SSAValue, ref: SSAValue, idx: Sequence[SSAValue]) -> None:
        self.op(vector.StoreOp.build(operands=[value, ref, list(idx)]))

    def transfer_read(
        self, ref: SSAValue, idx: Sequence[SSAValue], n: int, in_bounds: bool = False
    ) -> SSAValue:
        """1-D read along the last dim, masked where it runs past the end."""
        t = ref.type
        assert isinstance(t, MemRefType)
        rank = len(t.get_shape())
        pad = self.f32(0.0)
        return self.op(
            vector.TransferReadOp(
                ref,
                list(idx),
                pad,
                VectorType(t.element_type, [n]),
                ArrayAttr([BoolAttr.from_bool(in_bounds)]),
                AffineMapAttr(AffineMap(rank, 0, (AffineExpr.dimension(rank - 1),))),
            )
        )

    def transfer_write(
        self, value: SSAValue, ref: SSAValue, idx: Sequence[SSAValue], in_bounds: bool = False
    ) -> None:
        t = ref.type
        assert isinstance(t, MemRefType)
        rank = len(t.get_shape())
        self.op(
            vector.TransferWriteOp(
                value,
                ref,
                list(idx),
                ArrayAttr([BoolAttr.from_bool(in_bounds)]),
                permutation_map=AffineMapAttr(
                    AffineMap(rank, 0, (AffineExpr.dimension(rank - 1),))
                ),
            )
        )

    # -- arithmetic --------------------------------------------------------------------------
    def addf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.AddfOp(a, b))

    def mulf(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.MulfOp(a, b))

    def unary(self, name: str, x: SSAValue) -> SSAValue:
        cls = {"exp": math.ExpOp, "log": math.LogOp, "tanh": math.TanhOp, "erf": math.ErfOp,
               "sqrt": math.SqrtOp, "abs": math.AbsFOp}[name]  # fmt: skip
        return self.op(cls(x))

    def broadcast(self, x: SSAValue, n: int) -> SSAValue:
        return self.op(vector.BroadcastOp(x, VectorType(x.type, [n])))

    def vfma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.op(vector.FMAOp(a, b, c))


def lower(module: ModuleOp, ldexp: bool = False) -> ModuleOp:
    """Run the whole CPU lowering in place and verify (`ldexp`: as for an AVX-512 target)."""
    ConvertToLLVM(ldexp=ldexp).apply(Context(), module)
    module.verify()
    return module


def compile_both(module: ModuleOp, tmp_path, name: str = "k"):
    """(JIT module, loaded .so) for a lowered module."""
    jit = compile_jit(module)
    lib = load_library(build_shared_library(module, tmp_path / f"lib{name}.so"))
    return jit, lib


def rand(*shape: int, seed: int = 0, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, size=shape).astype(np.float32)
