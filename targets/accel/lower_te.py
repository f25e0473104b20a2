"""lower-te-to-accel: a scheduled te kernel (te_layer.py's, or any of the same form) -> the
accelerator's instructions and micro-ops, as VTA's lowering did it: the schedule decides the
tiles, the buffers and the order; this file only reads it.

The kernel's output stage is walked loop by loop at compile time (an instruction stream has no
loops of its own). Stages computed at a loop are emitted at each of its iterations, by what
their scope and formula say they are:

* a copy (te.cache_read) into the inp, wgt or acc scope: **DMA loads**. The region one
  iteration reads (bound inference, bounds.py) is the copy's buffer, row-major over its entry
  grid; its source is a kernel argument, possibly through an inlined zero-`pad` stage, whose
  border becomes the LOAD's pad fields. Dimensions contiguous in both memories merge; the last
  two left are the 2-D DMA's rows and columns, any outer one repeats the instruction.
* a reduction in the acc scope tensorized with `gemm`: a GEMM **reset** over its region, then
  at each iteration of the loops above its copies' attach point the copies' loads and one
  **GEMM**. Its loops below that point are affine in the three buffers' entry indices (linear
  forms of the formula's reads, each read's tile checked to be exactly one entry); the two
  longest become the instruction's two loop levels (index factors from the forms) and the
  rest are enumerated into **micro-ops** (uop loop folding). Identical uop lists are shared.
* the output stage's body: its formula, through inlined stages, must be a cast to the 8-bit
  output of a chain of int32 add / shr / max / min / mul over an acc stage computed here, each
  with an immediate or another acc stage: one **ALU** instruction per op, in place on that
  stage's buffer (the ALU writes its operand), then a **STORE** of the out buffer (which
  mirrors acc, narrowed).

A te.double_buffer stage has two buffers that alternate between its instances, so the load of
step k+1 can run while step k computes (with tokens.py's dependences). A load of exactly what
a buffer already holds is dropped (weights stay resident across tiles). Buffers are allocated
per scope after a first walk measures each stage's largest region: a schedule whose buffers do
not fit is a located error naming the scope, the stages and the sizes."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te.intrinsics import NoMatch, TensorIntrinsic, match_structure
from nnvm.dialects.te.ops import ReadOp, YieldOp
from nnvm.dialects.te.stage_tree import IterVar, Stage
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.te_to_loops.bounds import (
    Form,
    Linear,
    formula_accesses,
    index_form,
    infer_region,
    root_forms,
)
from nnvm.lowering.te_to_loops.tensorize import intrinsic_name
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.isa import AluInsn, AluOp, Buffer, GemmInsn, Insn, MemInsn, Uop


def _largest(layout: dict, name: str) -> int:
    return (1 << layout[name][1]) - 1


MAX_LOOP = _largest(GemmInsn.LAYOUT, "lp0")
MAX_X = _largest(MemInsn.LAYOUT, "x_size")
MAX_PAD = _largest(MemInsn.LAYOUT, "y_pad_before")
MAX_FACTOR = {
    **{n: _largest(GemmInsn.LAYOUT, f"{n}_f0") for n in ("acc", "inp", "wgt")},
    **{n: _largest(AluInsn.LAYOUT, f"{n}_f0") for n in ("dst", "src")},
}
"""The widest loop, DMA row, padding and index factor the instruction fields encode."""
MAX_STEPS = 1 << 20
"""Loop iterations the walk takes before it calls the program too long (a schedule that
splits a large axis by 1 everywhere would otherwise run for minutes)."""
ALU_OPS: dict[type[Operation], AluOp] = {
    arith.AddiOp: AluOp.ADD,
    arith.ShRSIOp: AluOp.SHR,
    arith.MaxSIOp: AluOp.MAX,
    arith.MinSIOp: AluOp.MIN,
    arith.MuliOp: AluOp.MUL,
}
COMMUTATIVE = {AluOp.ADD, AluOp.MAX, AluOp.MIN, AluOp.MUL}
SCOPE_BUFFERS = {"inp": Buffer.INP, "wgt": Buffer.WGT, "acc": Buffer.ACC}


@dataclass
class Instance:
    """One instance of an on-chip stage: its region (per dimension lo and extent; the last two
    dimensions are one buffer entry) and where its entry grid starts in the buffer."""

    stage: Stage
    lo: list[int]
    ext: list[int]
    base: int

    @property
    def grid(self) -> list[int]:
        return self.ext[:-2]

    @property
    def strides(self) -> list[int]:
        out, step = [], 1
        for e in reversed(self.grid):
            out.append(step)
            step *= e
        return out[::-1]

    @property
    def entries(self) -> int:
        return math.prod(self.grid)


@dataclass
class Program:
    """What the lowering made: instructions (DRAM addresses relative to each argument's
    region, `relocs` names the region per instruction) and micro-ops."""

    insns: list[Insn] = field(default_factory=list)
    uops: list[Uop] = field(default_factory=list)
    relocs: dict[int, str] = field(default_factory=dict)

    def relocated(self, cfg: AccelConfig, offsets: dict[str, int]) -> list[Insn]:
        """The instructions with each DMA's DRAM address moved to its region, at `offsets`
        (bytes; each a multiple of the entry size of the buffers that address it)."""
        out = list(self.insns)
        for k, region in self.relocs.items():
            insn = out[k]
            assert isinstance(insn, MemInsn)
            entry = cfg.entry_bytes(insn.buffer.name.lower())
            assert offsets[region] % entry == 0, (region, offsets[region], entry)
            out[k] = replace(insn, dram_base=insn.dram_base + offsets[region] // entry)
        return out


def _subst(form: Form, vals: dict[IterVar, int]) -> Form:
    if form is None:
        return None
    out = Linear({}, form.const)
    for k, c in form.terms.items():
        if isinstance(k, IterVar) and k in vals:
            out.const += c * vals[k]
        else:
            out.terms[k] = c
    return out


class AccelLowering:
    """Walks one scheduled kernel; `lower()` gives the Program. `regions` maps the kernel's
    argument stages (arg0, ...) and its output to the DRAM image's region names."""

    def __init__(
        self,
        cfg: AccelConfig,
        state: ScheduleState,
        intrinsics: dict[str, TensorIntrinsic],
        regions: dict[str, str],
    ):
        self.cfg, self.state, self.intrinsics, self.regions = cfg, state, intrinsics, regions
        self.inlined = {
            s.value: s.compute for s in state.stages if s.attach == "inline" and s.compute
        }
        self.sizes: dict[str, int] = {}
        self._regions: dict[tuple, list] = {}
        self._offsets: dict[str, list[IterVar]] = {}
        self._root_forms: dict[tuple, dict[IterVar, Form]] = {}
        self._matched: set[str] = set()
        self._sources: dict[str, tuple[Stage, list[int]]] = {}
        self.bases: dict[str, int] = {}
        self.nbuf: dict[str, int] = {}

    # -- the walk ---------------------------------------------------------------------------

    def lower(self) -> Program:
        roots = [s for s in self.state.stages if s.compute is not None and s.attach == "root"]
        outputs = [s for s in roots if s.is_output]
        if len(outputs) != 1 or len(roots) != 1:
            extra = next((s for s in roots if not s.is_output), None)
            if extra is None:
                raise DiagnosticError(
                    self.state.fn, "lower-te-to-accel: the kernel has no one output stage"
                )
            raise DiagnosticError(
                extra.op,
                f"lower-te-to-accel: '{extra.name}' is computed at the root; on the "
                "accelerator every stage but the one output is computed at a loop of its "
                "reader (te.compute_at) or inlined",
            )
        out = outputs[0]
        for measuring in (True, False):
            self.measuring = measuring
            self.prog = Program()
            self.counts: dict[str, int] = {}
            self.held: dict[tuple[str, int], object] = {}
            self.live: dict[str, Instance] = {}
            self.uop_lists: dict[tuple[Uop, ...], int] = {}
            self.steps = 0
            if not measuring:
                self._allocate()
            full = Instance(out, [0] * len(out.shape), list(out.shape), 0)
            try:
                self._visit(out, full, 0, {})
            except UserError as err:  # an instruction field the values do not fit
                raise DiagnosticError(out.op, f"lower-te-to-accel: {err.message}") from None
        return self.prog

    def _level(self, stage: Stage) -> int:
        """Leaves from this index on are one instruction (below every attach point)."""
        level = 0
        for s in self.state.stages:
            if s.attach == "at" and s.attach_stage is stage:
                assert s.attach_var is not None
                level = max(level, stage.leaves.index(s.attach_var) + 1)
        return level

    def _extents(self, stage: Stage, inst: Instance) -> dict[IterVar, int]:
        roots = {v: e for v, e in zip(stage.spatial_root, inst.ext, strict=True)}
        return stage.leaf_extents(roots)

    def _visit(self, stage: Stage, inst: Instance, k: int, vals: dict[IterVar, int]) -> None:
        if k == self._level(stage):
            self._body(stage, inst, k, vals)
            return
        ext = self._extents(stage, inst)
        v = stage.leaves[k]
        for i in range(ext[v]):
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise DiagnosticError(
                    v.annotated_by or stage.op,
                    f"lower-te-to-accel: the schedule of '{stage.name}' makes a program of more "
                    f"than {MAX_STEPS} steps; split its loops into larger tiles",
                )
            now = {**vals, v: i}
            if not self._inside(stage, inst, now, k):
                continue  # a tail iteration past the region
            for child in self.state.stages:
                if child.attach == "at" and child.attach_stage is stage and child.attach_var is v:
                    self._stage(child, stage, inst, now, k)
            self._visit(stage, inst, k + 1, now)

    def _inside(self, stage: Stage, inst: Instance, vals: dict[IterVar, int], k: int) -> bool:
        box = self._own_region(stage, inst, vals, k)
        return all(e > 0 for e in box[1])

    def _own_region(
        self, stage: Stage, inst: Instance, vals: dict[IterVar, int], k: int
    ) -> tuple[list[int], list[int]]:
        """The part of the stage's instance the loops below leaf k cover (clipped to it)."""
        ext = self._extents(stage, inst)
        forms = self._forms(stage, ext)
        inner = {v: ext[v] for v in stage.leaves[k + 1 :]}
        lo, extent = [], []
        for d, v in enumerate(stage.spatial_root):
            f = _subst(forms.get(v), vals)
            if f is None or any(t not in inner for t in f.terms):
                lo.append(inst.lo[d])
                extent.append(inst.ext[d])
                continue
            a = f.const + sum(min(0, c * (inner[t] - 1)) for t, c in f.terms.items())
            b = f.const + sum(max(0, c * (inner[t] - 1)) for t, c in f.terms.items())
            a, b = max(a, 0), min(b, inst.ext[d] - 1)
            lo.append(inst.lo[d] + a)
            extent.append(max(0, b - a + 1))
        return lo, extent

    def _args(
        self, stage: Stage, inst: Instance, vals: dict[IterVar, int], ext: dict[IterVar, int]
    ) -> list[Form]:
        """The stage's formula arguments (spatial then reduction axes) as linear forms of its
        loops not in `vals`, in the coordinates of the whole tensor."""
        forms = self._forms(stage, ext)
        args: list[Form] = []
        for d, v in enumerate(stage.spatial_root):
            f = forms.get(v)
            args.append(None if f is None else _subst(Linear({}, inst.lo[d]).add(f), vals))
        for v in stage.reduce_root:
            args.append(_subst(forms.get(v), vals))
        return args

    def _region_of(
        self, producer: Stage, consumer: Stage, inst: Instance, vals: dict[IterVar, int], k: int
    ) -> tuple[list[int], list[int]]:
        """The region of `producer` one iteration of the consumer's leaf k reads: inferred once
        per consumer shape with the outer loops and the instance's offsets symbolic, then
        evaluated at this iteration."""
        key = (producer.name, consumer.name, k, tuple(inst.ext))
        regions = self._regions.get(key)
        if regions is None:
            ext = self._extents(consumer, inst)
            forms = self._forms(consumer, ext)
            offsets = self._offset_vars(consumer)
            args: list[Form] = []
            for v, o in zip(consumer.spatial_root, offsets, strict=True):
                f = forms.get(v)
                args.append(None if f is None else Linear.of(o).add(f))
            args += [forms.get(v) for v in consumer.reduce_root]
            accesses: list[list[Form]] = []
            assert consumer.compute is not None
            formula_accesses(
                consumer.compute.block,
                args,
                producer.value,
                self.inlined,
                accesses,
                ext,  # type: ignore[arg-type]
            )
            inner = {v: ext[v] for v in consumer.leaves[k + 1 :]}
            regions = infer_region(accesses, producer.shape, inner, {})
            self._regions[key] = regions
        env = {**vals, **dict(zip(self._offset_vars(consumer), inst.lo, strict=True))}
        lo, extent = [], []
        for d, (r, size) in enumerate(zip(regions, producer.shape, strict=True)):
            if r.offset is None:
                a, e = 0, size
            else:
                offset = _subst(r.offset, env)
                if offset is None or not offset.is_const():
                    raise DiagnosticError(
                        producer.op,
                        f"lower-te-to-accel: the region of '{producer.name}' in dimension {d} "
                        "depends on something other than the loops",
                    )
                a, e = offset.const, r.extent
            b = min(a + e, size)
            a = max(a, 0)
            lo.append(a)
            extent.append(max(0, b - a))
        return lo, extent

    def _offset_vars(self, stage: Stage) -> list[IterVar]:
        """Symbols for where an instance of the stage starts, per spatial dimension."""
        if stage.name not in self._offsets:
            self._offsets[stage.name] = [
                IterVar(f"{stage.name}.lo{d}", 1, False) for d in range(len(stage.spatial_root))
            ]
        return self._offsets[stage.name]

    def _forms(self, stage: Stage, ext: dict[IterVar, int]) -> dict[IterVar, Form]:
        key = (stage.name, tuple(ext[v] for v in stage.all_vars()))
        if key not in self._root_forms:
            self._root_forms[key] = root_forms(stage, ext)
        return self._root_forms[key]

    # -- stages -------------------------------------------------------------------------------

    def _stage(
        self, stage: Stage, consumer: Stage, cinst: Instance, vals: dict[IterVar, int], k: int
    ) -> None:
        lo, ext = self._region_of(stage, consumer, cinst, vals, k)
        scope = stage.scope
        if scope not in SCOPE_BUFFERS:
            raise DiagnosticError(
                stage.attached_by or stage.op,
                f"lower-te-to-accel: '{stage.name}' is computed at a loop but lives in "
                f"scope '{scope or 'global'}'; the accelerator computes on-chip stages only "
                "(te.set_scope or te.cache_read ... scope 'inp' | 'wgt' | 'acc')",
            )
        self._check_entry(stage, lo, ext, scope)
        compute = stage.compute
        assert compute is not None
        if compute.reduce_kind is None and scope == "acc":
            self._widen(stage, lo, ext, scope)
        inst = self._instance(stage, lo, ext)
        self.live[stage.name] = inst
        if compute.reduce_kind is None:
            self._load(stage, inst, scope)
            return
        self._gemm_stage(stage, inst)

    def _check_entry(self, stage: Stage, lo: list[int], ext: list[int], scope: str) -> None:
        want = {
            "inp": (self.cfg.batch, self.cfg.block_in),
            "wgt": (self.cfg.block_out, self.cfg.block_in),
            "acc": (self.cfg.batch, self.cfg.block_out),
        }[scope]
        if len(ext) < 3 or tuple(ext[-2:]) != want or any(lo[-2:]):
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}' in scope '{scope}' holds a region "
                f"{ext} whose last two dimensions are not one {scope} entry {list(want)}",
            )

    def _widen(self, stage: Stage, lo: list[int], ext: list[int], scope: str) -> None:
        """Copy one dimension whole where the DMA then moves fewer rows for less time (rows
        cost a latency each): the bias rows of a (bias, shift) table as one run of both, not
        one row each. At most doubles the copy; only for acc tables (tiling.py budgets two
        entries per output block for them; inp and wgt tiles fill their buffers)."""
        shape = list(stage.shape[:-2])

        def cost(e: list[int]) -> float:
            strides = _row_major(shape)
            sram = _row_major(e)
            dims = _merge(
                [_Dim(x, a, b, 0, 0, 0) for x, a, b in zip(e, strides, sram, strict=True)]
            )
            rows = math.prod(d.ext for d in dims[:-1])
            entries = math.prod(e)
            return (
                rows * self.cfg.dma_row_latency
                + entries * self.cfg.entry_bytes(scope) / self.cfg.dma_bytes_per_cycle
            )

        best, choice = cost(ext[:-2]), None
        for d in range(len(shape)):
            if ext[d] == shape[d] or shape[d] > 2 * ext[d]:
                continue
            wide = [*ext[:d], shape[d], *ext[d + 1 : -2]]
            c = cost(wide)
            if c < best:
                best, choice = c, d
        if choice is not None:
            lo[choice], ext[choice] = 0, shape[choice]

    def _instance(self, stage: Stage, lo: list[int], ext: list[int]) -> Instance:
        n = self.counts.get(stage.name, 0)
        self.counts[stage.name] = n + 1
        inst = Instance(stage, lo, ext, 0)
        if self.measuring:
            self.sizes[stage.name] = max(self.sizes.get(stage.name, 0), inst.entries)
            return inst
        inst.base = self.bases[stage.name] + (n % self.nbuf[stage.name]) * self.sizes[stage.name]
        return inst

    def _by_scope(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in self.state.stages:
            if s.name in self.sizes:
                assert s.scope is not None
                out.setdefault(s.scope, []).append(s.name)
        return out

    def _allocate(self) -> None:
        for scope, names in self._by_scope().items():
            used = 0
            for name in names:
                stage = self.state.by_name[name]
                self.nbuf[name] = 2 if stage.double_buffer is not None else 1
                self.bases[name] = used
                used += self.nbuf[name] * self.sizes[name]
            depth = self.cfg.depth(scope)
            if used > depth:
                parts = ", ".join(f"'{n}' {self.nbuf[n]} x {self.sizes[n]}" for n in names)
                first = self.state.by_name[names[0]]
                raise DiagnosticError(
                    first.attached_by or first.op,
                    f"lower-te-to-accel: the {scope} buffer holds {depth} entries; the "
                    f"schedule's {scope} stages need {used} ({parts}): choose smaller tiles",
                )

    # -- DMA ----------------------------------------------------------------------------------

    def _source(self, stage: Stage) -> tuple[Stage, list[int]]:
        """The kernel argument a copy stage reads and the zero padding before each dimension
        (an inlined pad stage between them)."""
        if stage.name not in self._sources:
            self._sources[stage.name] = self._find_source(stage)
        return self._sources[stage.name]

    def _find_source(self, stage: Stage) -> tuple[Stage, list[int]]:
        compute = stage.compute
        assert compute is not None
        ops = list(compute.block.ops)
        if (
            len(ops) != 2
            or not isinstance(ops[0], ReadOp)
            or list(ops[0].indices) != list(compute.block.args)
        ):
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}' is an on-chip stage but neither a copy "
                "(te.cache_read) nor a tensorized reduction",
            )
        src = self.state.by_value[ops[0].tensor]
        if src.is_placeholder:
            return src, [0] * len(src.shape)
        pad = src.compute
        if pad is None or src.attach != "inline" or pad.template_name != "pad":
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}' copies '{src.name}', which is neither a "
                "kernel argument nor an inlined zero pad of one (a DMA reads DRAM)",
            )
        reads = [op for op in pad.block.ops if isinstance(op, ReadOp)]
        sel = [op for op in pad.block.ops if isinstance(op, arith.SelectOp)]
        if len(reads) != 1 or len(sel) > 1 or (sel and not _is_zero(sel[0].rhs)):
            raise DiagnosticError(
                src.op, f"lower-te-to-accel: '{src.name}' is not a zero pad (the DMA pads zeros)"
            )
        arg = self.state.by_value[reads[0].tensor]
        env = {a: Linear.of(a) for a in pad.block.args}
        lows = []
        for d, i in enumerate(reads[0].indices):
            f = index_form(i, env)
            axis = pad.block.args[d]
            if f is None or f.terms != {axis: 1}:
                raise DiagnosticError(src.op, f"lower-te-to-accel: '{src.name}' is not a pad")
            lows.append(-f.const)
        return arg, lows

    def _load(self, stage: Stage, inst: Instance, scope: str) -> None:
        arg, lows = self._source(stage)
        slot = (self.counts[stage.name] - 1) % max(self.nbuf.get(stage.name, 1), 1)
        key = (arg.name, tuple(inst.lo), tuple(inst.ext))
        if self.held.get((stage.name, slot)) == key:
            return  # the buffer already holds it
        self.held[(stage.name, slot)] = key
        if self.measuring:
            return
        grid = list(arg.shape[:-2])
        dram_strides = _row_major(grid)
        dims = []
        for d in range(len(grid)):
            start = inst.lo[d] - lows[d]
            v0, v1 = max(0, start), min(grid[d], start + inst.ext[d])
            if v1 <= v0:
                raise DiagnosticError(
                    stage.op,
                    f"lower-te-to-accel: a region of '{stage.name}' lies wholly in the padding",
                )
            dims.append(
                _Dim(
                    inst.ext[d],
                    dram_strides[d],
                    inst.strides[d],
                    v0 - start,
                    start + inst.ext[d] - v1,
                    v0,
                )
            )
        self._dma(stage, dims, inst.base, SCOPE_BUFFERS[scope], self.regions[arg.name], store=False)

    def _dma(
        self, stage: Stage, dims: list[_Dim], sram: int, buffer: Buffer, region: str, store: bool
    ) -> None:
        dram0 = sum(d.first * d.dram for d in dims)
        dims = _merge(dims)
        if len(dims) == 1:
            dims = [_Dim(1, 0, 0, 0, 0, 0), *dims]
        *outer, y, x = dims
        for d in outer:
            if d.before or d.after:
                raise DiagnosticError(
                    stage.op,
                    f"lower-te-to-accel: '{stage.name}' pads a dimension other than the DMA's "
                    "rows and columns",
                )
        for d in (y, x):
            if d.before > MAX_PAD or d.after > MAX_PAD:
                raise DiagnosticError(
                    stage.op,
                    f"lower-te-to-accel: '{stage.name}' needs {max(d.before, d.after)} entries "
                    f"of padding; the DMA pads at most {MAX_PAD}",
                )
        xs = x.ext - x.before - x.after
        ys = y.ext - y.before - y.after
        for idx in itertools.product(*[range(d.ext) for d in outer]):
            s = sram + sum(i * d.sram for i, d in zip(idx, outer, strict=True))
            dram = dram0 + sum(i * d.dram for i, d in zip(idx, outer, strict=True))
            insn = MemInsn(
                store=store,
                buffer=buffer,
                sram_base=s,
                dram_base=dram,
                y_size=ys,
                x_size=xs,
                x_stride=y.dram if ys > 1 else xs,
                y_pad_before=y.before,
                y_pad_after=y.after,
                x_pad_before=x.before,
                x_pad_after=x.after,
            )
            self.prog.relocs[len(self.prog.insns)] = region
            self.prog.insns.append(insn)

    # -- GEMM -----------------------------------------------------------------------------

    def _gemm_stage(self, stage: Stage, inst: Instance) -> None:
        compute = stage.compute
        assert compute is not None
        tensorized = [v for v in stage.leaves if intrinsic_name(v.annotation) is not None]
        where = stage.attached_by or stage.op
        if compute.reduce_kind != "sum" or not tensorized:
            raise DiagnosticError(
                where,
                f"lower-te-to-accel: the reduction '{stage.name}' runs on the GEMM core: "
                "tensorize its block with the target's 'gemm'",
            )
        if not self.measuring:  # the reduction's initialisation
            dims = [_Dim(e, 0, s, 0, 0, 0) for e, s in zip(inst.grid, inst.strides, strict=True)]
            loops, uops = self._fold(
                where, [(d.ext, {"acc": d.sram}) for d in dims], {"acc": inst.base}
            )
            self._emit_looped(GemmInsn, loops, uops, reset=True)
        self._visit(stage, inst, 0, {})

    def _gemm(self, stage: Stage, inst: Instance, k: int, vals: dict[IterVar, int]) -> None:
        compute = stage.compute
        assert compute is not None
        leaves = stage.leaves
        t = next(i for i, v in enumerate(leaves) if intrinsic_name(v.annotation) is not None)
        name = intrinsic_name(leaves[t].annotation)  # _gemm_stage checked there is one
        where = leaves[t].annotated_by or stage.op
        intrinsic = self.intrinsics.get(name or "")
        if intrinsic is None:
            known = ", ".join(sorted(self.intrinsics)) or "none"
            raise DiagnosticError(
                where, f"te.tensorize: the target has no intrinsic '{name}' (it has: {known})"
            )
        if t < k:
            raise DiagnosticError(
                where,
                f"te.tensorize: '{leaves[t].name}' is outside the loop its copies are computed "
                "at; the intrinsic's block must be the innermost loops",
            )
        ext = self._extents(stage, inst)
        tile = leaves[t:]
        if stage.name not in self._matched:
            self._match(stage, tile, ext, intrinsic, name, where)
            self._matched.add(stage.name)
        if self.measuring:
            return

        # `ext` stays the split relations' extents; `span` is how far each loop runs here
        span = self._trim_tails(stage, inst, vals, ext, leaves[k:t], where)
        vals = {**vals, **{v: 0 for v in leaves[k:t] if span[v] == 1}}
        args = self._args(stage, inst, vals, ext)
        forms: dict[str, Linear] = {}
        env = dict(zip(compute.block.args, args, strict=True))
        for op in compute.block.ops:
            if not isinstance(op, ReadOp):
                continue
            src = self.state.by_value[op.tensor]
            held = self.live.get(src.name)
            if held is None or src.scope not in ("inp", "wgt"):
                raise DiagnosticError(
                    where,
                    f"te.tensorize: '{stage.name}' reads '{src.name}', which is not an inp or "
                    "wgt copy computed inside it (te.cache_read ... scope, te.compute_at)",
                )
            forms[src.scope] = self._entry_form(where, op, env, held, set(tile), span)
        own = self._forms(stage, ext)
        acc = Linear({}, inst.base)
        for d, v in enumerate(stage.spatial_root[:-2]):
            f = _subst(own.get(v), vals)
            if f is None:
                raise DiagnosticError(where, f"'{stage.name}': a fused axis in its block")
            acc = acc.add(f.scale(inst.strides[d]))
        forms["acc"] = acc
        loops = [v for v in leaves[k:t] if span[v] > 1]
        spec = [(span[v], {b: f.terms.get(v, 0) for b, f in forms.items()}) for v in loops]
        for b, f in forms.items():
            stray = [x for x in f.terms if x not in loops]
            if stray:
                raise DiagnosticError(where, f"'{stage.name}': {b} index depends on {stray}")
        loops_spec, uops = self._fold(where, spec, {b: f.const for b, f in forms.items()})
        self._emit_looped(GemmInsn, loops_spec, uops)

    def _match(
        self,
        stage: Stage,
        tile: list[IterVar],
        ext: dict[IterVar, int],
        intrinsic: TensorIntrinsic,
        name: str | None,
        where: Operation | None,
    ) -> None:
        """A located error unless the loops from `tile[0]` in are the intrinsic's block."""
        compute = stage.compute
        assert compute is not None
        have = [(ext[v], v.reduce) for v in tile]
        want = [(e, False) for e in intrinsic.spatial] + [(e, True) for e in intrinsic.reduce]
        try:
            if have != want:
                raise NoMatch(f"the loops are {_show(have)}, the intrinsic's {_show(want)}")
            match_structure(intrinsic.pattern, compute)
        except NoMatch as err:
            raise DiagnosticError(
                where,
                f"te.tensorize: the loops under '{tile[0].name}' of '{stage.name}' do not "
                f"match '{name}': {err}",
            ) from None

    def _trim_tails(
        self,
        stage: Stage,
        inst: Instance,
        vals: dict[IterVar, int],
        ext: dict[IterVar, int],
        loops: list[IterVar],
        where: Operation | None,
    ) -> dict[IterVar, int]:
        """The loops' extents at this step, shortened where a split that does not divide its
        axis would run past it (the last input-channel step of 3 blocks in steps of 2): the
        GEMM has no masking, so a partial step is a shorter loop."""
        out = dict(ext)
        forms = self._forms(stage, ext)
        limits = [*inst.ext, *(v.extent for v in stage.reduce_root)]
        for root, limit in zip([*stage.spatial_root, *stage.reduce_root], limits, strict=True):
            f = _subst(forms.get(root), vals)
            if f is None:
                continue
            free = {v: c for v, c in f.terms.items() if v in out}
            top = f.const + sum(max(0, c * (out[v] - 1)) for v, c in free.items())
            if top < limit:
                continue
            mine = [v for v in loops if v in free and free[v] > 0]
            if len(mine) != 1 or any(c < 0 for c in free.values()):
                raise DiagnosticError(
                    where,
                    f"lower-te-to-accel: the loops of '{stage.name}' run past its axis "
                    f"'{root.name}' ({limit}) in a way one shorter loop cannot fix",
                )
            v = mine[0]
            rest = top - free[v] * (out[v] - 1)
            out[v] = max(0, (limit - 1 - rest) // free[v] + 1)
        return out

    def _entry_form(
        self,
        where: Operation | None,
        read: ReadOp,
        env: dict[SSAValue, Form],
        held: Instance,
        tile: set[IterVar],
        ext: dict[IterVar, int],
    ) -> Linear:
        """The buffer entry a read touches, as a linear form of the loops; its last two
        indices must be the intrinsic's block (one entry), the others free of it and inside
        the copy's region over the loops' ranges."""
        idx = [index_form(i, env) for i in read.indices]
        entry = Linear({}, held.base)
        for d, f in enumerate(idx):
            if f is None:
                raise DiagnosticError(where, "te.tensorize: a read's index is not affine")
            in_tile = any(t in tile for t in f.terms)
            if d >= len(idx) - 2:
                if f.const or not in_tile or len(f.terms) != 1:
                    raise DiagnosticError(
                        where,
                        f"te.tensorize: '{held.stage.name}' is not read one whole entry per "
                        "block (its last two indices must be the block's axes)",
                    )
                continue
            if in_tile:
                raise DiagnosticError(
                    where,
                    f"te.tensorize: '{held.stage.name}' dimension {d} moves inside the block",
                )
            low = f.const + sum(min(0, c * (ext.get(v, 1) - 1)) for v, c in f.terms.items())
            high = f.const + sum(max(0, c * (ext.get(v, 1) - 1)) for v, c in f.terms.items())
            if low < held.lo[d] or high >= held.lo[d] + held.ext[d]:
                raise DiagnosticError(
                    where,
                    f"lower-te-to-accel: '{held.stage.name}' is read at [{low}, {high}] in "
                    f"dimension {d}, outside its copy [{held.lo[d]}, "
                    f"{held.lo[d] + held.ext[d] - 1}]",
                )
            entry = entry.add(f.add(Linear({}, held.lo[d]), -1).scale(held.strides[d]))
        return entry

    # -- folding loops into instruction fields and micro-ops --------------------------------

    def _fold(
        self, where: Operation | None, spec: list[tuple[int, dict[str, int]]], base: dict[str, int]
    ) -> tuple[list[tuple[int, dict[str, int]]], list[dict[str, int]]]:
        """Up to two loops become the instruction's loop levels (the longest whose index
        factors fit the fields), the rest are enumerated into micro-ops."""
        spec = _merge_loops([s for s in spec if s[0] > 1])
        order = sorted(range(len(spec)), key=lambda i: -spec[i][0])
        folded: list[int] = []
        for i in order:
            e, coefs = spec[i]
            if (
                len(folded) < 2
                and e <= MAX_LOOP
                and all(0 <= c <= MAX_FACTOR[b] for b, c in coefs.items())
            ):
                folded.append(i)
        folded.sort()
        rest = [spec[i] for i in range(len(spec)) if i not in folded]
        count = math.prod(e for e, _ in rest)
        if count > self.cfg.depth("uop"):
            raise DiagnosticError(
                where,
                f"lower-te-to-accel: {count} micro-ops for one instruction; the uop buffer "
                f"holds {self.cfg.depth('uop')}",
            )
        uops = []
        for idx in itertools.product(*[range(e) for e, _ in rest]):
            u = dict(base)
            for i, (_, coefs) in zip(idx, rest, strict=True):
                for b, c in coefs.items():
                    u[b] = u.get(b, 0) + i * c
            uops.append(u)
        return [spec[i] for i in folded], uops

    def _uop_range(self, uops: list[dict[str, int]], names: tuple[str, str, str]) -> int:
        key = tuple(Uop(*(u.get(n, 0) for n in names)) for u in uops)
        if key not in self.uop_lists:
            self.uop_lists[key] = len(self.prog.uops)
            self.prog.uops.extend(key)
        return self.uop_lists[key]

    def _emit_looped(self, cls, loops, uops, **fields) -> None:  # noqa: ANN001
        names = ("acc", "inp", "wgt") if cls is GemmInsn else ("dst", "src", "")
        begin = self._uop_range(uops, names)
        loops = [(1, {}), (1, {})][: 2 - len(loops)] + list(loops)
        kw = dict(uop_begin=begin, uop_end=begin + len(uops), lp0=loops[0][0], lp1=loops[1][0])
        for n in names if cls is GemmInsn else ("dst", "src"):
            kw[f"{n}_f0"] = loops[0][1].get(n, 0)
            kw[f"{n}_f1"] = loops[1][1].get(n, 0)
        self.prog.insns.append(cls(**kw, **fields))

    # -- the output: ALU ops in place, then the store ----------------------------------------

    def _body(self, stage: Stage, inst: Instance, k: int, vals: dict[IterVar, int]) -> None:
        if stage.compute is not None and stage.compute.reduce_kind is not None:
            if stage.attach == "root":
                raise DiagnosticError(
                    stage.op,
                    f"lower-te-to-accel: the output '{stage.name}' is a reduction; the GEMM "
                    "core accumulates in acc: compute it at a loop of an output that stores it "
                    "(te.set_scope 'acc', te.compute_at)",
                )
            self._gemm(stage, inst, k, vals)
            return
        if stage.attach != "root":
            return  # a copy: its loads were emitted when it was computed
        lo, ext = self._own_region(stage, inst, vals, k - 1) if k else (inst.lo, inst.ext)
        if self.measuring:
            return
        self._output(stage, lo, ext)

    def _output(self, stage: Stage, lo: list[int], ext: list[int]) -> None:
        compute = stage.compute
        assert compute is not None
        term = compute.block.last_op
        assert isinstance(term, YieldOp)
        cast = term.operands[0].owner
        if not isinstance(cast, arith.TruncIOp):
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: the output '{stage.name}' must narrow int32 to the 8-bit "
                "out buffer (a cast); the STORE writes the low byte",
            )
        want = (self.cfg.batch, self.cfg.block_out)
        if len(ext) < 3 or tuple(stage.shape[-2:]) != want:
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: the output '{stage.name}' {list(stage.shape)} does not end "
                f"in one out entry {list(want)} (a STORE moves whole entries)",
            )
        args = list(compute.block.args)
        grid = [IterVar(f"d{d}", ext[d], False) for d in range(len(ext) - 2)]
        env: dict[SSAValue, Form] = {
            a: Linear({g: 1}, lo[d]) for d, (a, g) in enumerate(zip(args, grid, strict=False))
        }
        env.update({a: Linear.of(a) for a in args[len(grid) :]})
        lanes = [Linear.of(a) for a in args[len(grid) :]]
        steps: list[tuple[AluOp, object]] = []
        src, forms = self._chain(stage, cast.input, env, steps)
        dst = self._alu_entry(stage, src, forms, lanes)
        for code, other in steps:
            fields: dict[str, object] = {"op": code}
            if isinstance(other, int):
                src_form = Linear()
                fields |= {"use_imm": True, "imm": other}
            else:
                src_form = self._alu_entry(stage, *other, lanes)  # type: ignore[misc]
            spec = [
                (g.extent, {"dst": dst.terms.get(g, 0), "src": src_form.terms.get(g, 0)})
                for g in grid
            ]
            loops, uops = self._fold(stage.op, spec, {"dst": dst.const, "src": src_form.const})
            self._emit_looped(AluInsn, loops, uops, **fields)
        strides = _row_major(list(stage.shape[:-2]))
        store = [
            _Dim(ext[d], strides[d], dst.terms.get(g, 0), 0, 0, lo[d]) for d, g in enumerate(grid)
        ]
        self._dma(stage, store, dst.const, Buffer.OUT, self.regions[stage.name], store=True)

    def _chain(
        self, stage: Stage, v: SSAValue, env: dict[SSAValue, Form], steps: list
    ) -> tuple[Stage, list[Form]]:
        """The ALU ops computing `v` in place (appended innermost first), and the acc stage
        and indices of the read they start from."""
        op = v.owner
        if isinstance(op, ReadOp):
            idx = [index_form(i, env) for i in op.indices]
            src = self.state.by_value[op.tensor]
            if src.compute is not None and src.attach == "inline":  # follow its formula
                inner = dict(zip(src.compute.block.args, idx, strict=True))
                term = src.compute.block.last_op
                assert isinstance(term, YieldOp)
                return self._chain(stage, term.operands[0], inner, steps)
            return src, idx
        code = ALU_OPS.get(type(op)) if isinstance(op, Operation) else None
        if (
            code is None
            or not isinstance(op, Operation)
            or len(op.operands) != 2
            or op.results[0].type != i32
        ):
            what = op.name if isinstance(op, Operation) else "an axis"
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}' computes {what}"
                f"{'' if code is None else ' on ' + str(op.results[0].type)}, which the ALU does "
                "not have (it has add, shr, max, min and mul on int32)",
            )
        lhs, rhs = op.operands
        if self._is_leaf(rhs):
            running, other = lhs, rhs
        elif code in COMMUTATIVE and self._is_leaf(lhs):
            running, other = rhs, lhs
        else:
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}': an ALU op takes the running value and an "
                "immediate or an acc copy",
            )
        base = self._chain(stage, running, env, steps)
        steps.append((code, self._leaf(stage, other, env)))
        return base

    def _is_leaf(self, v: SSAValue) -> bool:
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            return True
        if isinstance(op, ReadOp):
            src = self.state.by_value[op.tensor]
            return (
                src.scope == "acc" and src.compute is not None and src.compute.reduce_kind is None
            )
        return False

    def _leaf(self, stage: Stage, v: SSAValue, env: dict[SSAValue, Form]) -> object:
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            value = int(op.value.value.data)  # type: ignore[attr-defined]
            if not -(1 << 15) <= value < (1 << 15):
                raise DiagnosticError(
                    stage.op, f"lower-te-to-accel: the immediate {value} does not fit 16 bits"
                )
            return value
        assert isinstance(op, ReadOp)
        return self.state.by_value[op.tensor], [index_form(i, env) for i in op.indices]

    def _alu_entry(
        self, stage: Stage, src: Stage, forms: list[Form], lanes: list[Linear]
    ) -> Linear:
        """The acc entry an ALU operand reads, as a linear form of the output's grid."""
        held = self.live.get(src.name)
        if held is None or src.scope != "acc":
            raise DiagnosticError(
                stage.op,
                f"lower-te-to-accel: '{stage.name}' reads '{src.name}', which is not an acc "
                "stage computed at its loops",
            )
        entry = Linear({}, held.base)
        n = len(forms)
        for d, f in enumerate(forms):
            if f is None:
                raise DiagnosticError(
                    stage.op, "lower-te-to-accel: an ALU operand's index is not affine"
                )
            if d >= n - 2:
                lane = lanes[d - (n - 2)]
                if f.terms != lane.terms or f.const:
                    raise DiagnosticError(
                        stage.op,
                        f"lower-te-to-accel: '{src.name}' is not read lane by lane (an ALU op "
                        "works on whole acc entries)",
                    )
                continue
            entry = entry.add(f.add(Linear({}, held.lo[d]), -1).scale(held.strides[d]))
        return entry


@dataclass
class _Dim:
    ext: int
    dram: int
    sram: int
    before: int
    after: int
    first: int
    """The first index read in DRAM (past the padding)."""


def _merge(dims: list[_Dim]) -> list[_Dim]:
    """Merge a dimension into the one inside it where both memories are contiguous across
    them and neither is padded."""
    out = [d for d in dims if d.ext > 1 or d is dims[-1]]
    k = len(out) - 2
    while k >= 0:
        a, b = out[k], out[k + 1]
        if (
            not (a.before or a.after or b.before or b.after)
            and a.dram == b.ext * b.dram
            and a.sram == b.ext * b.sram
            and a.ext * b.ext <= MAX_X
        ):
            out[k : k + 2] = [_Dim(a.ext * b.ext, b.dram, b.sram, 0, 0, 0)]
        k -= 1
    return out


def _merge_loops(spec: list[tuple[int, dict[str, int]]]) -> list[tuple[int, dict[str, int]]]:
    """Merge a loop into the one inside it where every index steps on contiguously."""
    out = list(spec)
    k = len(out) - 2
    while k >= 0:
        (ea, ca), (eb, cb) = out[k], out[k + 1]
        keys = set(ca) | set(cb)
        if ea * eb <= MAX_LOOP and all(ca.get(n, 0) == eb * cb.get(n, 0) for n in keys):
            out[k : k + 2] = [(ea * eb, cb)]
        k -= 1
    return out


def _show(axes: list[tuple[int, bool]]) -> str:
    return " x ".join(f"{e}{' (reduction)' if r else ''}" for e, r in axes)


def _row_major(shape: list[int]) -> list[int]:
    out, step = [], 1
    for e in reversed(shape):
        out.append(step)
        step *= e
    return out[::-1]


def _is_zero(v: SSAValue) -> bool:
    op = v.owner
    return isinstance(op, arith.ConstantOp) and op.value.value.data == 0  # type: ignore[attr-defined]
