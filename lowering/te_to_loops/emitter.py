"""The loop-nest emitter's base: where ops go, index constants hoisted to the function entry,
and the records (values, buffers, constraints) that travel through one nest's emission."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.stage_tree import IterVar, Stage
from nnvm.dialects.te.stages import ScheduleState

INDEX = IndexType()
BIG = 1 << 40
"""The known alignment of 0: a multiple of everything."""
ALIGNMENT = 64
"""Byte alignment of every buffer the kernel allocates."""
STACK_LIMIT = 256 * 1024
"""Bytes above which a compute_at buffer goes to the heap: a thread's stack (thread-pool workers
and the C runtime's callers alike) would overflow on a whole-image buffer."""


class NotVectorizable(Exception):
    """This loop body cannot be written with contiguous vectors; emit it scalar."""


@dataclass
class Val:
    """A value of the loop body: uniform ('u'), base + lane ('l', an index; ssa is the base at
    lane 0), base + a constant per lane ('p', an index: lane k is base + pattern[k], as
    (lane // 8) * 8 + c reads two channel groups' inputs for one 16-lane vector), or a vector
    ('v'). `mult`: an index ssa known to be a multiple of it."""

    ssa: SSAValue
    kind: str = "u"
    mult: int = 1
    pattern: tuple[int, ...] = ()


@dataclass
class View:
    """Where a stage's values live: a buffer, and per dimension the offset of its first
    element (a stage computed at a consumer holds only the region one iteration reads)."""

    buffer: SSAValue
    offsets: list[SSAValue | None]


@dataclass
class Scope:
    """The buffers visible at a point of the nest, and the block that takes its allocas (the
    function entry, or the body of the enclosing parallel loop so each thread has its own)."""

    views: dict[Stage, View]
    alloca_block: Block
    in_parallel: bool = False
    heap: list[SSAValue] = field(default_factory=list)
    """Buffers too big for the stack (STACK_LIMIT) allocated at the top of `alloca_block`; whoever
    closes the block frees them."""

    def with_view(self, stage: Stage, view: View) -> Scope:
        views = dict(self.views)
        views[stage] = view
        return Scope(views, self.alloca_block, self.in_parallel, self.heap)


@dataclass(eq=False)
class Constraint:
    """offset + value(var) < upper (or >= 0 when lower): a tail or a region boundary."""

    var: IterVar
    offset: SSAValue | None
    upper: int
    lower: bool = False


@dataclass
class Nest:
    """One emission of a compute stage: its axis extents, offsets and constraints."""

    stage: Stage
    compute: ComputeOp
    ext: dict[IterVar, int]
    offsets: list[SSAValue | None]
    constraints: list[Constraint]
    view: View
    elt: Attribute
    attached: dict[IterVar, list[Stage]] = field(default_factory=dict)


class Emitter:
    """Insertion point and constants of one kernel's emission."""

    def __init__(self, state: ScheduleState, module: ModuleOp, vector_bits: int):
        self.state = state
        self.vector_bits = vector_bits
        self.module = module
        self.block: Block = Block()
        self.entry: Block = Block()
        self.lanes: int | None = None
        """The lane count while a vectorized loop body is being emitted, else None."""
        self.mask: SSAValue | None = None
        """The lanes that exist (vector<lanes x i1>) while a loop's tail is emitted as one
        masked vector; None on full vectors."""
        self._consts: dict[tuple[int, Attribute], SSAValue] = {}
        self._last_const: Operation | None = None
        self.known_tails: set[int] = set()
        """Constraints (by id) known to cut the current tile short: the code is being emitted
        in the tail branch of a versioned loop, so the tile is not full there."""
        self.tile_facts: dict[tuple[SSAValue, int, int], bool] = {}
        """(value, size, upper) -> whether the tile [value * size, value * size + size) fits
        below upper: known in the branches of a loop versioned for its tail."""
        self.attached_buffers: dict[tuple[int, int], SSAValue] = {}
        """The local buffer of each (stage, alloca block) computed at a loop: a loop versioned
        for its tail emits the stage twice, into one buffer."""

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def add1(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    @contextmanager
    def at(self, block: Block) -> Iterator[None]:
        saved = self.block
        self.block = block
        try:
            yield
        finally:
            self.block = saved

    def emit_if(
        self,
        cond: SSAValue,
        then: Callable[[], None],
        otherwise: Callable[[], None] | None = None,
    ) -> None:
        """`scf.if cond { then() } [else { otherwise() }]`, with no results."""
        regions = []
        for arm in (then, otherwise):
            if arm is None:
                continue
            block = Block()
            with self.at(block):
                arm()
                self.add(scf.YieldOp())
            regions.append(Region(block))
        self.add(scf.IfOp(cond, [], *regions))

    def index(self, value: int) -> SSAValue:
        """An index constant, created once at the function entry."""
        key = (value, INDEX)
        if key not in self._consts:
            op = arith.ConstantOp(IntegerAttr(value, INDEX))
            op.result.name_hint = f"c{value}" if value >= 0 else f"c_{-value}"
            last = self._last_const
            if last is not None:
                self.entry.insert_op_after(op, last)
            elif self.entry.first_op is not None:
                self.entry.insert_op_before(op, self.entry.first_op)
            else:
                self.entry.add_op(op)
            self._last_const = op
            self._consts[key] = op.result
        return self._consts[key]

    def cval(self, value: int) -> Val:
        return Val(self.index(value), "u", abs(value) if value else BIG)

    def emit_for(
        self, leaf: IterVar, lb: SSAValue, ub: SSAValue, step: int, body: Callable[[SSAValue], None]
    ) -> None:
        """`scf.for` over `leaf` from lb to ub, its body built by `body(iv)`."""
        block = Block(arg_types=[INDEX])
        block.args[0].name_hint = hint(leaf.name)
        with self.at(block):
            body(block.args[0])
            self.add(scf.YieldOp())
        self.add(scf.ForOp(lb, ub, self.index(step), [], Region(block)))


def discard(block: Block) -> None:
    """Drop a half-built block (its ops still use values from outside it)."""
    for op in reversed(list(block.ops)):
        op.detach()
        op.drop_all_references()


def hint(name: str) -> str | None:
    """`name` as an SSA name hint, or None when it cannot be one."""
    clean = re.sub(r"[^\w$.]", "_", name)
    return clean if re.fullmatch(r"[A-Za-z_$.][\w$.]*", clean) else None
