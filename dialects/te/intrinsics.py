"""Tensor intrinsics: what `te.tensorize` may replace a loop nest by, declared in te itself.

A TensorIntrinsic is a small te compute (its *pattern*: the formula, the element types, the
loop extents, and the layout of each operand as the shapes of the pattern's placeholders) and
an emitter that computes the same thing with the hardware's instruction (the target supplies
it). TVM declares intrinsics the same way (te.decl_tensor_intrin: a compute plus buffer
declarations); ours match a stage's innermost loops by

* structure: the stage's formula has the pattern's ops (same op kinds, types and constants),
  read by read, with the pattern's reduction;
* extents: the loops under the tensorized axis are the pattern's spatial then reduction axes;
* layout: over those loops each operand's element offset moves by the pattern's strides (a
  byte dot product reads 4 consecutive bytes of x and 4 x lanes consecutive bytes of w).

Offsets are checked by evaluating the index arithmetic (integers; split and fuse relations
recomputed the same way), at the tile's corners and along each axis, for a few positions of the
outer loops: `stride_mismatch` says where a layout differs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from nnvm.dialects.te.builder import Expr, KernelBuilder, TensorRef
from nnvm.dialects.te.ops import ComputeOp, ReadOp, YieldOp


class NoMatch(Exception):
    """Why a loop nest is not an intrinsic's pattern (the message says what differs)."""


def index_value(v: SSAValue, env: dict[SSAValue, int]) -> int:
    """The integer value of an index expression of a formula, given its axes' values."""
    if v in env:
        return env[v]
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    if not isinstance(op, Operation) or not op.operands:
        raise NoMatch(f"an index is not integer arithmetic of the axes ({v})")
    a = [index_value(o, env) for o in op.operands]
    if isinstance(op, arith.AddiOp):
        return a[0] + a[1]
    if isinstance(op, arith.SubiOp):
        return a[0] - a[1]
    if isinstance(op, arith.MuliOp):
        return a[0] * a[1]
    if isinstance(op, arith.FloorDivSIOp) and a[1]:
        return a[0] // a[1]
    if isinstance(op, arith.DivSIOp) and a[1]:
        return int(a[0] / a[1])
    if isinstance(op, arith.RemSIOp) and a[1]:
        return int(math.fmod(a[0], a[1]))
    raise NoMatch(f"an index uses {op.name}, which tensorize does not evaluate")


def flat_offset(read: ReadOp, env: dict[SSAValue, int]) -> int:
    """The row-major element offset a read touches."""
    shape = read.tensor.type.get_shape()  # type: ignore[attr-defined]
    offset = 0
    for i, extent in zip(read.indices, shape, strict=True):
        offset = offset * extent + index_value(i, env)
    return offset


def formula_reads(compute: ComputeOp) -> list[ReadOp]:
    """The formula's reads, in the order the pattern walk meets them (operand order from the
    yielded value down)."""
    out: list[ReadOp] = []
    seen: set[int] = set()

    def walk(v: SSAValue) -> None:
        op = v.owner
        if not isinstance(op, Operation) or id(op) in seen:
            return
        seen.add(id(op))
        if isinstance(op, ReadOp):
            out.append(op)
            return
        for o in op.operands:
            walk(o)

    term = compute.block.last_op
    assert isinstance(term, YieldOp)
    walk(term.operands[0])
    return out


def match_structure(pattern: ComputeOp, actual: ComputeOp) -> None:
    """NoMatch unless both formulas have the same ops, read by read (each placeholder of the
    pattern standing for one tensor of the stage, of its element type)."""
    if pattern.reduce_kind != actual.reduce_kind:
        raise NoMatch(
            f"the pattern is a {pattern.reduce_kind or 'plain'} compute, the stage a "
            f"{actual.reduce_kind or 'plain'} one"
        )
    if pattern.element_type != actual.element_type:
        raise NoMatch(
            f"the pattern computes {pattern.element_type}, the stage {actual.element_type}"
        )
    tensors: dict[int, SSAValue] = {}

    def same(p: SSAValue, a: SSAValue) -> None:
        if p.type != a.type:
            raise NoMatch(f"the pattern has {p.type} where the stage has {a.type}")
        po, ao = p.owner, a.owner
        if isinstance(po, Block) or isinstance(ao, Block):
            if not (isinstance(po, Block) and isinstance(ao, Block)):
                raise NoMatch("the pattern reads an axis where the stage computes a value")
            return
        if type(po) is not type(ao):
            raise NoMatch(f"the pattern has {po.name} where the stage has {ao.name}")
        if isinstance(po, ReadOp):
            assert isinstance(ao, ReadOp)
            arg = po.tensor
            assert isinstance(arg, BlockArgument)
            known = tensors.setdefault(arg.index, ao.tensor)
            if known is not ao.tensor:
                raise NoMatch("the pattern reads one tensor where the stage reads two")
            if ao.tensor.type.element_type != arg.type.element_type:  # type: ignore[attr-defined]
                raise NoMatch(
                    f"operand {arg.index} is {arg.type.element_type}, "  # type: ignore[attr-defined]
                    f"the stage reads {ao.tensor.type.element_type}"  # type: ignore[attr-defined]
                )
            return
        if dict(po.properties) != dict(ao.properties) or len(po.operands) != len(ao.operands):
            raise NoMatch(f"the pattern's {po.name} differs from the stage's")
        for x, y in zip(po.operands, ao.operands, strict=True):
            same(x, y)

    pt, at = pattern.block.last_op, actual.block.last_op
    assert isinstance(pt, YieldOp) and isinstance(at, YieldOp)
    same(pt.operands[0], at.operands[0])


@dataclass(frozen=True)
class TensorIntrinsic:
    """A hardware operation on a small tile, for `te.tensorize "S" axis with "<name>"`.

    `inputs`: the placeholders' types (their shapes are the operands' layouts over the
    pattern's axes); `formula(*axes, *placeholders)`: one element, as a te formula;
    `spatial` / `reduce`: the pattern's loop extents; `emit(emitter, out, operands)`: the
    target's code for one tile (out and operands are (buffer, indices) at the tile's first
    element)."""

    name: str
    inputs: tuple[TensorType, ...]
    formula: Callable[..., Expr]
    spatial: tuple[int, ...]
    reduce: tuple[int, ...]
    emit: Callable[..., None] = field(compare=False)

    @cached_property
    def pattern(self) -> ComputeOp:
        block = Block(arg_types=list(self.inputs))
        b = KernelBuilder(block)
        refs = [TensorRef(a) for a in block.args]
        names = [f"s{d}" for d in range(len(self.spatial))]
        rnames = [f"r{d}" for d in range(len(self.reduce))]

        def body(*axes: Expr) -> Expr:
            return self.formula(*axes, *refs)

        if self.reduce:
            out = b.reduce(
                self.spatial,
                "sum",
                self.reduce,
                body,
                axes=names,
                reduce_axes=rnames,
                name=self.name,
            )
        else:
            out = b.compute(self.spatial, body, axes=names, name=self.name)
        op = out.value.owner
        assert isinstance(op, ComputeOp)
        return op

    @cached_property
    def strides(self) -> list[list[int]]:
        """Per read of the pattern (formula_reads order), the element-offset step of each axis
        (spatial then reduction)."""
        p = self.pattern
        axes = list(p.block.args)
        out = []
        for read in formula_reads(p):
            zero = {a: 0 for a in axes}
            base = flat_offset(read, zero)
            out.append([flat_offset(read, {**zero, a: 1}) - base for a in axes])
        return out

    @property
    def extents(self) -> tuple[int, ...]:
        return (*self.spatial, *self.reduce)


def probe_points(extents: Sequence[int]) -> list[tuple[int, ...]]:
    """Positions of the outer loops at which a layout is checked: all at 0, then each loop at
    1 and at its last value (the others 0)."""
    zero = tuple(0 for _ in extents)
    points = [zero]
    for d, e in enumerate(extents):
        for v in sorted({1, e - 1} - {0}):
            if v < e:
                points.append(tuple(v if k == d else 0 for k in range(len(extents))))
    return points


def tile_points(extents: Sequence[int]) -> list[tuple[int, ...]]:
    """Every position inside a tile (an intrinsic's tiles are small: 16 x 4)."""
    return list(itertools.product(*[range(e) for e in extents]))


def stride_mismatch(
    offset_at: Callable[[tuple[int, ...], tuple[int, ...]], int],
    strides: Sequence[int],
    inner_extents: Sequence[int],
    outer_points: Sequence[tuple[int, ...]],
) -> str | None:
    """None when, at every outer point, offset(outer, inner) = offset(outer, 0) + inner .
    strides over the whole tile; else where it differs."""
    for outer in outer_points:
        base = offset_at(outer, tuple(0 for _ in inner_extents))
        for inner in tile_points(inner_extents):
            want = base + sum(i * s for i, s in zip(inner, strides, strict=True))
            got = offset_at(outer, inner)
            if got != want:
                return (
                    f"at tile position {list(inner)} it reads element {got - base} of the tile's "
                    f"first, the intrinsic's layout has {want - base}"
                )
    return None


Intrinsics = dict[str, TensorIntrinsic]
"""A target's tensor intrinsics by name (Target.tensor_intrinsics)."""
