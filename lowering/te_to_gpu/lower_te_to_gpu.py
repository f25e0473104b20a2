"""lower-te-to-gpu: te kernels whose schedules bind loops to GPU indices become gpu.func kernels.

The loop nests come from lower-te-to-loops' emitter (same formulas, splits, tails and guards);
a loop bound with `te.bind` takes `gpu.block_id` / `gpu.thread_id` instead of iterating, under
an `scf.if` when its extent can run past the axis (a split tail). Each root stage holding a bound
loop is then outlined into a `gpu.func kernel` of one `gpu.module` per te function, taking the
buffers it reads and writes as static memrefs (bare pointers once lowered), and the host function
calls it with `gpu.launch_func` whose grid and block sizes are the bound loops' extents. With
`outline_all` (what device targets set) unbound root stages become one-thread kernels too, and
per-thread scratch the emitter hoisted to the entry (a stage computed at a thread's loop) is
cloned into each kernel as the thread's private buffer.

Memory scopes (`te.cache_read ... scope "shared" | "local"`, memory_scopes.py): a "shared"
stage computed at a loop under a blockIdx-bound axis becomes one workgroup buffer per block
(a `memref.alloca` in memory space 3, WORKGROUP) that the block's threads fill together, each a
strided share of the tile, between two `gpu.barrier`s; a "local" stage computed under a
threadIdx-bound axis is the thread's private buffer.

A reduction axis bound to a thread index is a cross-thread reduction (cross_thread.py): each
thread's partial in a register, then a tree over the block's threads in shared memory.

Errors located at the primitive: a thread index bound twice in one kernel, a block of more
threads than `max_threads`, a reduction axis bound to a block index, shared memory
over the target's limit, a shared stage outside a block or under a masked thread axis, a local
stage outside a thread, a scope the target does not declare."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from nnvm.dialects.te.analysis import is_te_kernel
from nnvm.dialects.te.schedule import CacheReadOp
from nnvm.dialects.te.stage_tree import IterVar, Stage
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.te_to_gpu.cross_thread import CrossThreadReductions
from nnvm.lowering.te_to_gpu.memory_scopes import (
    MAX_SHARED_BYTES,
    check_uniform,
    merge_barriers,
    scoped_stages,
)
from nnvm.lowering.te_to_loops.emitter import Nest, Scope, Val
from nnvm.lowering.te_to_loops.kernel import NATIVE_BITS, KernelGenerator
from nnvm.lowering.te_to_loops.lower_te_to_loops import lower_empty_kernel, rewrite_calls
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.target import Target, parse_target

THREAD_INDICES = {
    f"{kind}.{d}": (kind, d) for kind in ("blockIdx", "threadIdx") for d in ("x", "y", "z")
}
MAX_THREADS = 1024
"""Threads per block on every CUDA GPU since sm_20 (and PoCL's default work-group limit)."""


def bound_index(var: IterVar) -> tuple[str, str] | None:
    """('blockIdx' | 'threadIdx', 'x' | 'y' | 'z') for a bound leaf loop, else None."""
    ann = var.annotation or ""
    if not ann.startswith("bind("):
        return None
    name = ann[len("bind(") : -1]
    if name not in THREAD_INDICES:
        raise DiagnosticError(
            var.annotated_by,
            f"te.bind: unknown thread index '{name}' (expected one of {', '.join(THREAD_INDICES)})",
        )
    return THREAD_INDICES[name]


class GpuKernelGenerator(CrossThreadReductions, KernelGenerator):
    """The loop-nest emitter with bound loops as GPU indices, each root stage with bound loops
    outlined into a kernel, shared and local stages in workgroup and private buffers, bound
    reduction axes as cross-thread reductions."""

    version_computed_tiles = False

    def __init__(
        self,
        state: ScheduleState,
        module: ModuleOp,
        max_threads: int,
        outline_all: bool = False,
        scopes: dict[str, tuple[str, CacheReadOp]] | None = None,
        max_shared_bytes: int = MAX_SHARED_BYTES,
    ):
        KernelGenerator.__init__(self, state, module, NATIVE_BITS)
        self.init_scopes(scopes or {}, max_shared_bytes)
        self.max_threads = max_threads
        self.outline_all = outline_all
        self.gpu_module: gpu.ModuleOp | None = None
        self._dims: dict[tuple[str, str], tuple[int, IterVar]] | None = None
        self._ids: dict[tuple[str, str], SSAValue] = {}

    def emit_compute(self, stage: Stage, scope: Scope, region: object) -> None:
        if region is not None or self.block is not self.entry:
            super().emit_compute(stage, scope, region)  # type: ignore[arg-type]
            return
        marker = self.entry.last_op
        self._dims, self._ids = {}, {}
        self.start_kernel()
        super().emit_compute(stage, scope, None)
        dims, self._dims = self._dims, None
        if dims or self.outline_all:
            self._outline(stage, marker, dims)

    def emit_bound(
        self,
        leaf: IterVar,
        static: int,
        ub: SSAValue | None,
        body: Callable[[Val], None],
        nest: Nest,
        scope: Scope,
        vals: dict[IterVar, Val],
    ) -> None:
        where = bound_index(leaf)
        assert where is not None
        if leaf.reduce and where[0] == "blockIdx":
            raise DiagnosticError(
                leaf.annotated_by,
                f"te.bind: the reduction axis '{leaf.name}' cannot be bound to a block index "
                "(blocks cannot combine their results; bind it to a thread index, or rfactor "
                "it first)",
            )
        if self._dims is None:
            raise DiagnosticError(
                leaf.annotated_by,
                f"te.bind: axis '{leaf.name}' is bound inside a stage computed at another "
                "stage's loop (only root stages are outlined into kernels here)",
            )
        if where in self._dims:
            raise DiagnosticError(
                leaf.annotated_by,
                f"te.bind: {where[0]}.{where[1]} is already bound to axis "
                f"'{self._dims[where][1].name}' in this kernel",
            )
        self._dims[where] = (static, leaf)
        threads = 1
        for (kind, _), (n, _) in self._dims.items():
            if kind == "threadIdx":
                threads *= n
        if threads > self.max_threads:
            raise DiagnosticError(
                leaf.annotated_by,
                f"te.bind: a block of {threads} threads is more than the {self.max_threads} "
                "this target allows",
            )
        op_cls = gpu.BlockIdOp if where[0] == "blockIdx" else gpu.ThreadIdOp
        ssa = self.add1(op_cls(gpu.DimensionAttr(gpu.DimensionEnum(where[1]))))
        ssa.name_hint = f"{'bid' if where[0] == 'blockIdx' else 'tid'}_{where[1]}"
        self.enter_bound(leaf, where, static, masked=ub is not None)
        try:
            if leaf.reduce:
                self.emit_cross_thread(leaf, where[1], ssa, static, ub, body, nest, scope, vals)
            elif ub is None:
                body(Val(ssa))
            else:
                inside = self.add1(arith.CmpiOp(ssa, ub, "slt"))
                self.emit_if(inside, lambda: body(Val(ssa)))
        finally:
            self.leave_bound(leaf, where, masked=ub is not None)

    def _outline(
        self,
        stage: Stage,
        marker: Operation | None,
        dims: dict[tuple[str, str], tuple[int, IterVar]],
    ) -> None:
        """Move the ops after `marker` into a gpu.func kernel; launch it in their place."""
        ops: list[Operation] = []
        op = self.entry.first_op if marker is None else marker.next_op
        hoisted = {v.owner for v in self._consts.values()}
        while op is not None:
            if op not in hoisted:  # index constants stay at the host function's entry
                ops.append(op)
            op = op.next_op
        inside = set()
        for o in ops:
            for inner in o.walk():
                inside.add(inner)
        free: list[SSAValue] = []
        for o in ops:
            for inner in o.walk():
                for v in inner.operands:
                    owner = v.owner
                    if isinstance(owner, Operation) and owner in inside:
                        continue
                    if isinstance(owner, Block) and any(
                        owner is b for x in inside for r in x.regions for b in r.blocks
                    ):
                        continue
                    if v not in free:
                        free.append(v)
        # constants and per-thread scratch (an alloca the emitter hoisted to the function's
        # entry: a stage computed at a thread's loop) are cloned into the kernel, the scratch
        # becoming the thread's private buffer
        consts = [v for v in free if isinstance(v.owner, arith.ConstantOp | memref.AllocaOp)]
        args = [v for v in free if v not in consts]
        for v in args:
            if not isinstance(v.type, MemRefType):
                raise DiagnosticError(
                    self.state.fn, f"te-to-gpu: kernel of '{stage.name}' needs a host value {v}"
                )
        name = f"{self.state.fn.sym_name.data}_{_sym(stage.name)}"
        body = Block(arg_types=[v.type for v in args])
        for old, new in zip(args, body.args, strict=True):
            new.name_hint = old.name_hint
        mapping: dict[SSAValue, SSAValue] = dict(zip(args, body.args, strict=True))
        for c in consts:
            clone = c.owner.clone()  # type: ignore[union-attr]
            clone.results[0].name_hint = c.name_hint
            body.add_op(clone)
            mapping[c] = clone.results[0]
        for o in ops:
            o.detach()
            body.add_op(o)
        for o in ops:
            for inner in o.walk():
                for k, v in enumerate(inner.operands):
                    if v in mapping:
                        inner.operands[k] = mapping[v]
        body.add_op(gpu.ReturnOp([]))
        block_size = [dims.get(("threadIdx", d), (1, None))[0] for d in "xyz"]
        grid_size = [dims.get(("blockIdx", d), (1, None))[0] for d in "xyz"]
        kernel = gpu.FuncOp(
            name,
            ([v.type for v in args], []),
            Region(body),
            kernel=True,
            known_block_size=block_size,
            known_grid_size=grid_size,
        )
        self._gpu_module().body.block.add_op(kernel)
        check_uniform(kernel, self.barriers)
        merge_barriers(kernel)
        ref = SymbolRefAttr(f"{self.state.fn.sym_name.data}_kernels", [name])
        launch = gpu.LaunchFuncOp(
            ref,
            [self.index(n) for n in grid_size],
            [self.index(n) for n in block_size],
            kernelOperands=args,
        )
        self.entry.add_op(launch)

    def _gpu_module(self) -> gpu.ModuleOp:
        if self.gpu_module is None:
            name = f"{self.state.fn.sym_name.data}_kernels"
            self.gpu_module = gpu.ModuleOp(StringAttr(name), Region(Block()))  # type: ignore[arg-type]
            self.module.body.block.insert_op_before(self.gpu_module, self.state.fn)
        return self.gpu_module


def _sym(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def lower_kernel_to_gpu(
    fn: func.FuncOp,
    module: ModuleOp,
    max_threads: int,
    outline_all: bool = False,
    target: Target | None = None,
) -> None:
    if all(0 in t.get_shape() for t in fn.function_type.outputs.data):  # type: ignore[attr-defined]
        lower_empty_kernel(fn)
        return
    state = ScheduleState(fn)
    state.apply_all()
    if target is not None:
        target.check_schedule(state)
    for stage in state.stages:
        for v in stage.leaves:
            bound_index(v)
    scopes = scoped_stages(state)
    limit = getattr(target, "max_shared_bytes", MAX_SHARED_BYTES)
    GpuKernelGenerator(state, module, max_threads, outline_all, scopes, limit).generate()
    for op in list(fn.body.block.ops):  # scratch every kernel now has its own copy of
        if isinstance(op, memref.AllocaOp) and not op.results[0].uses:
            fn.body.block.erase_op(op)


@dataclass(frozen=True)
class LowerTEToGpu(ModulePass):
    """te kernels -> host loop nests launching gpu.func kernels for their bound root stages."""

    name = "lower-te-to-gpu"

    max_threads: int = MAX_THREADS

    outline_all: bool = False
    """Outline unbound root stages too (as one-thread kernels), so the host function only
    allocates and launches: what a device target needs; off, they stay host loops."""

    target: str | Target | None = None
    """The GPU target (object or target string) whose check_schedule rejects what its kernels
    cannot run; None: no target check (the pass alone)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = None if self.target is None else parse_target(self.target)
        converted: dict[str, int] = {}
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration and is_te_kernel(fn):
                n_inputs = len(fn.function_type.inputs.data)
                lower_kernel_to_gpu(fn, op, self.max_threads, self.outline_all, target)
                converted[fn.sym_name.data] = n_inputs
        if converted:
            op.attributes["gpu.container_module"] = UnitAttr()
            rewrite_calls(op, converted)


__all__ = ["LowerTEToGpu"]
