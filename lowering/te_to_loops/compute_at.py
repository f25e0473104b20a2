"""A stage computed at a consumer's loop: the region of it that one iteration of that loop reads
(bounds.py), and the small buffer that holds it."""

from __future__ import annotations

import math

from xdsl.dialects import arith, memref
from xdsl.ir import SSAValue

from nnvm.dialects.te.exprs import element_bits, native_lanes
from nnvm.dialects.te.stage_tree import IterVar, Stage
from nnvm.lowering.te_to_loops.bounds import (
    DimRegion,
    Form,
    Linear,
    formula_accesses,
    infer_region,
    root_forms,
)
from nnvm.lowering.te_to_loops.emitter import (
    ALIGNMENT,
    STACK_LIMIT,
    Emitter,
    Nest,
    NotVectorizable,
    Scope,
    Val,
    View,
    hint,
)

AttachedRegion = list[tuple[SSAValue | None, int, tuple[bool, bool]]]
"""Per dimension of a stage: (offset of the region, its extent, whether it needs a guard at its
low and at its high end)."""


def attached_region(
    gen: Emitter,
    producer: Stage,
    nest: Nest,
    scope: Scope,
    leaves: list[IterVar],
    k: int,
    vals: dict[IterVar, Val],
) -> tuple[AttachedRegion, View]:
    """The region of `producer` that one iteration of the consumer's loop `leaves[k]` reads, and
    the view the consumer reads it through: an alloca hoisted to the scope's alloca block (the
    function entry, or the body of the enclosing parallel loop, so each thread has its own)."""
    consumer = nest.stage
    forms_by_root = root_forms(consumer, nest.ext, set(vals))
    args: list[Form] = []
    for d, v in enumerate(consumer.spatial_root):
        f = forms_by_root.get(v)
        off = nest.offsets[d]
        if f is not None and off is not None:
            f = Linear.of(off).add(f)
        args.append(f)
    for v in consumer.reduce_root:
        args.append(forms_by_root.get(v))
    inlined = {
        s.value: s.compute
        for s in gen.state.stages
        if s.attach == "inline" and s.compute is not None
    }
    accesses: list[list[Form]] = []
    block, extents = nest.compute.block, dict(nest.ext)
    formula_accesses(block, args, producer.value, inlined, accesses, extents)  # type: ignore[arg-type]
    inner = {v: nest.ext[v] for v in leaves[k + 1 :]}
    outer = {v: nest.ext[v] for v in vals}
    regions: list[DimRegion] = infer_region(accesses, producer.shape, inner, outer)
    region: AttachedRegion = []
    for r in regions:
        off = None if r.offset is None else materialize(gen, r.offset, vals)
        region.append((off, r.extent, (r.guard_low, r.guard_high)))
    if producer in scope.views:
        return region, scope.views[producer]
    offsets = [off for off, _, _ in region]
    key = (id(producer), id(scope.alloca_block))
    if key in gen.attached_buffers:
        return region, View(gen.attached_buffers[key], offsets)
    elt = producer.value.type.element_type  # type: ignore[attr-defined]
    shape = [r.extent for r in regions]
    lanes = native_lanes(elt, gen.vector_bits)
    if shape and shape[-1] > lanes and shape[-1] % lanes:
        # rows of whole native vectors: a vectorized row of 29 runs as two 16-lane vectors
        # with the last lanes masked off, and a register tile's own rows must hold them for its
        # loads and stores to stay plain (hoist-loop-invariant-accesses keeps those, not
        # masked ones, in registers)
        shape[-1] = -(-shape[-1] // lanes) * lanes
    nbytes = math.prod(shape) * max(element_bits(elt) // 8, 1)
    if nbytes > STACK_LIMIT:
        alloca = memref.AllocOp.get(elt, ALIGNMENT, shape)
        scope.heap.append(alloca.results[0])
    else:
        alloca = memref.AllocaOp.get(elt, ALIGNMENT, shape)
    alloca.results[0].name_hint = hint(producer.name)
    first = scope.alloca_block.first_op
    if first is None:
        scope.alloca_block.add_op(alloca)
    else:
        scope.alloca_block.insert_op_before(alloca, first)
    gen.attached_buffers[key] = alloca.results[0]
    return region, View(alloca.results[0], offsets)


def materialize(gen: Emitter, form: Linear, vals: dict[IterVar, Val]) -> SSAValue:
    """The index value of a linear form of the known loop values."""
    acc: SSAValue | None = None
    for key, coef in form.terms.items():
        if isinstance(key, IterVar):
            v = vals[key]
            if v.kind != "u":
                raise NotVectorizable
            x = v.ssa
        else:
            x = key
        if coef != 1:
            x = gen.add1(arith.MuliOp(x, gen.index(coef)))
        acc = x if acc is None else gen.add1(arith.AddiOp(acc, x))
    if acc is None:
        return gen.index(form.const)
    if form.const:
        acc = gen.add1(arith.AddiOp(acc, gen.index(form.const)))
    return acc
