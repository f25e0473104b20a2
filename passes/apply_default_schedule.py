"""apply-default-schedule: give every te kernel without a schedule the default one for its
op-pattern kind, as `te.schedule` IR (so it can be printed, diffed and replaced by a tuned one).

* intermediate injective stages read by one compute are inlined into it (a fused elementwise
  chain becomes one loop nest); padding and multi-reader stages keep a buffer;
* injective stages: axes fused, the inner `native width` lanes vectorized, the outer loop
  parallel (every parallel loop only when the stage's work, elements x reduction extent, is at
  least `min_parallel_work`: below it the fork/join costs more than it saves); a transform
  between blocked layouts (template "reblock") keeps its two inner axes unfused and vectorizes
  by the smaller block, so every vector is one contiguous load;
* reductions: the reduction loops moved outside the innermost data axis, which is vectorized;
  when the reduction runs along the innermost data axis, it is split by the vector width and
  rfactor-ed so the partial sums are vectors;
* templates (the `template` of the anchor compute, set by the op's te definition): conv2d in
  NCHW[x]c and NCHW, dense, matmul: the output (the epilogue stage of a fused group, or a
  cache_write copy) is tiled for registers, the anchor is computed at the tile with its output
  block unrolled and its channel (or column) block vectorized, the outer tile loops parallel.
  A matmul that is not the kernel's output (the recurrence of an LSTM) gets the same tiles
  through a cache_write; a matmul of one or two rows (a GEMV) gets tiles of up to 8 vectors of
  columns, so that many FMA chains run side by side.

Every default schedule is checked by applying it to a copy of the kernel; one that does not
apply falls back to the plain per-stage schedules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from nnvm.dialects.te import exprs
from nnvm.dialects.te.ops import ComputeOp, ConstantOp, ExternOp, ReadOp
from nnvm.dialects.te.schedule import (
    CacheWriteOp,
    ComputeAtOp,
    ComputeInlineOp,
    FuseOp,
    ParallelOp,
    Primitive,
    ReorderOp,
    RFactorOp,
    ScheduleOp,
    SplitOp,
    TileOp,
    UnrollOp,
    VectorizeOp,
)
from nnvm.dialects.te.stages import ScheduleState
from nnvm.support.diagnostics import DiagnosticError

MAX_LANES = 64
MIN_PARALLEL_WORK = 1 << 15
"""Elements x reduction extent below which a stage runs on one thread (the fork/join costs
a few microseconds, and more when the other core is busy)."""
NATIVE_BITS = 256


def element_bits(elt: object) -> int:
    """Bits of a float or (non-bool) integer element; 32 for the rest (i1, index)."""
    if exprs.is_float_type(elt):  # type: ignore[arg-type]
        return exprs.float_width(elt)  # type: ignore[arg-type]
    if exprs.is_int_type(elt) and not exprs.is_bool_type(elt):  # type: ignore[arg-type]
        return exprs.int_width(elt)  # type: ignore[arg-type]
    return 32


def native_lanes(elt: object, vector_bits: int = NATIVE_BITS) -> int:
    return max(vector_bits // element_bits(elt), 1)


@dataclass
class StageInfo:
    """What the default schedule looks at: a compute, who reads it, where it goes."""

    op: ComputeOp
    readers: list[Operation]
    is_output: bool

    @property
    def name(self) -> str:
        return self.op.stage_name


class KernelScheduler:
    """Builds the default schedule of one te kernel."""

    def __init__(
        self,
        fn: func.FuncOp,
        vector_bits: int = NATIVE_BITS,
        min_parallel_work: int = MIN_PARALLEL_WORK,
    ):
        self.fn = fn
        self.vector_bits = vector_bits
        self.min_parallel_work = min_parallel_work
        block = fn.body.block
        ret = block.last_op
        outputs = set(ret.operands) if isinstance(ret, func.ReturnOp) else set()
        self.infos: dict[SSAValue, StageInfo] = {}
        self.order: list[StageInfo] = []
        for op in block.ops:
            if isinstance(op, ComputeOp):
                info = StageInfo(op, _readers(op.result), op.result in outputs)
                self.infos[op.result] = info
                self.order.append(info)
        self.prims: list[Primitive] = []
        self.inlined: set[str] = set()
        self.done: set[str] = set()

    # -- the plan ---------------------------------------------------------------------------

    def plan(self, templates: bool = True) -> list[Primitive]:
        self.prims, self.inlined, self.done = [], set(), set()
        for info in self.order:
            if self._inlinable(info):
                self.prims.append(ComputeInlineOp.make(info.name))
                self.inlined.add(info.name)
        if templates:
            for info in reversed(self.order):
                t = info.op.template_name
                if t in TEMPLATES and info.name not in self.done:
                    self._template(info, TEMPLATES[t])
        for info in self.order:
            if info.name in self.inlined or info.name in self.done:
                continue
            if info.op.reduce_kind is not None:
                self.reduction(info.name, info.op)
            else:
                self.injective(info.name, info.op)
        return self.prims

    def _inlinable(self, info: StageInfo) -> bool:
        """Injective stages read only by other computes are inlined; one with several readers
        (x in GELU's x * (1 + erf(x / sqrt 2)) / 2) only when it is elementwise, so each
        reader recomputes a few arithmetic ops instead of a buffer making a round trip."""
        op = info.op
        if info.is_output or op.reduce_kind is not None or op.template_name in ("pad", "pack"):
            return False
        if not info.readers or not all(isinstance(r, ComputeOp) for r in info.readers):
            return False
        return len(info.readers) == 1 or _is_elementwise(op)

    def _effective_reader(self, info: StageInfo) -> StageInfo | None:
        """The one stage reading `info` once inlined stages are looked through."""
        found: set[str] = set()
        result: StageInfo | None = None
        pending = [info]
        while pending:
            current = pending.pop()
            for r in current.readers:
                reader = self.infos.get(r.result) if isinstance(r, ComputeOp) else None
                if reader is None:
                    return None
                if reader.name in self.inlined:
                    pending.append(reader)
                elif reader.name not in found:
                    found.add(reader.name)
                    result = reader
        return result if len(found) == 1 else None

    def _template(self, anchor: StageInfo, template: Template) -> None:
        """Schedule the anchor with its epilogue (the fused output stage), or with a
        cache_write copy of itself when it is the output."""
        epilogue = self._effective_reader(anchor)
        if not template.applies(anchor.op):
            return
        if (
            epilogue is not None
            and epilogue.is_output
            and epilogue.op.reduce_kind is None
            and epilogue.op.shape == anchor.op.shape
            and epilogue.name not in self.done
        ):
            template.build(self, anchor.op, anchor.name, epilogue.name)
            self.done.update({anchor.name, epilogue.name})
        elif anchor.is_output or template.intermediate:
            target = anchor.name
            if template.cache_write:
                local = f"{anchor.name}.local"
                self.prims.append(CacheWriteOp.make(anchor.name, local))
                template.build(self, anchor.op, local, target)
            else:
                template.build(self, anchor.op, target, target)
            self.done.add(anchor.name)

    def parallel(self, name: str, axis: str, op: ComputeOp) -> None:
        """Run `axis` of stage `name` on the thread pool, unless the op's work is too small to
        pay for the fork/join (a recurrence's per-step stages, a small model's kernels)."""
        work = 1
        for d in (*op.shape, *op.reduce_shape):
            work *= d
        if work >= self.min_parallel_work:
            self.prims.append(ParallelOp.make(name, axis))

    def pad_at(self, anchor: ComputeOp, a: str, axis: str) -> None:
        """Compute the padded input of a conv inside its output tile (`axis` of stage `a`):
        only the rows and columns the tile reads are copied, into a small buffer that stays
        in L1, instead of a whole padded copy of the input making a round trip to memory.
        For depthwise convs only: a dense conv re-copies the tile's rows for every output
        channel block, which costs more than the one whole copy (ResNet-18 measured)."""
        for r in anchor.block.ops:
            if not isinstance(r, ReadOp):
                continue
            pad = self.infos.get(r.tensor)
            if pad is None or pad.op.template_name != "pad" or pad.name in self.done:
                continue
            if pad.readers != [anchor] or pad.is_output or not pad.op.shape:
                continue
            self.prims.append(VectorizeOp.make(pad.name, pad.op.spatial_names[-1]))
            self.prims.append(ComputeAtOp.make(pad.name, a, axis))
            self.done.add(pad.name)

    def lanes(self, elt: object) -> int:
        """f32 (or other) lanes of one native vector of the target."""
        return native_lanes(elt, self.vector_bits)

    @property
    def max_row_tile(self) -> int:
        """How many vector accumulators a register tile may hold: 14 of AVX-512's 32 zmm
        registers, 12 of AVX2's 16 ymm, leaving room for the operands."""
        return 14 if self.vector_bits >= 512 else 12

    @property
    def accumulators(self) -> int:
        """Vector accumulators of a register tile with two operand vectors: 28 of AVX-512's 32
        registers, 12 of AVX2's 16."""
        return 2 * self.max_row_tile if self.vector_bits >= 512 else self.max_row_tile

    def axes(self, name: str) -> list[str]:
        """The spatial axes of a stage (a cache_write copy has those of its compute)."""
        base = name.removesuffix(".local")
        for info in self.order:
            if info.name == base:
                return list(info.op.spatial_names)
        raise KeyError(name)

    # -- generic schedules ------------------------------------------------------------------

    def injective(self, name: str, op: ComputeOp) -> None:
        shape, axes = op.shape, op.spatial_names
        if not shape:
            return
        lanes = self.lanes(op.element_type)
        if op.template_name == "reblock":
            lanes = _block_lanes(op, min(lanes, shape[-1]))
            if len(shape) >= 3 and shape[-1] % lanes == 0:
                self._reblock(name, op, lanes)
                return
        total = 1
        for d in shape:
            total *= d
        p = self.prims
        blocked_pad = op.template_name == "pad" and len(shape) >= 3
        if blocked_pad and shape[-1] % lanes == 0 and shape[-1] <= MAX_LANES:
            # its bounds test needs the row and the column, which a loop fused over all axes
            # recomputes with div/mod for every vector; here the outer axes are fused, the
            # columns stay a loop, the channel block is one vector (ResNet's 58x58x64 pad:
            # 0.1 -> 0.05 ms)
            outer = self._fuse(name, axes[:-2])
            p.append(VectorizeOp.make(name, axes[-1]))
            if outer is not None:
                self.parallel(name, outer, op)
            return
        if not _gathers_free(op):
            # vectors along the last axis would need gathers (NCHW16c -> NCHW reads with a
            # stride of 16): a plain inner loop under the fused outer axes, so each element
            # costs a load and a store instead of the div/mod chain of a fused index
            outer = self._fuse(name, axes[:-1])
            if outer is not None:
                self.parallel(name, outer, op)
            return
        if len(shape) >= 2 and shape[-1] % lanes == 0 and total > lanes:
            fused = f"{name}.fused"
            p.append(FuseOp.make(name, axes, fused))
            p.append(SplitOp.make(name, fused, lanes, None, f"{fused}.o", f"{fused}.i"))
            p.append(VectorizeOp.make(name, f"{fused}.i"))
            self.parallel(name, f"{fused}.o", op)
            return
        outer = self._fuse(name, axes[:-1])
        last = axes[-1]
        if shape[-1] <= MAX_LANES:
            p.append(VectorizeOp.make(name, last))
        else:
            p.append(SplitOp.make(name, last, lanes, None, f"{last}.o", f"{last}.i"))
            p.append(VectorizeOp.make(name, f"{last}.i"))
            if outer is None:
                outer = f"{last}.o"
        if outer is not None:
            self.parallel(name, outer, op)

    def _reblock(self, name: str, op: ComputeOp, lanes: int) -> None:
        """A blocked-to-blocked transform: the block axis split into source-block vectors, the
        axes above the innermost two fused and parallel (no div/mod per vector)."""
        axes, last = op.spatial_names, op.spatial_names[-1]
        outer = self._fuse(name, axes[:-2])
        self.prims.append(SplitOp.make(name, last, lanes, None, f"{last}.o", f"{last}.i"))
        self.prims.append(VectorizeOp.make(name, f"{last}.i"))
        if outer is not None:
            self.parallel(name, outer, op)

    def _fuse(self, name: str, axes: list[str]) -> str | None:
        """Fuse adjacent axes into one loop (named after the stage); None when there are none."""
        if not axes:
            return None
        if len(axes) == 1:
            return axes[0]
        fused = f"{name}.outer"
        self.prims.append(FuseOp.make(name, axes, fused))
        return fused

    def reduction(self, name: str, op: ComputeOp) -> None:
        spatial, reduce = op.spatial_names, op.reduce_names
        shape, rshape = op.shape, op.reduce_shape
        lanes = self.lanes(op.element_type)
        p = self.prims
        if spatial and _innermost_is_spatial(op):
            last = spatial[-1]
            inner = [last]
            outer_last: list[str] = []
            if shape[-1] > MAX_LANES:
                inner = [f"{last}.i"]
                outer_last = [f"{last}.o"]
                p.append(SplitOp.make(name, last, lanes, None, outer_last[0], inner[0]))
            p.append(ReorderOp.make(name, [*spatial[:-1], *outer_last, *reduce, *inner]))
            p.append(VectorizeOp.make(name, inner[0]))
            # a blocked layout's column (one vector per position, NCHW16c pools) stays a
            # loop when the axes above it leave the threads enough work: fused into the
            # parallel loop it would cost a div/mod per vector (ResNet's max pool: 0.26 ->
            # 0.20 ms)
            column = len(spatial) >= 3 and not outer_last and math.prod(shape[:-2]) >= 8
            par = self._fuse(name, spatial[:-2] if column else spatial[:-1])
            if par is not None:
                self.parallel(name, par, op)
            return
        par = self._fuse(name, spatial)
        if rshape[-1] >= 2 * lanes:
            k = reduce[-1]
            rf = f"{name}.rf"
            p.append(SplitOp.make(name, k, lanes, None, f"{k}.o", f"{k}.i"))
            p.append(RFactorOp.make(name, f"{k}.i", rf))
            p.append(ReorderOp.make(rf, [*spatial, *reduce[:-1], f"{k}.o", f"{k}.i"]))
            p.append(VectorizeOp.make(rf, f"{k}.i"))
            if par is not None:
                p.append(ComputeAtOp.make(rf, name, par))
        if par is not None:
            self.parallel(name, par, op)


TemplateFn = Callable[[KernelScheduler, ComputeOp, str, str], None]


@dataclass(frozen=True)
class Template:
    """A register-blocked schedule: `build(scheduler, anchor op, anchor stage, output stage)`
    (the two stage names are equal when the anchor is its own output and needs no copy)."""

    build: TemplateFn
    cache_write: bool = True
    min_rank: int = 0
    intermediate: bool = False
    """Also for an anchor that is not the kernel's output (a matmul inside a recurrence): it
    accumulates in a cache_write tile and is copied to its buffer."""

    def applies(self, op: ComputeOp) -> bool:
        return len(op.shape) >= self.min_rank and op.reduce_kind == "sum"


# ----------------------------------------------------------------------------------------------
# Templates: the register-blocked schedules of the complex ops
# ----------------------------------------------------------------------------------------------


def _divisor(n: int, preferred: tuple[int, ...], default: int) -> int:
    for f in preferred:
        if f <= n and n % f == 0:
            return f
    return min(default, n)


def conv2d_nchwc(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, ocb, oh, ow, oc]: register tiles of ow x (one or two channel blocks), the
    channel block one vector; (n, ocb, oh) parallel. Inside a tile, each input element is
    broadcast once and multiplied by the weight vectors of both channel blocks (ow outside
    the channel blocks, so LLVM keeps 28 accumulators + 2 weights + 1 broadcast in AVX-512's
    32 registers instead of spilling)."""
    n, cb, h, w, c = s.axes(e)
    an, _, ah, _, _ = anchor.spatial_names
    ncb, ow = anchor.shape[1], anchor.shape[3]
    depthwise = len(anchor.reduce_names) <= 2
    ocf, owf = _conv_tile(ow, ncb, s.accumulators, s.max_row_tile, 1 if depthwise else 2)
    if not depthwise and owf == ow and ocf * owf <= s.max_row_tile:
        _conv2d_nchwc_small(s, anchor, a, e, ocf)
        return
    p = s.prims
    p.append(SplitOp.make(e, w, owf, None, f"{w}.o", f"{w}.i"))
    p.append(SplitOp.make(e, cb, ocf, None, f"{cb}.o", f"{cb}.i"))
    p.append(ReorderOp.make(e, [n, f"{cb}.o", h, f"{w}.o", f"{cb}.i", f"{w}.i", c]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{cb}.o", h], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, c))
    p.append(ComputeAtOp.make(a, e, f"{w}.o"))
    _conv_register_tile(s, anchor, a, [an, ah, *anchor.reduce_names])
    if depthwise:  # the copy costs as much as the conv
        s.pad_at(anchor, a, ah)


def _conv2d_nchwc_small(s: KernelScheduler, anchor: ComputeOp, a: str, e: str, ocf: int) -> None:
    """A conv whose output rows are short (7x7 at the end of an ImageNet network): its weights,
    used by few output positions, dominate the traffic. The tile's channel blocks are computed
    for the whole image at once with the input-channel blocks outermost, so each block's
    weights (18 KiB) stay in L1 while every output row uses them, the row's accumulators
    (few enough to stay in registers) carried through the kernel loops. ResNet-18's 7x7
    convs: 2.25 -> 1.95 ms each on one thread."""
    n, cb, h, w, c = s.axes(e)
    an, _, ah, _, _ = anchor.spatial_names
    icb, *rest = anchor.reduce_names
    p = s.prims
    p.append(SplitOp.make(e, cb, ocf, None, f"{cb}.o", f"{cb}.i"))
    p.append(ReorderOp.make(e, [n, f"{cb}.o", h, f"{cb}.i", w, c]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{cb}.o"], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, c))
    p.append(ComputeAtOp.make(a, e, fused))
    _conv_register_tile(s, anchor, a, [an, icb, ah, *rest])


def _conv_register_tile(s: KernelScheduler, anchor: ComputeOp, a: str, outer: list[str]) -> None:
    """The conv's loops: `outer`, then the register tile: columns unrolled outside the channel
    blocks (unrolled), the channels of a block one vector."""
    _, acb, _, aw, ac = anchor.spatial_names
    s.prims.append(ReorderOp.make(a, [*outer, aw, acb, ac]))
    s.prims.append(UnrollOp.make(a, aw))
    s.prims.append(UnrollOp.make(a, acb))
    s.prims.append(VectorizeOp.make(a, ac))


def _conv_tile(ow: int, ncb: int, budget: int, max_cols: int, max_blocks: int) -> tuple[int, int]:
    """(channel blocks, output columns) of a conv register tile: the most accumulators within
    the budget, at most `max_cols` columns dividing the row; on a tie, more channel blocks
    (fewer loads per multiply-add)."""
    best = (1, _divisor(ow, tuple(range(min(budget, max_cols), 1, -1)), 4))
    for blocks in range(2, max_blocks + 1):
        if ncb % blocks:
            continue
        cols = _divisor(ow, tuple(range(min(budget // blocks, max_cols), 1, -1)), 0)
        if cols >= 2 and ow % cols == 0 and blocks * cols >= best[0] * best[1]:
            best = (blocks, cols)
    return best


def conv2d_nchw(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[n, oc, oh, ow]: tiles of oc x ow (oc unrolled, ow vectors); (n, oc, oh) parallel."""
    n, oc, h, w = s.axes(e)
    an, aoc, ah, aw = anchor.spatial_names
    noc, ow = anchor.shape[1], anchor.shape[3]
    ocf = 1 if anchor.template_name == "depthwise_conv2d_nchw" else _divisor(noc, (4, 2), 1)
    owf = ow if ow <= 16 else 16 if ow % 16 == 0 else 8
    p = s.prims
    p.append(TileOp.make(e, [oc, w], [ocf, owf], [f"{oc}.o", f"{w}.o", f"{oc}.i", f"{w}.i"]))
    p.append(ReorderOp.make(e, [n, f"{oc}.o", h, f"{w}.o", f"{oc}.i", f"{w}.i"]))
    fused = f"{e}.tile"
    p.append(FuseOp.make(e, [n, f"{oc}.o", h], fused))
    s.parallel(e, fused, anchor)
    p.append(VectorizeOp.make(e, f"{w}.i"))
    p.append(ComputeAtOp.make(a, e, f"{w}.o"))
    p.append(ReorderOp.make(a, [an, ah, *anchor.reduce_names, aoc, aw]))
    p.append(UnrollOp.make(a, aoc))
    p.append(VectorizeOp.make(a, aw))


def dense(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[..., n] = sum_k x[..., k] w[n, k]: both operands are contiguous in k, so k is split
    by the vector width and rfactor-ed (vector partial sums), the outputs run in parallel.
    Up to 8 outputs of a row are computed together, their partial sums interleaved (k.o
    outside the unrolled outputs): one output's sum is a chain of dependent multiply-adds,
    eight are independent chains that fill the FMA pipelines (784x512 GEMV: 35 -> 31 us)."""
    k = anchor.reduce_names[-1]
    K = anchor.reduce_shape[-1]
    lanes = s.lanes(anchor.element_type)
    p = s.prims
    *rows, cols = anchor.spatial_names
    group = _divisor(anchor.shape[-1], (8, 4, 2), 1) if rows and K >= 2 * lanes else 1
    axes = s.axes(e)
    if group > 1:
        *erows, ecol = axes
        p.append(SplitOp.make(e, ecol, group, None, f"{ecol}.o", f"{ecol}.i"))
        axes = [*erows, f"{ecol}.o", f"{ecol}.i"]
    outer = s._fuse(e, axes[:-1] if group > 1 else axes)
    assert outer is not None
    s.parallel(e, outer, anchor)
    inner = outer
    if a != e:
        p.append(ComputeAtOp.make(a, e, outer))
        inner = rows[0] if group > 1 else cols
    if K >= 2 * lanes:
        rf = f"{a}.rf"
        p.append(SplitOp.make(a, k, lanes, None, f"{k}.o", f"{k}.i"))
        p.append(RFactorOp.make(a, f"{k}.i", rf))
        if group > 1:
            p.append(ReorderOp.make(rf, [*rows, f"{k}.o", cols, f"{k}.i"]))
            p.append(UnrollOp.make(rf, cols))
        else:
            p.append(ReorderOp.make(rf, [*anchor.spatial_names, f"{k}.o", f"{k}.i"]))
        p.append(VectorizeOp.make(rf, f"{k}.i"))
        p.append(ComputeAtOp.make(rf, a, inner))


ROW_BLOCK_BYTES = 512 * 1024
"""The left-operand rows one block of matmul row tiles reads (a quarter of a 2 MiB L2: the
column panel of the right operand and the output share it)."""


def matmul(s: KernelScheduler, anchor: ComputeOp, a: str, e: str) -> None:
    """out[b..., i, j] = sum_k x[b..., i, k] y[b..., k, j]: register tiles of rows x one or two
    vectors of columns (as many accumulators as the target's registers allow: 14x2 zmm, 6x2
    ymm), rows unrolled. The row tiles are grouped in blocks (i.b) whose rows of x fit in
    ROW_BLOCK_BYTES; the tiles of one block run one after another on each column panel of y
    (i.t innermost), so the panel is read from L2 by all but the first of them instead of
    from memory: 1024^3 went from 0.6x to 0.95x numpy's sgemm on one thread. The tile loops,
    in that order, are one parallel loop (threads take runs of consecutive tiles)."""
    *batch, i, j = s.axes(e)
    *abatch, ai, aj = anchor.spatial_names
    m, n = anchor.shape[-2], anchor.shape[-1]
    vec = s.lanes(anchor.element_type)
    budget = s.accumulators
    nf = n if n <= 2 * vec else 2 * vec if n % (2 * vec) == 0 else vec
    if m <= 2:  # a GEMV: spend the accumulators on columns (independent FMA chains)
        nf = next((v * vec for v in (8, 4) if n % (v * vec) == 0 and v * m <= budget), nf)
    rows = max(budget // max(-(-nf // vec), 1), 1)
    mf = _divisor(m, tuple(range(rows, 1, -1)), min(m, 4))
    depth = math.prod(anchor.reduce_shape)
    tile_bytes = mf * depth * max(element_bits(anchor.element_type) // 8, 1)
    per_block = max(1, min(-(-m // mf), ROW_BLOCK_BYTES // tile_bytes))
    p = s.prims
    p.append(TileOp.make(e, [i, j], [mf, nf], [f"{i}.o", f"{j}.o", f"{i}.i", f"{j}.i"]))
    p.append(SplitOp.make(e, f"{i}.o", per_block, None, f"{i}.b", f"{i}.t"))
    p.append(ReorderOp.make(e, [*batch, f"{i}.b", f"{j}.o", f"{i}.t", f"{i}.i", f"{j}.i"]))
    par = s._fuse(e, [*batch, f"{i}.b", f"{j}.o", f"{i}.t"])
    assert par is not None
    s.parallel(e, par, anchor)
    p.append(VectorizeOp.make(e, f"{j}.i"))
    p.append(ComputeAtOp.make(a, e, par))
    p.append(ReorderOp.make(a, [*abatch, *anchor.reduce_names, ai, aj]))
    p.append(UnrollOp.make(a, ai))
    p.append(VectorizeOp.make(a, aj))


TEMPLATES: dict[str, Template] = {
    "conv2d_nchwc": Template(conv2d_nchwc, min_rank=5),
    "conv2d_nchw": Template(conv2d_nchw, min_rank=4),
    "depthwise_conv2d_nchw": Template(conv2d_nchw, min_rank=4),
    "dense": Template(dense, cache_write=False, min_rank=1),
    "matmul": Template(matmul, min_rank=2, intermediate=True),
}


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def _readers(value: SSAValue) -> list[Operation]:
    """The te ops (or the return) that read a tensor."""
    found: list[Operation] = []
    for use in value.uses:
        op: Operation | None = use.operation
        while op is not None and not isinstance(op, ComputeOp | ExternOp | func.ReturnOp):
            op = op.parent_op()
        if op is not None and op not in found:
            found.append(op)
    return found


def _block_lanes(op: ComputeOp, lanes: int) -> int:
    """Vector lanes for a blocked-to-blocked layout transform: no wider than the innermost
    block of what it reads (NCHW8c -> NCHW16c moves two contiguous 8-lane runs; 16 lanes would straddle two
    source blocks and fall back to scalar code)."""
    for r in op.block.ops:
        if isinstance(r, ReadOp) and r.indices:
            inner = r.tensor.type.get_shape()[-1]  # type: ignore[attr-defined]
            if 1 < inner < lanes and lanes % inner == 0:
                lanes = inner
    return lanes


def _gathers_free(op: ComputeOp) -> bool:
    """Can the last axis be vectorized without gathers: does every read either index its
    last dimension by the stage's last axis, or not depend on that axis at all?"""
    if not op.shape:
        return True
    last = op.block.args[len(op.shape) - 1]
    for r in op.block.ops:
        if not isinstance(r, ReadOp) or not r.indices or _depends_on(r.indices[-1], last):
            continue
        if any(_depends_on(i, last) for i in r.indices[:-1]):
            return False
    return True


def _is_elementwise(op: ComputeOp) -> bool:
    """Does every read index the tensor with the stage's own axes (as far as they go), so
    recomputing it per reader costs only its arithmetic?"""
    args = list(op.block.args[: len(op.shape)])
    for r in op.block.ops:
        if isinstance(r, ReadOp) and r.indices:
            idx = list(r.indices)
            tail = args[len(args) - len(idx) :] if len(idx) <= len(args) else None
            if tail is None or any(
                i is not a and not _is_constant_index(i) for i, a in zip(idx, tail, strict=True)
            ):
                return False
    return True


def _is_constant_index(v: SSAValue) -> bool:
    return isinstance(v.owner, Operation) and not v.owner.operands


def _innermost_is_spatial(op: ComputeOp) -> bool:
    """Do the reads' last indices follow the last spatial axis (so vectors along it are
    contiguous), rather than a reduction axis?"""
    if not op.shape:
        return False
    last = op.block.args[len(op.shape) - 1]
    reads = [r for r in op.block.ops if isinstance(r, ReadOp) and r.indices]
    if not reads:
        return True
    return all(_depends_on(r.indices[-1], last) for r in reads)


def _depends_on(v: SSAValue, arg: SSAValue) -> bool:
    if v is arg:
        return True
    owner = v.owner
    if isinstance(owner, Operation):
        return any(_depends_on(o, arg) for o in owner.operands)
    return False


def _applies(fn: func.FuncOp, prims: list[Primitive]) -> bool:
    """Does this schedule apply to the kernel? (tried on a copy)"""
    clone = fn.clone()
    sched = ScheduleOp([p.clone() for p in prims])
    ret = clone.body.block.last_op
    assert ret is not None
    clone.body.block.insert_op_before(sched, ret)
    try:
        ScheduleState(clone).apply_all()
    except DiagnosticError:
        return False
    return True


def default_schedule(
    fn: func.FuncOp, vector_bits: int = NATIVE_BITS, min_parallel_work: int = MIN_PARALLEL_WORK
) -> ScheduleOp:
    scheduler = KernelScheduler(fn, vector_bits, min_parallel_work)
    prims = scheduler.plan(templates=True)
    if not _applies(fn, prims):
        prims = scheduler.plan(templates=False)
        if not _applies(fn, prims):
            prims = []
    return ScheduleOp(prims)


def is_te_kernel(fn: func.FuncOp) -> bool:
    return not fn.is_declaration and any(
        isinstance(op, ComputeOp | ConstantOp | ExternOp) for op in fn.body.block.ops
    )


@dataclass(frozen=True)
class ApplyDefaultSchedulePass(ModulePass):
    """Adds `te.schedule` with the default schedule to te kernels that have none."""

    name = "apply-default-schedule"

    vector_bits: int = NATIVE_BITS
    """The target's vector register width: 512 with AVX-512, 256 with AVX2."""

    min_parallel_work: int = MIN_PARALLEL_WORK
    """Stages with less work (elements x reduction extent) get no parallel loop."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or not is_te_kernel(fn):
                continue
            if any(isinstance(o, ScheduleOp) for o in fn.body.block.ops):
                continue
            sched = default_schedule(fn, self.vector_bits, self.min_parallel_work)
            ret = fn.body.block.last_op
            assert ret is not None
            Rewriter.insert_op(sched, InsertPoint.before(ret))
