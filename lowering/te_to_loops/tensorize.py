"""te.tensorize in the loop nest: the loops under the tensorized axis become one call of the
target's tensor intrinsic (dialects/te/intrinsics.py), after checking that they compute what
the intrinsic computes, over the layouts it reads.

Only the update is replaced: a reduction's accumulator is still initialised by the ordinary
nest outside its first reduction loop (the tensorized loop reads as a vector loop there), so an
intrinsic declares no reset of its own. A loop nest that does not match is a diagnostic at the
te.tensorize, naming what differs."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from nnvm.dialects.te.intrinsics import (
    Intrinsics,
    NoMatch,
    TensorIntrinsic,
    flat_offset,
    formula_reads,
    match_structure,
    probe_points,
    stride_mismatch,
)
from nnvm.dialects.te.stage_tree import IterVar, Split
from nnvm.lowering.te_to_loops.emitter import Nest, Scope, Val
from nnvm.lowering.te_to_loops.formulas import FormulaEval, view_indices
from nnvm.lowering.te_to_loops.loop_bodies import buffer_indices, real_indices
from nnvm.lowering.te_to_loops.vectorize import VectorEmitter
from nnvm.support.diagnostics import DiagnosticError

TENSORIZE = "tensorize("


@dataclass
class TileOperand:
    """Where an intrinsic's operand tile starts: a buffer and the indices of its first element."""

    buffer: SSAValue
    indices: list[SSAValue]


def intrinsic_name(annotation: str | None) -> str | None:
    """'vnni' for a loop annotated `tensorize(vnni)`."""
    if annotation is None or not annotation.startswith(TENSORIZE):
        return None
    return annotation[len(TENSORIZE) : -1]


def _dependents(nest: Nest, inner: list[IterVar]) -> set[IterVar]:
    """The axes whose value changes with the inner loops (through splits and fuses)."""
    dep = set(inner)
    changed = True
    while changed:
        changed = False
        for rel in [*nest.stage.relations, *nest.stage.tails]:
            if isinstance(rel, Split):
                if rel.parent not in dep and (rel.outer in dep or rel.inner in dep):
                    dep.add(rel.parent)
                    changed = True
            elif rel.fused in dep and not {rel.outer, rel.inner} <= dep:
                dep |= {rel.outer, rel.inner}
                changed = True
    return dep


def _numeric_axes(nest: Nest, leaf_values: dict[IterVar, int]) -> dict[IterVar, int]:
    """Every axis's value from the leaves' (the loop body's `derive`, on integers)."""
    vals = dict(leaf_values)
    nest.stage.derive(vals, nest.ext, lambda o, i, e: o * e + i, divmod)
    return vals


class TensorizeEmitter(VectorEmitter):
    """The tensorized leaf of a loop nest (mixed into LoopNestEmitter, whose `derive` it uses)."""

    intrinsics: Intrinsics

    def emit_tensorized(
        self, nest: Nest, scope: Scope, leaves: list[IterVar], k: int, vals: dict[IterVar, Val]
    ) -> None:
        leaf = leaves[k]
        name = intrinsic_name(leaf.annotation)
        assert name is not None
        where = leaf.annotated_by or nest.compute
        intrinsic = self.intrinsics.get(name)
        if intrinsic is None:
            known = ", ".join(sorted(self.intrinsics)) or "none"
            raise DiagnosticError(
                where, f"te.tensorize: the target has no intrinsic '{name}' (it has: {known})"
            )
        try:
            reads = self._match(nest, leaves, k, intrinsic)
        except NoMatch as err:
            raise DiagnosticError(
                where,
                f"te.tensorize: the loops under '{leaf.name}' of '{nest.stage.name}' do not "
                f"match '{name}': {err}",
            ) from None
        try:
            self._emit_tile(nest, scope, leaves, k, vals, intrinsic, reads)
        except NoMatch as err:
            raise DiagnosticError(where, f"te.tensorize '{name}': {err}") from None

    def _emit_tile(
        self,
        nest: Nest,
        scope: Scope,
        leaves: list[IterVar],
        k: int,
        vals: dict[IterVar, Val],
        intrinsic: TensorIntrinsic,
        reads: list,
    ) -> None:
        origin = dict(vals)
        for v in leaves[k:]:
            origin[v] = self.cval(0)
        self.derive(nest, origin)  # type: ignore[attr-defined]  # LoopNestEmitter's
        _, out_idx = buffer_indices(self, nest, origin)
        args = real_indices(self, nest, origin) + [origin[v] for v in nest.stage.reduce_root]
        formula = FormulaEval(self, nest.compute, args, scope)
        operands = []
        for read in reads:
            idx = [formula.eval(i) for i in read.indices]
            view = scope.views[self.state.by_value[read.tensor]]
            operands.append(_tile(view.buffer, view_indices(self, idx, view.offsets)))
        intrinsic.emit(self, _tile(nest.view.buffer, out_idx), operands)

    def _match(self, nest: Nest, leaves: list[IterVar], k: int, intrinsic: TensorIntrinsic):
        """The stage's reads that stand for the intrinsic's operands, or NoMatch."""
        inner = leaves[k:]
        have = [(nest.ext[v], v.reduce) for v in inner]
        want = [(e, False) for e in intrinsic.spatial] + [(e, True) for e in intrinsic.reduce]
        if have != want:

            def show(axes: list[tuple[int, bool]]) -> str:
                return " x ".join(f"{e}{' (reduction)' if r else ''}" for e, r in axes)

            raise NoMatch(f"the loops are {show(have)}, the intrinsic's {show(want)}")
        dep = _dependents(nest, inner)
        for c in nest.constraints:
            if c.var in dep:
                raise NoMatch(f"'{c.var.name}' has a tail or an edge inside the tile")
        match_structure(intrinsic.pattern, nest.compute)
        reads = formula_reads(nest.compute)
        outer = leaves[:k]
        outer_points = probe_points([nest.ext[v] for v in outer])
        roots = [*nest.stage.spatial_root, *nest.stage.reduce_root]
        axes = list(nest.compute.block.args)
        shifts = [
            0 if off is None else nest.ext[v] for v, off in zip(roots, nest.offsets, strict=False)
        ]

        def env(outer_vals: tuple[int, ...], inner_vals: tuple[int, ...], shift: bool) -> dict:
            leaf_vals = dict(zip(outer, outer_vals, strict=True)) | dict(
                zip(inner, inner_vals, strict=True)
            )
            values = _numeric_axes(nest, leaf_vals)
            out = {a: values[v] for a, v in zip(axes, roots, strict=True)}
            if shift:  # a region computed at a consumer's loop starts at a tile offset
                for a, s in zip(axes, shifts, strict=False):
                    out[a] += s
            return out

        for n, (read, strides) in enumerate(zip(reads, intrinsic.strides, strict=True)):
            for shift in (False, True):
                why = stride_mismatch(
                    lambda o, i, r=read, s=shift: flat_offset(r, env(o, i, s)),
                    strides,
                    intrinsic.extents,
                    outer_points,
                )
                if why:
                    raise NoMatch(f"operand {n} ('{read.tensor.name_hint or 'a tensor'}'): {why}")
        out_shape = nest.view.buffer.type.get_shape()  # type: ignore[attr-defined]
        out_strides = _row_major(intrinsic.spatial) + [0] * len(intrinsic.reduce)

        def out_offset(o: tuple[int, ...], i: tuple[int, ...]) -> int:
            values = _numeric_axes(
                nest, dict(zip(outer, o, strict=True)) | dict(zip(inner, i, strict=True))
            )
            offset = 0
            for v, extent in zip(nest.stage.spatial_root, out_shape, strict=True):
                offset = offset * extent + values[v]
            return offset

        why = stride_mismatch(out_offset, out_strides, intrinsic.extents, outer_points)
        if why:
            raise NoMatch(f"the result: {why}")
        return reads


def _row_major(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for e in reversed(shape):
        strides.append(step)
        step *= e
    return list(reversed(strides))


def _tile(buffer: SSAValue, idx: list[Val]) -> TileOperand:
    if any(i.kind != "u" for i in idx):
        raise NoMatch("a tile's first element is not at a uniform index")
    return TileOperand(buffer, [i.ssa for i in idx])
