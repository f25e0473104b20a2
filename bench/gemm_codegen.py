"""A packed, blocked f32 GEMM with a 6x16 register-blocked micro-kernel, written in the vector
dialect, compiled by nnvm's own CPU path (convert-to-llvm -> llvmlite), timed against numpy.

    OPENBLAS_NUM_THREADS=1 python bench/gemm_codegen.py [--size 256 512 1024 2048] [--rounds 7]
    OPENBLAS_NUM_THREADS=1 python bench/gemm_codegen.py --through-build --size 1024

Structure (BLIS): for each KC-deep slab of K, B is packed into 16-column panels
(Bp[panel][k][16]); for each MC-row block of A, A is packed into 6-row panels (Ap[panel][k][6],
zero rows past M); then every 6x16 tile of C is computed by the micro-kernel: twelve
vector<8xf32> accumulators carried through the k loop, each step two vector loads of Bp, six
broadcasts of Ap and twelve `vector.fma` (which become `llvm.fma.v8f32` -> vfmadd231ps).
Rows past M (1024 = 170*6 + 4) are computed on zero padding and not stored.

The program is built from Python (xDSL 0.74 cannot parse affine custom syntax; and the te
lowering that will produce it does not exist yet). Prints GFLOP/s of ours and numpy's sgemm,
measured in interleaved rounds (median), one thread each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from xdsl.context import Context  # noqa: E402
from xdsl.dialects import arith, func, memref, scf, vector  # noqa: E402
from xdsl.dialects.builtin import (  # noqa: E402
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    VectorType,
    f32,
)
from xdsl.ir import Block, Operation, Region, SSAValue  # noqa: E402

INDEX = IndexType()


class Builder:
    """Appends ops to the innermost open block; scf loops are context managers."""

    def __init__(self, block: Block):
        self.blocks = [block]

    def op(self, op: Operation) -> SSAValue:
        self.blocks[-1].add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def c(self, v: int) -> SSAValue:
        return self.op(arith.ConstantOp(IntegerAttr(v, INDEX)))

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self.op(arith.AddiOp(a, self.c(b) if isinstance(b, int) else b))

    def mul(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self.op(arith.MuliOp(a, self.c(b) if isinstance(b, int) else b))

    def min(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        return self.op(arith.MinSIOp(a, self.c(b) if isinstance(b, int) else b))

    @contextmanager
    def loop(
        self, lb: SSAValue | int, ub: SSAValue | int, step: int, carried: Sequence[SSAValue] = ()
    ) -> Iterator[tuple[SSAValue, list[SSAValue], list[SSAValue]]]:
        """scf.for; append the next values of `carried` to the third yielded list."""
        lb_v = self.c(lb) if isinstance(lb, int) else lb
        ub_v = self.c(ub) if isinstance(ub, int) else ub
        st_v = self.c(step)
        block = Block(arg_types=[INDEX, *(v.type for v in carried)])
        self.blocks.append(block)
        nxt: list[SSAValue] = []
        yield block.args[0], list(block.args[1:]), nxt
        self.blocks.pop()
        block.add_op(scf.YieldOp(*nxt))
        loop = scf.ForOp(lb_v, ub_v, st_v, list(carried), Region(block))
        self.op(loop)
        nxt[:] = list(loop.results)

    @contextmanager
    def when(self, cond: SSAValue) -> Iterator[None]:
        block = Block()
        self.blocks.append(block)
        yield
        self.blocks.pop()
        block.add_op(scf.YieldOp())
        self.op(scf.IfOp(cond, [], Region(block)))


def build_gemm(
    m: int,
    n: int,
    k: int,
    mc: int = 48,
    kc: int = 512,
    nc: int = 1024,
    mr: int = 6,
    vw: int = 8,
) -> ModuleOp:
    """func.func @sgemm(%A: memref<MxK>, %B: memref<KxN>, %C: memref<MxN>): C = A @ B, with an
    mr x (2 vw) micro-tile of vector<vw x f32> accumulators (default 6 x 16, <8 x float>)."""
    nr = 2 * vw
    if n % nr or nc % nr or mc % mr:
        raise ValueError(f"n and nc must be multiples of {nr}, mc a multiple of {mr}")
    vt = VectorType(f32, [vw])
    nc, kc = min(nc, n), min(kc, k)
    fn = func.FuncOp(
        "sgemm",
        ([MemRefType(f32, [m, k]), MemRefType(f32, [k, n]), MemRefType(f32, [m, n])], []),
    )
    a, b, c = fn.body.block.args
    bb = Builder(fn.body.block)
    ap = bb.op(memref.AllocOp.get(f32, 64, [mc * kc]))
    bp = bb.op(memref.AllocOp.get(f32, 64, [nc * kc]))
    zero_f = bb.op(arith.ConstantOp(FloatAttr(0.0, f32)))
    zero_v = bb.op(vector.BroadcastOp(zero_f, vt))

    # C = 0 (the micro-kernel accumulates into C across K slabs)
    with bb.loop(0, m, 1) as (i, _, _):
        with bb.loop(0, n, vw) as (j, _, _):
            bb.op(vector.StoreOp.build(operands=[zero_v, c, [i, j]]))

    with bb.loop(0, n, nc) as (jc, _, _):
        with bb.loop(0, k, kc) as (pc, _, _):
            kc_eff = bb.min(bb.op(arith.SubiOp(bb.c(k), pc)), kc)
            nc_eff = bb.min(bb.op(arith.SubiOp(bb.c(n), jc)), nc)
            # pack B[pc:pc+kc, jc:jc+nc] into nr-column panels: Bp[jp][kk][0:nr]
            with bb.loop(0, nc_eff, nr) as (jo, _, _):
                col = bb.add(jc, jo)
                panel = bb.mul(jo, kc)  # (jo / nr) * kc * nr
                with bb.loop(0, kc_eff, 1) as (kk, _, _):
                    row = bb.add(pc, kk)
                    dst = bb.add(panel, bb.mul(kk, nr))
                    for half in (0, vw):
                        v = bb.op(vector.LoadOp(b, [row, bb.add(col, half)], vt))
                        bb.op(vector.StoreOp.build(operands=[v, bp, [bb.add(dst, half)]]))
            with bb.loop(0, m, mc) as (ic, _, _):
                # pack A[ic:ic+mc, pc:pc+kc] into mr-row panels: Ap[ip][kk][0:mr], 0 past M
                with bb.loop(0, mc // mr, 1) as (ip, _, _):
                    panel = bb.mul(ip, kc * mr)
                    rows = []
                    for r in range(mr):
                        row = bb.add(ic, bb.add(bb.mul(ip, mr), r))
                        valid = bb.op(arith.CmpiOp(row, bb.c(m), "slt"))
                        rows.append((bb.min(row, m - 1), valid))
                    with bb.loop(0, kc_eff, 1) as (kk, _, _):
                        kcol = bb.add(pc, kk)
                        dst = bb.add(panel, bb.mul(kk, mr))
                        for r, (row, valid) in enumerate(rows):
                            x = bb.op(memref.LoadOp.get(a, [row, kcol]))
                            x = bb.op(arith.SelectOp(valid, x, zero_f))
                            bb.op(memref.StoreOp.get(x, ap, [bb.add(dst, r)]))
                # the mr x nr tiles of this block
                with bb.loop(0, nc_eff, nr) as (jr, _, _):
                    with bb.loop(0, mc, mr) as (ir, _, _):
                        _micro_kernel(bb, ap, bp, c, m, kc, kc_eff, ic, jc, ir, jr, mr, vt)
    bb.op(memref.DeallocOp.get(ap))
    bb.op(memref.DeallocOp.get(bp))
    bb.op(func.ReturnOp())
    module = ModuleOp([fn])
    module.verify()
    return module


def _micro_kernel(bb: Builder, ap, bp, c, m, kc, kc_eff, ic, jc, ir, jr, mr, vt) -> None:
    """C[ic+ir : +mr, jc+jr : +2vw] += Ap panel (mr x kc) @ Bp panel (kc x 2vw)."""
    vw = vt.get_shape()[0]
    nr = 2 * vw
    row0 = bb.add(ic, ir)
    col = bb.add(jc, jr)
    col8 = bb.add(col, vw)
    a_base = bb.mul(ir, kc)  # (ir / mr) * kc * mr
    b_base = bb.mul(jr, kc)  # (jr / nr) * kc * nr
    rows = []
    acc0 = []
    for r in range(mr):
        row = bb.add(row0, r)
        safe = bb.min(row, m - 1)  # rows past M read a valid row and are not stored
        rows.append(row)
        acc0.append(bb.op(vector.LoadOp(c, [safe, col], vt)))
        acc0.append(bb.op(vector.LoadOp(c, [safe, col8], vt)))
    with bb.loop(0, kc_eff, 1, acc0) as (kk, acc, nxt):
        bo = bb.add(b_base, bb.mul(kk, nr))
        b0 = bb.op(vector.LoadOp(bp, [bo], vt))
        b1 = bb.op(vector.LoadOp(bp, [bb.add(bo, vw)], vt))
        ao = bb.add(a_base, bb.mul(kk, mr))
        for r in range(mr):
            x = bb.op(memref.LoadOp.get(ap, [bb.add(ao, r)]))
            xv = bb.op(vector.BroadcastOp(x, vt))
            nxt.append(bb.op(vector.FMAOp(xv, b0, acc[2 * r])))
            nxt.append(bb.op(vector.FMAOp(xv, b1, acc[2 * r + 1])))
    for r in range(mr):
        with bb.when(bb.op(arith.CmpiOp(rows[r], bb.c(m), "slt"))):
            bb.op(vector.StoreOp.build(operands=[nxt[2 * r], c, [rows[r], col]]))
            bb.op(vector.StoreOp.build(operands=[nxt[2 * r + 1], c, [rows[r], col8]]))


def compile_gemm(size: int, target: str | None = None, **blocking: int):
    """(JIT module, kernel) for a size^3 GEMM."""
    from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
    from nnvm.targets.llvm import compile_jit

    module = build_gemm(size, size, size, **blocking)
    ConvertToLLVM().apply(Context(), module)
    jit = compile_jit(module, target)
    return jit, jit["sgemm"]


def compile_through_build(size: int, a: np.ndarray, b: np.ndarray):
    """(run, output) for a size^3 MatMul graph compiled by `nnvm.compiler.build`: the default
    schedule path (matmul template) rather than the hand-built kernel above."""
    import onnx
    from onnx import TensorProto, helper

    import nnvm
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.runtime import graph_runtime

    shape = [size, size]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "gemm",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape) for x in ("a", "b")],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    nnvm.set_num_threads(1)
    module, params = from_onnx(model)
    g, lib, params = build(module, target="llvm", params=params, opt_level=3)
    rt = graph_runtime.create(g, lib, nnvm.cpu(0))
    rt.set_input(**params)
    rt.set_input(a=a, b=b)
    return rt.run, lambda: rt.get_output(0)


def _best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--size", type=int, nargs="+", default=[1024], help="cube sizes, e.g. 256 512 1024 2048"
    )
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeats", type=int, default=3, help="best-of within a round")
    p.add_argument("--mc", type=int, default=48)
    p.add_argument("--kc", type=int, default=512)
    p.add_argument("--mr", type=int, default=6, help="micro-tile rows")
    p.add_argument("--vw", type=int, default=8, help="vector width: 8 (<8 x float>) or 16")
    p.add_argument("--target", default=None, help='e.g. "llvm -mcpu=x86-64-v3"')
    p.add_argument(
        "--through-build",
        action="store_true",
        help="time a MatMul graph compiled by build() (the default schedule), not the hand-built kernel",
    )
    args = p.parse_args(argv)
    status = 0
    for n in args.size:
        status |= run_size(n, args)
    return status


def run_size(n: int, args: argparse.Namespace) -> int:
    """Compile, check and time one n x n x n product; 1 when the result is wrong."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    t0 = time.perf_counter()
    if args.through_build:
        run, output = compile_through_build(n, a, b)
        cpu = "host"

        def sgemm(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
            run()

        kernel = "build() default schedule"
    else:
        mc = args.mc - args.mc % args.mr
        jit, sgemm = compile_gemm(n, args.target, mc=mc, kc=args.kc, mr=args.mr, vw=args.vw)
        cpu = jit.target.cpu
        kernel = f"{args.mr}x{2 * args.vw} <{args.vw} x float> micro-kernel"
    compile_s = time.perf_counter() - t0
    sgemm(a, b, c)
    if args.through_build:
        c = output()
    want = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.abs(c - want).max())
    if not np.allclose(c, want, rtol=1e-4, atol=1e-3 * np.sqrt(n)):
        print(f"WRONG RESULT: max abs error {err}", file=sys.stderr)
        return 1
    flops = 2.0 * n**3
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(flops / _best_of(lambda: sgemm(a, b, c), args.repeats) / 1e9)
        theirs.append(flops / _best_of(lambda: np.matmul(a, b), args.repeats) / 1e9)
    ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
    print(f"sgemm {n}x{n}x{n} f32, 1 thread, median of {args.rounds} interleaved rounds")
    print(f"  nnvm codegen ({kernel}): {statistics.median(ours):7.1f} GFLOP/s")
    print(f"  numpy matmul (OPENBLAS_NUM_THREADS=1): {statistics.median(theirs):7.1f} GFLOP/s")
    print(f"  ratio (median of per-round ratios): {statistics.median(ratios):.2f}x")
    print(f"  compile {compile_s:.2f} s, max abs error {err:.2e}, target {cpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
