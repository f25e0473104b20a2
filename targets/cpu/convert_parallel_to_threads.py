"""convert-parallel-to-threads: `scf.parallel` loops run on nnvm's thread pool (the ABI
contract; targets/cpu/nnvm_threads.c).

Each outermost `scf.parallel` (what `affine.parallel` becomes in convert-affine-to-scf) is
outlined into `func.func private @<fn>_par<k>(%ctx: !llvm.ptr)` and replaced by

    %ctx = llvm.alloca  (a struct holding every value the body uses from outside)
    llvm.call @nnvm_parallel(@<fn>_par<k>, %ctx, load @nnvm_num_threads, 0)

Inside, the threads claim chunks of the collapsed iteration space from one shared counter
(`nnvm_loop_start` / `_next` / `_end`, chunks of `max(ceil(total / (4 * nnvm_team_size())), 1)`
iterations); the caller claims too, so it can finish the loop alone, and it never waits for a
worker that has not started (one whose core another process holds). Each chunk turns the
linear index back into the loop's induction variables and runs the body (static
`memref.alloca`s at the top of the body, per-thread scratch, move to the entry). Nested
`scf.parallel` loops run sequentially inside their thread. The thread count is the weak i32
global `nnvm_num_threads` (0: one per online CPU), which the runtime sets from
`nnvm.set_num_threads` / `NNVM_NUM_THREADS` before each call. The calls have libgomp's
signatures (GOMP_parallel, GOMP_loop_dynamic_*), under nnvm's names.

Reductions (`scf.parallel` with results) are not supported: reduce into per-iteration slots of
a buffer instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.to_llvm.llvm_builder import PTR, convert_type, ensure_function_declaration

NUM_THREADS_GLOBAL = "nnvm_num_threads"
_BOOL = IntegerType(8)
"""C `bool` as the runtime returns it (only the low byte of the return register is defined)."""


def _is_rematerializable(value: SSAValue) -> bool:
    """Constants are cloned into the outlined function rather than passed through memory."""
    owner = value.owner
    return isinstance(owner, arith.ConstantOp | llvm.ConstantOp)


def _live_ins(par: scf.ParallelOp, nested: dict[Operation, None]) -> list[SSAValue]:
    """Values the parallel op's bounds and body use that are defined outside its body, in
    order of first use; `nested` is every op inside it, in walk order."""

    def outside(v: SSAValue) -> bool:
        owner = v.owner
        if isinstance(owner, Block):
            return owner.parent_op() not in nested and owner.parent_op() is not par
        return owner not in nested

    seen: dict[SSAValue, None] = {}
    for v in (*par.lowerBound, *par.upperBound, *par.step):
        seen.setdefault(v, None)
    for inner in nested:
        for v in inner.operands:
            if outside(v):
                seen.setdefault(v, None)
    return list(seen)


def _const(ops: list[Operation], v: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(v, IndexType()))
    ops.append(c)
    return c.result


def sequentialize(par: scf.ParallelOp) -> None:
    """Replace an scf.parallel by the equivalent nest of scf.for loops (inside a thread)."""
    if par.res:
        raise LoweringError(par, "scf.parallel with reductions is not supported")
    body = par.body.block
    blocks = [Block(arg_types=[IndexType()]) for _ in par.lowerBound]
    for old, blk in zip(body.args, blocks, strict=True):
        old.replace_all_uses_with(blk.args[0])
    for op in list(body.ops):
        op.detach()
        if not isinstance(op, scf.ReduceOp):
            blocks[-1].add_op(op)
    blocks[-1].add_op(scf.YieldOp())
    loop: scf.ForOp | None = None
    for d in reversed(range(len(blocks))):
        loop = scf.ForOp(par.lowerBound[d], par.upperBound[d], par.step[d], [], Region(blocks[d]))
        if d > 0:
            blocks[d - 1].add_op(loop)
            blocks[d - 1].add_op(scf.YieldOp())
    assert loop is not None
    Rewriter.replace_op(par, [loop], [])


def _chunk_size(ops: list[Operation], nth: SSAValue, total: SSAValue) -> SSAValue:
    """Dynamic-schedule chunk: about four chunks per thread, at least one iteration."""
    four = _const(ops, 4)
    parts = arith.MuliOp(nth, four)
    chunk = arith.CeilDivSIOp(total, parts.result)
    one = _const(ops, 1)
    at_least_one = arith.MaxSIOp(chunk.result, one)
    ops += [parts, chunk, at_least_one]
    return at_least_one.result


def _outline(par: scf.ParallelOp, module: ModuleOp, name: str) -> None:
    if par.res:
        raise LoweringError(
            par,
            "scf.parallel with reductions is not supported; reduce into a buffer instead",
        )
    nested = {o: None for o in par.walk() if o is not par}
    live = _live_ins(par, nested)
    captured = [v for v in live if not _is_rematerializable(v)]
    remat = [v for v in live if _is_rematerializable(v)]
    slot_types = [convert_type(v.type) for v in captured]
    ctx_type = llvm.LLVMStructType.from_type_list(slot_types or [i32])

    # ---- the outlined body -------------------------------------------------------------------
    entry = Block(arg_types=[PTR])
    ctx_arg = entry.args[0]
    ops: list[Operation] = []
    mapping: dict[SSAValue, SSAValue] = {}
    for v in remat:
        clone = v.owner.clone()  # type: ignore[union-attr]
        ops.append(clone)
        mapping[v] = clone.results[0]
    for k, v in enumerate(captured):
        gep = llvm.GEPOp(ctx_arg, [0, k], ctx_type)
        load = llvm.LoadOp(gep.result, slot_types[k], alignment=8)
        ops += [gep, load]
        value: SSAValue = load.dereferenced_value
        if value.type != v.type:
            cast = UnrealizedConversionCastOp.get([value], [v.type])
            ops.append(cast)
            value = cast.results[0]
        mapping[v] = value
    nth_call = llvm.CallOp("nnvm_team_size", return_type=i32)
    nth = arith.IndexCastOp(nth_call.returned, IndexType())
    ops += [nth_call, nth]

    lbs = [mapping[v] for v in par.lowerBound]
    ubs = [mapping[v] for v in par.upperBound]
    steps = [mapping[v] for v in par.step]
    zero = _const(ops, 0)
    one = _const(ops, 1)
    counts: list[SSAValue] = []
    total: SSAValue | None = None
    for lb, ub, step in zip(lbs, ubs, steps, strict=True):
        span = arith.SubiOp(ub, lb)
        n = arith.CeilDivSIOp(span.result, step)
        n_pos = arith.MaxSIOp(n.result, zero)
        ops += [span, n, n_pos]
        counts.append(n_pos.result)
        if total is None:
            total = n_pos.result
        else:
            prod = arith.MuliOp(total, n_pos.result)
            ops.append(prod)
            total = prod.result
    assert total is not None
    chunk = _chunk_size(ops, nth.result, total)

    loop_body = Block(arg_types=[IndexType()])
    lin = loop_body.args[0]
    body_ops: list[Operation] = []
    rest = lin
    ivs: list[SSAValue] = [lin] * len(counts)
    for d in reversed(range(len(counts))):
        if d == 0:
            idx = rest
        else:
            rem = arith.RemUIOp(rest, counts[d])
            quo = arith.DivUIOp(rest, counts[d])
            body_ops += [rem, quo]
            idx, rest = rem.result, quo.result
        scaled = arith.MuliOp(idx, steps[d])
        iv = arith.AddiOp(lbs[d], scaled.result)
        body_ops += [scaled, iv]
        ivs[d] = iv.result
    # the body's ops move into the chunk loop (not cloned: the parallel op goes away), their
    # uses of the induction variables and of values from outside rewired to the new ones
    for old, new in zip(par.body.block.args, ivs, strict=True):
        old.replace_all_uses_with(new)
    for v in live:
        v.replace_uses_with_if(mapping[v], lambda use: use.operation in nested)
    scratch: list[Operation] = []
    for inner in list(par.body.block.ops):
        inner.detach()
        if isinstance(inner, scf.ReduceOp):
            inner.erase()
        elif isinstance(inner, memref.AllocaOp) and not inner.operands:
            # a thread's scratch buffer: allocated once at the top of the entry block, not per
            # iteration of the chunk loop (a dynamic alloca there would grow the stack every
            # iteration), and before the chunk-size arithmetic, whose control flow would leave
            # it outside LLVM's entry block: a static alloca is one LLVM can keep in registers
            # (a register tile's accumulators, once the tile's loops are unrolled)
            scratch.append(inner)
        else:
            body_ops.append(inner)
    body_ops.append(scf.YieldOp())
    for o in body_ops:
        loop_body.add_op(o)
    # entry: nnvm_loop_start(0, total, 1, chunk, &lo, &hi) -> ^chunk or ^done
    # ^chunk: for lin in [lo, hi) { body }; nnvm_loop_next(&lo, &hi) -> ^chunk or ^done
    # ^done: nnvm_loop_end() (nnvm_parallel waits for the threads still inside)
    one_i64 = llvm.ConstantOp(IntegerAttr(1, i64), i64)
    lo_ptr = llvm.AllocaOp(one_i64.result, i64, alignment=8)
    hi_ptr = llvm.AllocaOp(one_i64.result, i64, alignment=8)
    ops[:0] = [one_i64, lo_ptr, hi_ptr, *scratch]
    casts = [arith.IndexCastOp(v, i64) for v in (zero, total, one, chunk)]
    ops += casts
    start = llvm.CallOp(
        "nnvm_loop_start",
        *(c.result for c in casts),
        lo_ptr.res,
        hi_ptr.res,
        return_type=_BOOL,
    )
    false = arith.ConstantOp(IntegerAttr(0, _BOOL))
    has_first = arith.CmpiOp(start.returned, false.result, "ne")
    ops += [start, false, has_first]

    chunk_block = Block()
    done_block = Block()
    lo = llvm.LoadOp(lo_ptr.res, i64, alignment=8)
    hi = llvm.LoadOp(hi_ptr.res, i64, alignment=8)
    lo_idx = arith.IndexCastOp(lo.dereferenced_value, IndexType())
    hi_idx = arith.IndexCastOp(hi.dereferenced_value, IndexType())
    loop = scf.ForOp(lo_idx.result, hi_idx.result, one, [], Region(loop_body))
    nxt = llvm.CallOp("nnvm_loop_next", lo_ptr.res, hi_ptr.res, return_type=_BOOL)
    has_next = arith.CmpiOp(nxt.returned, false.result, "ne")
    for o in (lo, hi, lo_idx, hi_idx, loop, nxt, has_next):
        chunk_block.add_op(o)
    chunk_block.add_op(cf.ConditionalBranchOp(has_next.result, chunk_block, (), done_block, ()))
    done_block.add_op(llvm.CallOp("nnvm_loop_end"))
    done_block.add_op(func.ReturnOp())
    ops.append(cf.ConditionalBranchOp(has_first.result, chunk_block, (), done_block, ()))
    for o in ops:
        entry.add_op(o)
    outlined = func.FuncOp(
        name,
        ((PTR,), ()),
        Region([entry, chunk_block, done_block]),
        visibility=StringAttr("private"),
    )
    module.body.block.add_op(outlined)
    for nested in [o for o in outlined.walk() if isinstance(o, scf.ParallelOp)]:
        sequentialize(nested)

    # ---- the call site -------------------------------------------------------------------
    fn = par.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp | llvm.FuncOp):
        fn = fn.parent_op()
    if fn is None or not fn.body.blocks:
        raise LoweringError(par, "scf.parallel must be inside a function")
    fn_entry = fn.body.blocks.first
    assert fn_entry is not None
    one_i64 = llvm.ConstantOp(IntegerAttr(1, 64), convert_type(IndexType()))
    alloca = llvm.AllocaOp(one_i64.result, ctx_type, alignment=16)
    first = fn_entry.first_op
    for o in (one_i64, alloca):
        if first is None:
            fn_entry.add_op(o)
        else:
            fn_entry.insert_op_before(o, first)
    site: list[Operation] = []
    for k, v in enumerate(captured):
        value = v
        if v.type != slot_types[k]:
            cast = UnrealizedConversionCastOp.get([v], [slot_types[k]])
            site.append(cast)
            value = cast.results[0]
        gep = llvm.GEPOp(alloca.res, [0, k], ctx_type)
        site += [gep, llvm.StoreOp(value, gep.result, alignment=8)]
    fn_ptr = llvm.AddressOfOp(name, PTR)
    nt_ptr = llvm.AddressOfOp(NUM_THREADS_GLOBAL, PTR)
    nt = llvm.LoadOp(nt_ptr.result, i32, alignment=4)
    flags = llvm.ConstantOp(IntegerAttr(0, i32), i32)
    call = llvm.CallOp("nnvm_parallel", fn_ptr.result, alloca.res, nt.dereferenced_value, flags)
    site += [fn_ptr, nt_ptr, nt, flags, call]
    Rewriter.replace_op(par, site, [])


def _declare_runtime(module: ModuleOp) -> None:
    ensure_function_declaration(module, "nnvm_parallel", [PTR, PTR, i32, i32], None)
    ensure_function_declaration(module, "nnvm_team_size", [], i32)
    ensure_function_declaration(module, "nnvm_loop_start", [i64, i64, i64, i64, PTR, PTR], _BOOL)
    ensure_function_declaration(module, "nnvm_loop_next", [PTR, PTR], _BOOL)
    ensure_function_declaration(module, "nnvm_loop_end", [], None)
    for op in module.ops:
        if getattr(op, "sym_name", None) == StringAttr(NUM_THREADS_GLOBAL):
            return
    module.body.block.add_op(
        llvm.GlobalOp(i32, NUM_THREADS_GLOBAL, "weak", value=IntegerAttr(0, i32), alignment=4)
    )


@dataclass(frozen=True)
class ConvertParallelToThreads(ModulePass):
    """Outline scf.parallel bodies and run them on nnvm's thread pool (nnvm_parallel)."""

    name = "convert-parallel-to-threads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outermost = [
            p
            for p in op.walk()
            if isinstance(p, scf.ParallelOp)
            and not any(isinstance(a, scf.ParallelOp) for a in _ancestors(p))
        ]
        if not outermost:
            return
        _declare_runtime(op)
        taken = {getattr(o, "sym_name", StringAttr("")).data for o in op.ops}
        counter: dict[str, int] = {}
        for par in outermost:
            fn = par
            while fn is not None and not isinstance(fn, func.FuncOp | llvm.FuncOp):
                fn = fn.parent_op()
            base = fn.sym_name.data if fn is not None else "kernel"
            k = counter.get(base, 0)
            name = f"{base}_par{k}"
            while name in taken:
                k += 1
                name = f"{base}_par{k}"
            counter[base] = k + 1
            taken.add(name)
            _outline(par, op, name)


def _ancestors(op: Operation):
    p = op.parent_op()
    while p is not None:
        yield p
        p = p.parent_op()
