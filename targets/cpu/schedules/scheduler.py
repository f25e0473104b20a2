"""The CPU default schedule's engine: stage analysis, inlining, the generic injective and
reduction schedules, and the Template record that the register-blocked x86 templates fill."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import IndexType, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from nnvm.dialects.te.analysis import (
    ANY_MULTIPLE,
    LaneKind,
    depends_on,
    gathers_free,
    index_value,
    innermost_is_spatial,
    is_elementwise,
    lane_index_kind,
    readers,
)
from nnvm.dialects.te.exprs import constant_value, element_bits, native_lanes
from nnvm.dialects.te.ops import ComputeOp, ReadOp
from nnvm.dialects.te.schedule import (
    CacheWriteOp,
    ComputeAtOp,
    ComputeInlineOp,
    FuseOp,
    ParallelOp,
    PrefetchOp,
    Primitive,
    ReorderOp,
    RFactorOp,
    SplitOp,
    VectorizeOp,
)
from nnvm.dialects.te.stage_tree import placeholder_name
from nnvm.lowering.te_to_loops.vectorize import MAX_LANES, NATIVE_BITS
from nnvm.support.config_space import ConfigSpace

MIN_PARALLEL_WORK = 1 << 15
"""Elements x reduction extent below which a stage runs on one thread (the fork/join costs
a few microseconds, and more when the other core is busy)."""


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
        min_parallel_work: int | None = MIN_PARALLEL_WORK,
        templates: dict[str, Template] | None = None,
        config: ConfigSpace | None = None,
    ):
        self.fn = fn
        self.templates = templates or {}
        self.config = config if config is not None else ConfigSpace()
        """The templates' knobs (tile shapes, ...): defaults unless a tuner chose them."""
        self.vector_bits = vector_bits
        self.min_parallel_work = min_parallel_work
        block = fn.body.block
        ret = block.last_op
        outputs = set(ret.operands) if isinstance(ret, func.ReturnOp) else set()
        self.infos: dict[SSAValue, StageInfo] = {}
        self.order: list[StageInfo] = []
        for op in block.ops:
            if isinstance(op, ComputeOp):
                info = StageInfo(op, readers(op.result), op.result in outputs)
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
                if t in self.templates and info.name not in self.done:
                    self._template(info, self.templates[t])
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
        if is_elementwise(op):
            # each reader recomputes it: a few arithmetic ops, or a transcendental function
            # where every reader computes it in vectors. Softmax's exp, read by the sum and the
            # division, inlined into the sum over a 29-token row (shorter than two vectors: no
            # rfactor, scalar) made LLaMA's softmax run at 1% of the machine's bandwidth; over
            # ViT's 197 keys the vectorized sum recomputes it more cheaply than a buffer would
            if len(info.readers) == 1 or not _calls_transcendental(op):
                return True
            return not any(self._scalar_reduction(r) for r in info.readers)
        if _small_operand(op, info.readers):
            return False
        if len(info.readers) != 1:
            return False
        # a stage that gathers taps itself (the H pass of a separable resize), read at several
        # places by its reader (the W pass's taps), would redo all its taps for each: DeepLab's
        # bilinear upsample computed each H-interpolated value twice, 3.7 ms for 5.5 MB
        return _read_counts(info.readers[0])[op.result] == 1 or not _has_taps(op)

    def _scalar_reduction(self, op: Operation) -> bool:
        """A reduction the generic schedule (`reduction`) cannot vectorize, so a formula
        inlined into it runs scalar."""
        if not isinstance(op, ComputeOp) or op.reduce_kind is None or not op.reduce_shape:
            return False
        if op.shape and innermost_is_spatial(op):
            return False
        return not _rfactor_splits(op.reduce_shape, self.lanes(op.element_type))

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
        pay for the fork/join (a recurrence's per-step stages, a small model's kernels) or the
        target has no threads (min_parallel_work None)."""
        if self.min_parallel_work is None:
            return
        work = 1
        for d in (*op.shape, *op.reduce_shape):
            work *= d
        if work >= self.min_parallel_work:
            self.prims.append(ParallelOp.make(name, axis))

    def pad_at(self, anchor: ComputeOp, a: str, axis: str) -> None:
        """Compute the padded input of a conv inside its output tile (`axis` of stage `a`):
        only the rows and columns the tile reads are copied, into a small buffer that stays
        in L1, instead of a whole padded copy of the input making a round trip to memory.
        Only for convs whose tiles read input blocks no other tile of their rows reads
        (depthwise, conv2d.py `_own_input_blocks`): a dense conv of several tiles a row
        re-copies the rows for every tile, which costs more than the one whole copy
        (ResNet-18 measured)."""
        for pad in self.tile_pads(anchor):
            self.prims.append(VectorizeOp.make(pad.name, pad.op.spatial_names[-1]))
            self.prims.append(ComputeAtOp.make(pad.name, a, axis))
            self.done.add(pad.name)

    def tile_pads(self, anchor: ComputeOp) -> list[StageInfo]:
        """The pad stages `pad_at` can move into the anchor's tile: read by it alone, not
        an output, not yet scheduled."""
        pads = []
        for r in anchor.block.ops:
            if not isinstance(r, ReadOp):
                continue
            pad = self.infos.get(r.tensor)
            if pad is None or pad.op.template_name != "pad" or pad.name in self.done:
                continue
            if pad.readers != [anchor] or pad.is_output or not pad.op.shape:
                continue
            pads.append(pad)
        return pads

    def prefetch_weights(
        self,
        a: str,
        anchor: ComputeOp,
        axis: str,
        row: int,
        distance: int,
        knob: str,
        on: bool = True,
        spread: str | None = None,
    ) -> None:
        """Prefetch the anchor's right operand (its weights) `distance` bytes ahead of loop
        `axis` of stage `a`, each iteration of which reads `row` elements further on; the
        iterations ahead are the knob `knob` (0 turns it off; `on` False makes 0 the
        default). The matmul's column panels and the NCHWc conv's weight rows use it.
        `spread`: an outer loop whose iterations share the fetch (te.prefetch's spread)."""
        weights = right_operand(anchor)
        ahead = distance // (row * max(element_bits(anchor.element_type) // 8, 1))
        ahead = self.knob(knob, sorted({0, ahead}), ahead if on else 0)
        if weights is not None and ahead:
            self.prims.append(PrefetchOp.make(a, weights, axis, ahead, spread))

    def knob(self, name: str, candidates, default):
        """A template's choice: `default` unless the config (a tuning record) says otherwise;
        recorded as a knob of the kernel's search space."""
        return self.config.knob(name, candidates, default)

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

    def stage(self, name: str) -> ComputeOp:
        """The compute of a stage, by name (a cache_write copy: its compute's)."""
        base = name.removesuffix(".local")
        for info in self.order:
            if info.name == base:
                return info.op
        raise KeyError(name)

    def axes(self, name: str) -> list[str]:
        """The spatial axes of a stage (a cache_write copy has those of its compute)."""
        return list(self.stage(name).spatial_names)

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
        # a channel block of whole native vectors, or of one narrower vector (NCHW8c: a ymm;
        # RegNetY's whole padded copy of a 6x112x112x8 input fused over all four axes took
        # half of its conv's 0.61 ms, 0.44 ms with the columns a loop)
        whole = shape[-1] % lanes == 0 or (shape[-1] >= 4 and lanes % shape[-1] == 0)
        blocked = len(shape) >= 3 and whole and shape[-1] <= MAX_LANES
        if blocked and not self._flat(op) and (self._gathers_free(op) or self._lanes_load(op)):
            # a pad's bounds test, a concat's select, a broadcast read (a bias, an SE scale)
            # needs the axes, which a loop fused over all of them recomputes with div/mod for
            # every vector; here the outer axes are fused, the columns stay a loop, the
            # channel block is one vector (ResNet's 58x58x64 pad: 0.1 -> 0.05 ms; SqueezeNet's
            # concat of two 4x64x55x55 maps 1.25 -> 0.46 ms, a memcpy's time)
            outer = self.fuse(name, axes[:-2])
            p.append(VectorizeOp.make(name, axes[-1]))
            if outer is not None:
                self.parallel(name, outer, op)
            return
        if not self._gathers_free(op):
            if self._unblock_rows(name, op) or self._block_rows(name, op):
                return
            if self._transposed(name, op):
                return
            # vectors along the last axis would need gathers (NCHW16c -> NCHW reads with a
            # stride of 16): a plain inner loop under the fused outer axes, so each element
            # costs a load and a store instead of the div/mod chain of a fused index
            outer = self.fuse(name, axes[:-1])
            if outer is not None:
                self.parallel(name, outer, op)
            return
        # one loop over every axis only for a flat formula: any other index is rebuilt from
        # the fused one by div/mod for every vector, and a vector may straddle the runs of
        # a reshape (MobileViT's unfold, rows of 36 into 144: 1.18 ms, 8% of its roof)
        if len(shape) >= 2 and shape[-1] % lanes == 0 and total > lanes and self._flat(op):
            fused = f"{name}.fused"
            p.append(FuseOp.make(name, axes, fused))
            p.append(SplitOp.make(name, fused, lanes, None, f"{fused}.o", f"{fused}.i"))
            p.append(VectorizeOp.make(name, f"{fused}.i"))
            self.parallel(name, f"{fused}.o", op)
            return
        outer = self.fuse(name, axes[:-1])
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

    def _unblock_rows(self, name: str, op: ComputeOp) -> bool:
        """A transform out of a channel-blocked layout (NCHW16c -> NCHW: out[n, c, h, w] =
        P[n, c // 16, h, w, c % 16]) whose inlined producer P is costly (interpolation taps,
        a transcendental function): P is computed a row at a time in its own blocked layout,
        one vector per position (its taps and weights uniform across the vector), at the
        transform's loop over (n, c // 16, h), which then copies the row out channel by
        channel. Inlined, P ran scalar, each output element redoing its taps: DeepLab's
        bilinear x16 upsample into NCHW, 0.59 -> 0.26 ms."""
        producer = self._costly_producer(_unblocking_read(op))
        if producer is None:
            return False
        block = producer.op.shape[-1]
        if block > MAX_LANES:
            return False
        self._uninline(producer.name)
        axes = op.spatial_names
        n, c, *rest = axes
        p = self.prims
        p.append(SplitOp.make(name, c, block, None, f"{c}.o", f"{c}.i"))
        p.append(ReorderOp.make(name, [n, f"{c}.o", *rest[:-1], f"{c}.i", rest[-1]]))
        outer = self.fuse(name, [n, f"{c}.o", *rest[:-1]])
        assert outer is not None
        self.parallel(name, outer, op)
        p.append(ComputeAtOp.make(producer.name, name, outer))
        p.append(VectorizeOp.make(producer.name, producer.op.spatial_names[-1]))
        self.done.add(producer.name)
        return True

    def _block_rows(self, name: str, op: ComputeOp) -> bool:
        """A transform into a channel-blocked layout (NCHW -> NCHW16c: out[n, c // 16, h, w,
        c % 16] = P[n, c, h, w]) whose inlined producer P is costly (a transcendental function,
        interpolation taps): P is computed for the block's channels a row at a time in its own
        layout, vectorized along the row, at the transform's loop over (n, c // 16, h), which
        then gathers the row into the block. Inlined, P ran scalar for every element: a
        UNet's GroupNorm + SiLU into NCHW16c, 1.5 ms for 4 MB."""
        producer = self._costly_producer(_blocking_read(op))
        if producer is None:
            return False
        lanes = self.lanes(producer.op.element_type)
        if producer.op.shape[-1] < lanes:
            return False  # rows shorter than a vector: P would not vectorize along them
        self._uninline(producer.name)
        axes = op.spatial_names
        outer = self.fuse(name, axes[:-2])
        assert outer is not None
        self.parallel(name, outer, op)
        p = self.prims
        p.append(ComputeAtOp.make(producer.name, name, outer))
        last = producer.op.spatial_names[-1]
        p.append(SplitOp.make(producer.name, last, lanes, None, f"{last}.o", f"{last}.i"))
        p.append(VectorizeOp.make(producer.name, f"{last}.i"))
        self.done.add(producer.name)
        return True

    def _costly_producer(self, read: ReadOp | None) -> StageInfo | None:
        """The stage `read` reads when it is inlined, read there alone, and costly."""
        producer = self.infos.get(read.tensor) if read is not None else None
        if producer is None or producer.name not in self.inlined or len(producer.readers) != 1:
            return None
        return producer if self._costly(producer.op) else None

    def _costly(self, op: ComputeOp) -> bool:
        """Does the formula, through the producers inlined into it, evaluate a transcendental
        function or gather taps (a SiLU's sigmoid under its product, an upsample's taps)?"""
        if _has_taps(op) or _calls_transcendental(op):
            return True
        for r in op.block.ops:
            producer = self.infos.get(r.tensor) if isinstance(r, ReadOp) else None
            if producer is not None and producer.name in self.inlined and self._costly(producer.op):
                return True
        return False

    def _uninline(self, stage: str) -> None:
        """Take back the compute_inline of `stage` (a transform computes it itself)."""
        self.inlined.discard(stage)
        self.prims = [
            p
            for p in self.prims
            if not (isinstance(p, ComputeInlineOp) and p.properties["stage"] == StringAttr(stage))
        ]

    def _transposed(self, name: str, op: ComputeOp) -> bool:
        """A transpose (through inlined reshapes): the tensor it reads is contiguous along
        one output axis r that is not the last. The loops run r just inside the last axis's
        tiles of TRANSPOSE_TILE: each output row segment reads TRANSPOSE_TILE lines of the
        input, and the next TRANSPOSE_TILE - 1 values of r read the same lines again from L1
        (r outermost, as a plain loop nest has it, reread them from L2 or memory for every
        r: SegFormer's [1, 4096, 256] -> [1, 256, 64, 64] tokens-to-NCHW copy 6.8 ms for 4 MB)."""
        axes, shape = op.spatial_names, op.shape
        deps, rows = self._innermost_read_axes(op)
        if len(shape) < 2 or len(deps) != 1:
            return False
        (r,) = deps
        last = len(shape) - 1
        if r == last or shape[r] < 2:
            return False
        if rows < TRANSPOSE_MIN_ROW and self._reuse_pass_bytes(op, r) <= REREAD_PASS_BYTES:
            return False
        p = self.prims
        inner = axes[last]
        tile = min(shape[last], TRANSPOSE_TILE)
        outer_axes = [a for k, a in enumerate(axes[:-1]) if k != r]
        if tile < shape[last]:
            p.append(SplitOp.make(name, inner, tile, None, f"{inner}.o", f"{inner}.i"))
            outer_axes.append(f"{inner}.o")
            inner = f"{inner}.i"
        p.append(ReorderOp.make(name, [*outer_axes, axes[r], inner]))
        outer = self.fuse(name, outer_axes)
        if outer is not None:
            self.parallel(name, outer, op)
        return True

    def _reuse_pass_bytes(self, op: ComputeOp, r: int) -> int:
        """What the untiled nest reads between two uses of an input line: its loops inside
        axis r touch a line per element, and a line comes back after d steps of r, where d is
        the first step at which the reads (through inlined producers, with every other axis
        at 0) meet a line of step 0 again. An unblocking transform has d = 1 (the next channel
        of the block); one that also merges the channels with another axis (S3D's
        [C/16, T, H * W, 16] -> [C * T, H, W]) has d = T, and T passes over the plane between
        uses. Without such a step in reach the lines are not reused at all (0)."""
        args = op.block.args[: len(op.shape)]
        steps = min(op.shape[r], 2 * TRANSPOSE_TILE)
        first = self._read_lines(op, {args[r]: 0})
        if not first:
            return 0
        for d in range(1, steps):
            if first & self._read_lines(op, {args[r]: d}):
                return d * math.prod(op.shape[r + 1 :]) * CACHE_LINE_BYTES
        return 0

    def _read_lines(self, op: ComputeOp, env: dict[SSAValue, int]) -> set[tuple]:
        """The cache lines (tensor, outer indices, line of the last) that `op` reads at the
        point `env` (its axes' values; others 0), through inlined producers."""
        lines: set[tuple] = set()
        for read in op.block.ops:
            if not isinstance(read, ReadOp) or not read.indices:
                continue
            at = [index_value(i, env) for i in read.indices]
            if any(x is None for x in at):
                continue
            producer = self.infos.get(read.tensor)
            if producer is not None and producer.name in self.inlined:
                inner = dict(zip(producer.op.block.args, at, strict=False))
                lines |= self._read_lines(producer.op, inner)  # type: ignore[arg-type]
                continue
            per_line = max(CACHE_LINE_BYTES * 8 // element_bits(read.result.type), 1)
            lines.add((read.tensor, *at[:-1], at[-1] // per_line))  # type: ignore[operator]
        return lines

    def _innermost_read_axes(self, op: ComputeOp) -> tuple[set[int], int]:
        """The positions of `op`'s axes that the innermost index of the tensors it reads in
        memory depends on, looking through inlined producers, and the shortest innermost
        extent of those tensors (their contiguous rows; 0 when it reads none)."""
        args = list(op.block.args[: len(op.shape)])
        found: set[int] = set()
        rows = 0
        for r in op.block.ops:
            if not isinstance(r, ReadOp) or not r.indices:
                continue
            producer = self.infos.get(r.tensor)
            if producer is not None and producer.name in self.inlined:
                inner, extent = self._innermost_read_axes(producer.op)
                if not extent:
                    continue
                indices = [r.indices[k] for k in inner if k < len(r.indices)]
            else:
                indices = [r.indices[-1]]
                extent = r.tensor.type.get_shape()[-1]  # type: ignore[attr-defined]
            found |= {a for a, arg in enumerate(args) for i in indices if depends_on(i, arg)}
            rows = extent if not rows else min(rows, extent)
        return found, rows

    def _flat(self, op: ComputeOp) -> bool:
        """Is the formula a function of the element alone: every read (through inlined
        producers) indexes its tensor with the stage's own axes, all of them, in order, and the
        axes are used nowhere else? A loop fused over all axes then only advances pointers."""
        args = list(op.block.args[: len(op.shape)])
        for a in args:
            for use in a.uses:
                r = use.operation
                if not isinstance(r, ReadOp) or list(r.indices) != args:
                    return False
        for r in op.block.ops:
            if isinstance(r, ReadOp) and r.indices and list(r.indices) != args:
                return False
            producer = self.infos.get(r.tensor) if isinstance(r, ReadOp) else None
            if producer is not None and producer.name in self.inlined:
                if not self._flat(producer.op):
                    return False
        return True

    def _lanes_load(self, op: ComputeOp) -> bool:
        """Does a vector of the last axis read every tensor (through inlined producers) as
        one contiguous vector or one broadcast value, by the index arithmetic te-to-loops
        folds? A transform out of a channel block and back into one (S3D's (2+1)-D blocks move
        [T, C/16, H, W, 16] to [C/16, T, H * W, 16] between their spatial and temporal convs)
        indexes the block's channels as (16 j + m) // 16 and (16 j + m) % 16 through its
        reshapes: structurally m reaches every index, but the vector of m is one load."""
        args = op.block.args[: len(op.shape)]
        lanes = op.shape[-1]
        env: dict[SSAValue, LaneKind] = {a: ("u", 1) for a in args[:-1]}
        env[args[-1]] = ("l", ANY_MULTIPLE)  # the vector is the whole axis: it starts at 0
        return self._lane_reads(op, env, lanes)

    def _lane_reads(self, op: ComputeOp, env: dict[SSAValue, LaneKind], lanes: int) -> bool:
        lane_args = [a for a, (kind, _) in env.items() if kind == "l"]
        for r in op.block.ops:
            if not isinstance(r, ReadOp):
                lane_operand = any(
                    isinstance(o.type, IndexType) and any(depends_on(o, a) for a in lane_args)
                    for o in r.operands
                )
                if lane_operand and not all(isinstance(t, IndexType) for t in r.result_types):
                    return False  # a lane index used as data (a pad's bounds test)
                continue
            if not r.indices:
                continue
            kinds = [lane_index_kind(i, env, lanes) for i in r.indices]
            if any(k is None for k in kinds):
                return False
            producer = self.infos.get(r.tensor)
            if producer is not None and producer.name in self.inlined:
                inner = dict(zip(producer.op.block.args, kinds, strict=False))
                if not self._lane_reads(producer.op, inner, lanes):  # type: ignore[arg-type]
                    return False
            elif any(k[0] == "l" for k in kinds[:-1]):  # type: ignore[index]
                return False  # a lane index outside the tensor's contiguous axis
        return True

    def _gathers_free(self, op: ComputeOp) -> bool:
        """`gathers_free` through inlined producers: a reshape of an inlined NCHW16c -> NCHW
        transform reads its input along the last axis, but the transform's own reads stride
        by 16 (yolo's head: a fused vector loop of gathers, 1.8 ms for 0.9 MB)."""
        if not gathers_free(op):
            return False
        last = op.block.args[len(op.shape) - 1] if op.shape else None
        for r in op.block.ops:
            if not isinstance(r, ReadOp) or last is None or not r.indices:
                continue
            producer = self.infos.get(r.tensor)
            if producer is None or producer.name not in self.inlined:
                continue
            if depends_on(r.indices[-1], last) and not self._gathers_free(producer.op):
                return False
        return True

    def _reblock(self, name: str, op: ComputeOp, lanes: int) -> None:
        """A blocked-to-blocked transform: the block axis split into source-block vectors, the
        axes above the innermost two fused and parallel (no div/mod per vector)."""
        axes, last = op.spatial_names, op.spatial_names[-1]
        outer = self.fuse(name, axes[:-2])
        self.prims.append(SplitOp.make(name, last, lanes, None, f"{last}.o", f"{last}.i"))
        self.prims.append(VectorizeOp.make(name, f"{last}.i"))
        if outer is not None:
            self.parallel(name, outer, op)

    def fuse(self, name: str, axes: list[str]) -> str | None:
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
        if spatial and innermost_is_spatial(op):
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
            par = self.fuse(name, spatial[:-2] if column else spatial[:-1])
            if par is not None:
                self.parallel(name, par, op)
            return
        par = self.fuse(name, spatial)
        if _rfactor_splits(rshape, lanes):
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
    reduce_kinds: tuple[str, ...] = ("sum",)
    """The reductions the template blocks (a pool's window is a sum or a max)."""

    def applies(self, op: ComputeOp) -> bool:
        """Register blocking needs work: an empty output or reduction gets the plain loops."""
        nonempty = all(d > 0 for d in (*op.shape, *op.reduce_shape))
        return len(op.shape) >= self.min_rank and op.reduce_kind in self.reduce_kinds and nonempty


# ----------------------------------------------------------------------------------------------
# Templates: the register-blocked schedules of the complex ops
# ----------------------------------------------------------------------------------------------


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


def _rfactor_splits(reduce_shape: tuple[int, ...] | list[int], lanes: int) -> bool:
    """Is the innermost reduce axis long enough for the generic schedule to split it into
    vector lanes (an rfactor stage)? Two vectors at least."""
    return reduce_shape[-1] >= 2 * lanes


def _read_counts(op: Operation) -> Counter[SSAValue]:
    """How many places of `op`'s formula read each tensor."""
    return Counter(r.tensor for r in op.walk() if isinstance(r, ReadOp))


_CHEAP_MATH = (
    math_dialect.SqrtOp,
    math_dialect.RsqrtOp,
    math_dialect.AbsFOp,
    math_dialect.AbsIOp,
    math_dialect.FloorOp,
    math_dialect.CeilOp,
    math_dialect.RoundOp,
    math_dialect.RoundEvenOp,
    math_dialect.TruncOp,
    math_dialect.CopySignOp,
    math_dialect.FmaOp,
)
"""math ops that are one instruction (or a few) on x86; the others are polynomial expansions."""


def _calls_transcendental(op: ComputeOp) -> bool:
    """Does the formula evaluate exp, log, erf, tanh, pow, a trigonometric function, ...?"""
    return any(o.dialect_name() == "math" and not isinstance(o, _CHEAP_MATH) for o in op.walk())


def _unblocking_read(op: ComputeOp) -> ReadOp | None:
    """The read of a transform out of a channel-blocked layout: the formula is one read
    P[a0, a1 // B, a2, ..., a_{n-1}, a1 % B] of the stage's axes a0..a_{n-1} (n >= 3)."""
    term = op.block.last_op
    value = term.operands[0] if term is not None and term.operands else None
    read = value.owner if value is not None else None
    args = list(op.block.args[: len(op.shape)])
    if not isinstance(read, ReadOp) or len(args) < 3 or len(read.indices) != len(args) + 1:
        return None
    idx = list(read.indices)
    div, rem = idx[1].owner, idx[-1].owner
    if not (isinstance(div, arith.FloorDivSIOp) and isinstance(rem, arith.RemSIOp)):
        return None
    if div.lhs is not args[1] or rem.lhs is not args[1]:
        return None
    block = read.tensor.type.get_shape()[-1]  # type: ignore[attr-defined]
    if any(constant_value(d.owner) != block for d in (div.rhs, rem.rhs)):  # type: ignore[arg-type]
        return None
    if idx[0] is not args[0] or idx[2:-1] != args[2:]:
        return None
    return read


def _blocking_read(op: ComputeOp) -> ReadOp | None:
    """The read of a transform into a channel-blocked layout: out[a0, a1, ..., a_{n-1}] reads
    P[a0, a1 * B + a_{n-1}, a2, ..., a_{n-2}] (B = the stage's last extent, n >= 4), the
    formula's only read (a select may zero the padding channels of the last block)."""
    args = list(op.block.args[: len(op.shape)])
    reads = [r for r in op.block.ops if isinstance(r, ReadOp)]
    if len(args) < 4 or len(reads) != 1 or len(reads[0].indices) != len(args) - 1:
        return None
    read = reads[0]
    idx = list(read.indices)
    if idx[0] is not args[0] or idx[2:] != args[2:-1]:
        return None
    add = idx[1].owner
    if not isinstance(add, arith.AddiOp):
        return None
    for scaled, lane in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        mul = scaled.owner
        if lane is not args[-1] or not isinstance(mul, arith.MuliOp):
            continue
        for axis, factor in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
            if axis is args[1] and constant_value(factor.owner) == op.shape[-1]:  # type: ignore[arg-type]
                return read
    return None


TRANSPOSE_TILE = 64
"""Elements of the last output axis a transpose's inner loop covers (64 input lines, 4 KiB,
stay in L1 across the loop over the axis the input is contiguous along)."""
TRANSPOSE_MIN_ROW = 64
"""The shortest contiguous input rows for which a transpose runs in tiles: rows of a channel
block (NCHW16c -> NCHW: 16 floats, one cache line) make consecutive output elements read
consecutive lines, which the hardware prefetcher streams; tiled, SegFormer's
NCHW16c -> [1, 256, 4096] took 1.6-1.9 ms instead of 0.86."""
CACHE_LINE_BYTES = 64
REREAD_PASS_BYTES = 1024 * 1024
"""A transpose of short rows (a channel block: NCHW16c -> NCHW) still runs in tiles when the
untiled nest reads more than this between two uses of an input line (half of a 2 MiB L2; see
`_reuse_pass_bytes`): untiled, each of the block's 16 channels reads the whole plane again,
from L3. DPT's depth head unblocks 32 channels of 224 x 224 (3.2 MB a block) into a flattened
[32, 50176]: 4.1 -> 3.3 ms (what is left is the reshape's div/mod for every element). S3D
unblocks [C/16, T, H * W, 16] into [C * T, H, W]: a line comes back T = 8 channel rows later,
8 planes of 0.8 MB on: 19.0 -> 10.1 ms. Below it the plane stays in L2 and the rows stream
untiled (see TRANSPOSE_MIN_ROW). SegFormer's and a UNet's unblocking transforms take the
tiles too (SegFormer-B0 0.93 of its time, the UNet unchanged)."""
SMALL_OPERAND_RATIO = 16
"""A data-movement stage (reshape, broadcast, layout transform) with at most 1/16 of the
elements of every stage reading it is computed once into its own buffer, not inlined: it is a
broadcast operand (a group norm's per-channel scale, moved from [N, G, 1] groups to NCHW16c
channel blocks), and inlined its index arithmetic (divisions by the group size) ran for every
element of the reader and made the reader's lanes a gather: a UNet's GroupNorm + SiLU kernel
ran scalar, 2.5 ms for 2 MB."""


def _small_operand(op: ComputeOp, readers: list[Operation]) -> bool:
    """Is `op` a data-movement stage much smaller than all its readers (SMALL_OPERAND_RATIO)?"""
    size = math.prod(op.shape)
    return all(
        isinstance(r, ComputeOp) and math.prod(r.shape) >= SMALL_OPERAND_RATIO * max(size, 1)
        for r in readers
    )


def _has_taps(op: ComputeOp) -> bool:
    """Does the formula read one tensor at several places (a window, interpolation taps)?"""
    return any(n > 1 for n in _read_counts(op).values())


def _product(anchor: ComputeOp) -> arith.MulfOp | None:
    """The multiplication a product's formula (a matmul's, a conv's) yields, if it is one."""
    term = anchor.block.last_op
    value = term.operands[0] if term is not None and term.operands else None
    product = value.owner if value is not None else None
    return product if isinstance(product, arith.MulfOp) else None


def product_reads(anchor: ComputeOp) -> tuple[ReadOp, ReadOp] | None:
    """The two reads a product's formula multiplies (a matmul's or a conv's input and
    weights), when the formula is a plain product of two reads."""
    product = _product(anchor)
    if product is None:
        return None
    lhs, rhs = product.lhs.owner, product.rhs.owner
    if not isinstance(lhs, ReadOp) or not isinstance(rhs, ReadOp):
        return None
    return lhs, rhs


def right_operand(anchor: ComputeOp) -> str | None:
    """The stage name of the tensor a product's formula multiplies by (its second factor: a
    matmul's or a conv's weights), when that factor is a read."""
    product = _product(anchor)
    if product is None or not isinstance(product.rhs.owner, ReadOp):
        return None
    tensor = product.rhs.owner.tensor
    if isinstance(tensor, BlockArgument):
        return placeholder_name(tensor.index)
    owner = tensor.owner
    return owner.stage_name if isinstance(owner, ComputeOp) else None


def divisor(n: int, preferred: tuple[int, ...], default: int) -> int:
    for f in preferred:
        if f <= n and n % f == 0:
            return f
    return min(default, n)
