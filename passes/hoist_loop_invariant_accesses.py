"""Register tiles as loop-carried values: loads and stores of a local buffer at constant indices
inside `scf.for` loops become the loop's `iter_args` (loaded once before it, stored once after).

A register tile's accumulators live in a small `memref.alloca` (the stage computed at its
consumer's tile loop), updated at constant indices inside the reduction loops. LLVM keeps them
in registers only when its LICM can hoist every load and store out of the loops, and that fails
when an access is conditional: a tile that may be at a row tail guards each column with
`c < bound` inside the depth loop, and unswitching that loop is a cost-model decision LLVM
declines for large bodies (yolo's 32-channel 3x3 convs kept all 28 accumulators in memory, a
store after every FMA: 63 instead of 200 GFLOP/s). This pass does the promotion itself, as
MLIR's affine-scalrep and hoistRedundantVectorTransfers do: conditional updates become
`scf.if` results, so the values stay in SSA (registers) whatever LLVM decides.

A buffer is promoted only when it cannot be observed otherwise: allocated by `memref.alloca`
in the function, every use a `memref.load/store` or `vector.load/store`, and, in the loop at
hand, every access at indices that do not vary in it, the places accessed either identical
(same indices, same type) or disjoint. An index need not be a constant: it is read as a linear
form (a constant plus multiples of values fixed in the loop: an outer loop's variable, products
and sums of them), so the accumulators of a row of register tiles kept in one buffer across the
blocks of a reduction (a conv whose input channels run in blocks: `[.., oh, ow.o * 14 + 3, ..]`)
are promoted too; two places are disjoint when their forms differ by a constant in some
dimension (by at least the vector's width in the last). The loads before the loop and the
stores after it recompute such an index there. Loops are treated innermost first; a loop is
rewritten when some place's first access in its body is a load (a value carried from the
previous iteration).
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

_LOADS = (memref.LoadOp, vector.LoadOp)
_STORES = (memref.StoreOp, vector.StoreOp)

Key = tuple[SSAValue, tuple[object, ...]]
"""A place: the buffer and its indices' forms in the loop being promoted (see `_form`)."""


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    return None


def _parts(op: Operation) -> tuple[SSAValue, list[SSAValue], Attribute]:
    """(buffer, indices, value type) of a load or store."""
    if isinstance(op, memref.LoadOp):
        return op.memref, list(op.indices), op.res.type
    if isinstance(op, vector.LoadOp):
        return op.base, list(op.indices), op.result.type
    if isinstance(op, memref.StoreOp):
        return op.memref, list(op.indices), op.value.type
    assert isinstance(op, vector.StoreOp)
    return op.base, list(op.indices), op.vector.type


def _width(t: Attribute) -> int:
    return t.get_shape()[0] if isinstance(t, VectorType) else 1


def local_buffers(fn: Operation) -> set[SSAValue]:
    """The allocas of `fn` used by nothing but loads and stores of their elements (so no other
    pointer can reach them)."""
    found: set[SSAValue] = set()
    for op in fn.walk():
        if isinstance(op, memref.AllocaOp) and all(
            isinstance(u.operation, _LOADS + _STORES) and _parts(u.operation)[0] is op.memref
            for u in op.memref.uses
        ):
            found.add(op.memref)
    return found


Form = tuple[tuple[tuple[object, int], ...], int]
"""An index as a linear form: ((atom, coefficient), ...) sorted, plus a constant. An atom is a
value fixed in the loop (defined outside it) or a pure index op of such values."""

_LINEAR = (arith.AddiOp, arith.SubiOp, arith.MuliOp)
_PURE_INDEX = (arith.DivSIOp, arith.RemSIOp, arith.FloorDivSIOp, arith.CeilDivSIOp, arith.DivUIOp,
               arith.RemUIOp, arith.MaxSIOp, arith.MinSIOp, arith.IndexCastOp)  # fmt: skip


def _defined_inside(v: SSAValue, loop: Operation) -> bool:
    """`v` is the loop's block argument or the result of an op nested in it (the loop's own
    results are never an index inside it)."""
    return loop.is_ancestor(v.owner)


def _combine(a: Form, b: Form, sign: int = 1) -> Form:
    terms: dict[object, int] = dict(a[0])
    for atom, coefficient in b[0]:
        terms[atom] = terms.get(atom, 0) + sign * coefficient
    kept = tuple(sorted(((k, c) for k, c in terms.items() if c), key=lambda kc: repr(kc[0])))
    return kept, a[1] + sign * b[1]


def _scale(a: Form, k: int) -> Form:
    if k == 0:
        return (), 0
    return tuple((atom, c * k) for atom, c in a[0]), a[1] * k


def _form(v: SSAValue, loop: Operation, memo: dict[SSAValue, Form | None]) -> Form | None:
    """The index `v` as a linear form of values fixed in `loop`, or None where it varies."""
    if v in memo:
        return memo[v]
    memo[v] = None  # cycles (none in SSA) and values that vary stay None
    const = _const(v)
    result: Form | None
    if const is not None:
        result = (), const
    elif not _defined_inside(v, loop):
        result = ((v, 1),), 0
    else:
        op = v.owner
        result = None
        if isinstance(op, _LINEAR):
            a, b = (_form(x, loop, memo) for x in op.operands)
            if a is not None and b is not None:
                if isinstance(op, arith.AddiOp):
                    result = _combine(a, b)
                elif isinstance(op, arith.SubiOp):
                    result = _combine(a, b, -1)
                elif not b[0]:
                    result = _scale(a, b[1])
                elif not a[0]:
                    result = _scale(b, a[1])
                else:
                    result = (((op.name, a, b), 1),), 0
        elif isinstance(op, _PURE_INDEX):
            forms = [_form(x, loop, memo) for x in op.operands]
            if None not in forms:
                result = (((op.name, *forms), 1),), 0
    memo[v] = result
    return result


def _provably_disjoint(p: tuple[Form, ...], q: tuple[Form, ...], wp: int, wq: int) -> bool:
    """Places p and q (vectors of wp and wq lanes along the last axis) never overlap: in some
    axis their forms differ by a constant that separates them."""
    last = len(p) - 1
    for d, (a, b) in enumerate(zip(p, q, strict=True)):
        if a[0] != b[0]:
            continue
        delta = b[1] - a[1]
        if d < last and delta != 0:
            return True
        if d == last and (delta >= wp or -delta >= wq):
            return True
    return False


def _places(
    accesses: list[Operation], bufs: set[SSAValue], loop: Operation,
    memo: dict[SSAValue, Form | None],
) -> dict[SSAValue, dict[tuple[Form, ...], Attribute]]:  # fmt: skip
    """Per buffer, the type accessed at each place fixed in `loop`, for the buffers whose
    accesses among `accesses` are all at such places, identical or disjoint."""
    places: dict[SSAValue, dict[tuple[Form, ...], Attribute]] = {}
    bad: set[SSAValue] = set()
    for op in accesses:
        buf, indices, t = _parts(op)
        if buf not in bufs or buf in bad:
            continue
        forms = [_form(i, loop, memo) for i in indices]
        if (isinstance(t, VectorType) and len(t.get_shape()) != 1) or None in forms:
            bad.add(buf)
            continue
        types = places.setdefault(buf, {})
        if types.setdefault(tuple(forms), t) != t:  # type: ignore[arg-type]
            bad.add(buf)
    return {b: ts for b, ts in places.items() if b not in bad and _disjoint(ts)}


def _disjoint(types: dict[tuple[Form, ...], Attribute]) -> bool:
    """Places that differ do not overlap (a vector covers `width` elements of the last axis)."""
    items = list(types.items())
    return all(
        _provably_disjoint(p, q, _width(tp), _width(tq))
        for k, (p, tp) in enumerate(items)
        for q, tq in items[k + 1 :]
    )


def _accesses(ops: Iterable[Operation], bufs: Container[SSAValue]) -> Iterable[Operation]:
    for op in ops:
        for inner in op.walk():
            if isinstance(inner, _LOADS + _STORES) and _parts(inner)[0] in bufs:
                yield inner


def _in_inner_loop(access: Operation, loop: Operation) -> bool:
    parent = access.parent_op()
    while parent is not None and parent is not loop:
        if isinstance(parent, scf.ForOp | scf.ParallelOp | scf.WhileOp):
            return True
        parent = parent.parent_op()
    return False


def _materialize(
    v: SSAValue, loop: Operation, cache: dict[SSAValue, SSAValue]
) -> SSAValue:  # fmt: skip
    """`v`, an index fixed in `loop`, as a value available before it: itself where it is
    defined outside, else its (pure) computation cloned in front of the loop."""
    if not _defined_inside(v, loop):
        return v
    if v not in cache:
        op = v.owner
        assert isinstance(op, Operation) and not op.regions
        operands = [_materialize(x, loop, cache) for x in op.operands]
        clone = op.clone()
        for k, x in enumerate(operands):
            clone.operands[k] = x
        Rewriter.insert_op(clone, InsertPoint.before(loop))
        cache[v] = clone.results[op.results.index(v)]  # type: ignore[arg-type]
    return cache[v]


def _load_op(buf: SSAValue, indices: list[SSAValue], t: Attribute) -> Operation:
    if isinstance(t, VectorType):
        return vector.LoadOp(buf, indices, t)
    return memref.LoadOp.get(buf, indices)


def _store_op(value: SSAValue, buf: SSAValue, indices: list[SSAValue], t: Attribute) -> Operation:
    if isinstance(t, VectorType):
        return vector.StoreOp(value, buf, indices)
    return memref.StoreOp.get(value, buf, indices)


class _Promoter:
    def __init__(self, local: set[SSAValue]):
        self.local = local
        self.types: dict[SSAValue, dict[tuple[object, ...], Attribute]] = {}
        self.loop: Operation | None = None
        self.forms: dict[SSAValue, Form | None] = {}
        self.at: dict[Key, list[SSAValue]] = {}  # a place's indices as one access wrote them
        self.made: dict[SSAValue, SSAValue] = {}
        self.loops = 0

    def type_of(self, key: Key) -> Attribute:
        return self.types[key[0]][key[1]]

    def key(self, op: Operation) -> Key:
        assert self.loop is not None
        buf, indices, _ = _parts(op)
        place = tuple(_form(i, self.loop, self.forms) for i in indices)
        self.at.setdefault((buf, place), indices)
        return buf, place

    def indices(self, key: Key) -> list[SSAValue]:
        """A place's indices in front of the loop, computed once there (so they also serve
        the stores after it)."""
        assert self.loop is not None
        return [_materialize(i, self.loop, self.made) for i in self.at[key]]

    def forward(self, block: Block, current: dict[Key, SSAValue]) -> None:
        """Replace the block's accesses to promoted places by the values in `current` (updated
        in place); an `scf.if` whose branches store a place gains a result for it."""
        for op in list(block.ops):
            if isinstance(op, _LOADS) and _parts(op)[0] in self.types:
                op.results[0].replace_all_uses_with(current[self.key(op)])
                Rewriter.erase_op(op)
            elif isinstance(op, _STORES) and _parts(op)[0] in self.types:
                current[self.key(op)] = op.operands[0]
                Rewriter.erase_op(op)
            elif isinstance(op, scf.IfOp) and any(True for _ in _accesses([op], self.types)):
                self.forward_if(op, current)

    def forward_if(self, op: scf.IfOp, current: dict[Key, SSAValue]) -> None:
        accesses = _accesses([op], self.types)
        stored = list(dict.fromkeys(self.key(a) for a in accesses if isinstance(a, _STORES)))
        branches: list[dict[Key, SSAValue]] = []
        for region in (op.true_region, op.false_region):
            mine = dict(current)
            if region.blocks:
                self.forward(region.block, mine)
            branches.append(mine)
        if not stored:
            return
        if not op.false_region.blocks:
            op.false_region.add_block(Block([scf.YieldOp()]))
        for region, mine in zip((op.true_region, op.false_region), branches, strict=True):
            yield_op = region.block.last_op
            assert isinstance(yield_op, scf.YieldOp)
            Rewriter.replace_op(
                yield_op, scf.YieldOp(*yield_op.operands, *(mine[k] for k in stored))
            )
        types = [*op.result_types, *(self.type_of(k) for k in stored)]
        true_region, false_region = op.true_region, op.false_region
        new_if = scf.IfOp(
            op.cond, types, op.detach_region(true_region), op.detach_region(false_region)
        )
        Rewriter.insert_op(new_if, InsertPoint.before(op))
        for old, new in zip(op.results, new_if.results, strict=False):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
        for k, res in zip(stored, new_if.results[len(op.results) :], strict=True):
            current[k] = res

    def promote_loop(self, loop: scf.ForOp) -> None:
        body = loop.body.block
        self.loop, self.forms, self.at, self.made = loop, {}, {}, {}
        accesses = list(_accesses(body.ops, self.local))
        types = _places(accesses, self.local, loop, self.forms)
        for a in accesses:  # an inner loop that still accesses a buffer could not promote it
            if _in_inner_loop(a, loop):
                types.pop(_parts(a)[0], None)
        seen: dict[Key, bool] = {}
        for a in accesses:
            if _parts(a)[0] in types:
                seen.setdefault(self.key(a), isinstance(a, _LOADS))
        if not any(seen.values()):  # no value carried from one iteration to the next
            return
        self.types = types  # type: ignore[assignment]
        keys = list(seen)
        where = {k: self.indices(k) for k in keys}  # in front of the loop, for after it too
        inits = []
        for k in keys:
            load = _load_op(k[0], where[k], self.type_of(k))
            Rewriter.insert_op(load, InsertPoint.before(loop))
            inits.append(load.results[0])
        current = {k: body.insert_arg(self.type_of(k), len(body.args)) for k in keys}
        self.forward(body, current)
        old_yield = body.last_op
        assert isinstance(old_yield, scf.YieldOp)
        Rewriter.replace_op(
            old_yield, scf.YieldOp(*old_yield.operands, *(current[k] for k in keys))
        )
        n_old = len(loop.results)
        new_loop = scf.ForOp(
            loop.lb, loop.ub, loop.step, [*loop.iter_args, *inits], loop.detach_region(loop.body)
        )
        Rewriter.insert_op(new_loop, InsertPoint.before(loop))
        for old, new in zip(loop.results, new_loop.results, strict=False):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(loop)
        after = new_loop.next_op
        assert after is not None
        for k, res in zip(keys, new_loop.results[n_old:], strict=True):
            store = _store_op(res, k[0], where[k], self.type_of(k))
            Rewriter.insert_op(store, InsertPoint.before(after))
        self.types = {}
        self.loops += 1


def hoist_loop_invariant_accesses(fn: Operation) -> int:
    """Promote in every `scf.for` of `fn`, innermost first; returns how many loops changed."""
    local = local_buffers(fn)
    if not local:
        return 0
    promoter = _Promoter(local)
    loops = [op for op in fn.walk() if isinstance(op, scf.ForOp)]
    for loop in reversed(loops):  # post-order: a loop's inner loops come after it in walk()
        promoter.promote_loop(loop)
    return promoter.loops


class HoistLoopInvariantAccessesPass(ModulePass):
    """`hoist-loop-invariant-accesses`: register tiles carried through loops as SSA values."""

    name = "hoist-loop-invariant-accesses"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hoist_loop_invariant_accesses(op)
