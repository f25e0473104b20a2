"""Einsum, lowered to the graph ops the compiler already schedules well: diagonals as a mask and
a sum, indices only one operand uses summed out early, operand pairs contracted as batched
matmuls (batch, free and contracted indices grouped by transposes and reshapes), and a final
transpose into the output's order."""

from __future__ import annotations

import math
import string

import numpy as np

from nnvm.frontend.onnx.builder import ImportShapeError, Unsupported, Value
from nnvm.frontend.onnx.registry import NodeContext, converter

_LETTERS = set(string.ascii_letters)


def _parse(equation: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """Per operand its index letters, and the output's; `...` becomes fresh letters (aligned
    on the right, numpy broadcasting)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ImportShapeError(
            f"einsum equation {equation!r} has {len(terms)} operands, the node {len(ranks)}"
        )
    used = set(eq) & _LETTERS
    fresh = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    named_terms: list[str] = []
    for term, rank in zip(terms, ranks, strict=True):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise ImportShapeError(f"einsum term {term!r} is malformed")
        named = term.replace("...", "")
        if any(c not in _LETTERS for c in named):
            raise ImportShapeError(f"einsum term {term!r} uses something other than letters")
        if len(named) > rank or ("..." not in term and len(named) != rank):
            raise ImportShapeError(
                f"einsum term {term!r} names {len(named)} axes of a rank-{rank} operand"
            )
        named_terms.append(named)
    ellipsis_rank = max(
        (r - len(n) for t, n, r in zip(terms, named_terms, ranks, strict=True) if "..." in t),
        default=0,
    )
    parsed: list[list[str]] = []
    for term, named, rank in zip(terms, named_terms, ranks, strict=True):
        if "..." in term:
            k = rank - len(named)  # right-aligned: the last k ellipsis letters
            head, _, tail = term.partition("...")
            parsed.append([*head, *fresh[ellipsis_rank - k : ellipsis_rank], *tail])
        else:
            parsed.append(list(named))
    ell = fresh[:ellipsis_rank]
    if arrow:
        if rhs.count("...") > 1 or any(c not in _LETTERS for c in rhs.replace("...", "")):
            raise ImportShapeError(f"einsum output {rhs!r} is malformed")
        head, dots, tail = rhs.partition("...")
        out = [*head, *(ell if dots else []), *tail]
    else:
        counts: dict[str, int] = {}
        for t in parsed:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    everything = {c for t in parsed for c in t}
    if missing := [c for c in out if c not in everything]:
        raise ImportShapeError(f"einsum output index {missing[0]!r} is on no operand")
    if len(set(out)) != len(out):
        raise ImportShapeError(f"einsum output {rhs!r} repeats an index")
    return parsed, out


class _Term:
    """An operand and the index letter of each of its axes."""

    def __init__(self, value: Value, letters: list[str]):
        self.value = value
        self.letters = letters


def _transpose(ctx: NodeContext, t: _Term, order: list[str]) -> _Term:
    perm = [t.letters.index(c) for c in order]
    if perm == list(range(len(perm))):
        return _Term(t.value, order)
    return _Term(ctx.emit("nnvm.transpose", t.value, perm=perm), order)


def _reshape(ctx: NodeContext, v: Value, shape: list[int]) -> Value:
    if list(ctx.shape(v)) == shape:
        return v
    return ctx.emit("nnvm.reshape", v, shape=shape)


def _sum_out(ctx: NodeContext, t: _Term, drop: set[str]) -> _Term:
    axes = [k for k, c in enumerate(t.letters) if c in drop]
    if not axes:
        return t
    kept = [c for c in t.letters if c not in drop]
    return _Term(ctx.emit("nnvm.sum", t.value, axes=axes, keepdims=False), kept)


def _diagonals(ctx: NodeContext, t: _Term) -> _Term:
    """A letter repeated on one operand takes the diagonal: multiply by an identity mask over
    the two axes and sum the second away, until every letter is unique."""
    while True:
        seen: dict[str, int] = {}
        pair = None
        for k, c in enumerate(t.letters):
            if c in seen:
                pair = (seen[c], k)
                break
            seen[c] = k
        if pair is None:
            return t
        a, b = pair
        shape = ctx.shape(t.value)
        if shape[a] != shape[b]:
            raise ImportShapeError(
                f"einsum index {t.letters[a]!r} has extents {shape[a]} and {shape[b]}"
            )
        mask_shape = [1] * len(shape)
        mask_shape[a] = mask_shape[b] = shape[a]
        eye = np.eye(shape[a], dtype=ctx.dtype(t.value)).reshape(mask_shape)
        masked = ctx.emit("nnvm.mul", t.value, ctx.known(eye, tag="diagonal"))
        summed = ctx.emit("nnvm.sum", masked, axes=[b], keepdims=False)
        t = _Term(summed, [c for k, c in enumerate(t.letters) if k != b])


def _contract(ctx: NodeContext, a: _Term, b: _Term, keep: set[str]) -> _Term:
    """a and b as one term over the letters in `keep` (shared letters not kept are summed)."""
    sa = dict(zip(a.letters, ctx.shape(a.value), strict=True))
    sb = dict(zip(b.letters, ctx.shape(b.value), strict=True))
    shared = [c for c in a.letters if c in sb]
    batch = [c for c in shared if c in keep]
    inner = [c for c in shared if c not in keep]
    free_a = [c for c in a.letters if c not in sb]
    free_b = [c for c in b.letters if c not in sa]
    for c in list(inner):
        if sa[c] != sb[c]:
            if 1 not in (sa[c], sb[c]):
                raise ImportShapeError(f"einsum index {c!r} has extents {sa[c]} and {sb[c]}")
            # extent 1 on one side broadcasts: sum_c a[c] b[c] = a[0] * sum_c b[c]
            a, b = _sum_out(ctx, a, {c}), _sum_out(ctx, b, {c})
            inner.remove(c)
    a = _transpose(ctx, a, [*batch, *free_a, *inner])
    b = _transpose(ctx, b, [*batch, *inner, *free_b])
    bshape = [max(sa[c], sb[c]) for c in batch]
    m = math.prod(sa[c] for c in free_a)
    n = math.prod(sb[c] for c in free_b)
    kk = math.prod(sa[c] for c in inner)
    lhs = _reshape(ctx, a.value, [*(sa[c] for c in batch), m, kk])
    rhs = _reshape(ctx, b.value, [*(sb[c] for c in batch), kk, n])
    product = ctx.emit("nnvm.matmul", lhs, rhs)
    shape = [*bshape, *(sa[c] for c in free_a), *(sb[c] for c in free_b)]
    return _Term(_reshape(ctx, product, shape), [*batch, *free_a, *free_b])


@converter("Einsum", attrs=("equation",))
def _einsum(ctx: NodeContext) -> list[Value | None]:
    equation = ctx.attr("equation")
    if not isinstance(equation, str) or not equation:
        raise Unsupported("Einsum needs an equation")
    operands = [ctx.required(k) for k in range(len(ctx.inputs))]
    dtypes = {ctx.dtype(v) for v in operands}
    if len(dtypes) != 1:
        raise ImportShapeError(f"einsum operands have different dtypes {sorted(map(str, dtypes))}")
    letters, out = _parse(equation, [ctx.rank(v) for v in operands])
    terms = [_diagonals(ctx, _Term(v, t)) for v, t in zip(operands, letters, strict=True)]
    for k, t in enumerate(terms):
        elsewhere = set(out).union(*(u.letters for j, u in enumerate(terms) if j != k))
        terms[k] = _sum_out(ctx, t, set(t.letters) - elsewhere)
    acc = terms[0]
    for k in range(1, len(terms)):
        keep = set(out).union(*(u.letters for u in terms[k + 1 :]))
        acc = _contract(ctx, acc, terms[k], keep)
    acc = _sum_out(ctx, acc, set(acc.letters) - set(out))
    return [_transpose(ctx, acc, out).value]
