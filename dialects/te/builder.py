"""Writing te definitions in Python, TVM style: `compute(shape, lambda i, j: ...)`.

Graph ops implement `te_compute(self, b: KernelBuilder, inputs) -> outputs` with it:

    def te_compute(self, b, inputs):
        x, w = inputs
        return [b.reduce((m, n), "sum", (k,), lambda i, j, r: x[i, r] * w[j, r], name="dense")]

Index variables and values are `Expr`s: Python operators build arith ops (`//` is floordiv and
`%` is rem, both on non-negative indices), Python numbers take the type of the other operand,
and `TensorRef[...]` reads an element. Module functions (`select`, `maximum`, `exp`, `cast`,
...) cover the rest of the formula vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from nnvm.dialects.te import exprs
from nnvm.dialects.te.exprs import I1, INDEX
from nnvm.dialects.te.ops import (
    ComputeOp,
    ConstantOp,
    ExternOp,
    ReadOp,
    YieldOp,
    make_compute_block,
)

Scalar = int | float | bool

_CURRENT: list[Block] = []
"""The formula blocks being built (innermost last): where Expr operators insert their ops."""


def _emit(op: Operation) -> SSAValue:
    if not _CURRENT:
        raise RuntimeError("te expressions can only be built inside a compute's formula")
    _CURRENT[-1].add_op(op)
    return op.results[0]


class Expr:
    """A scalar value of a formula being built (an index, a float, an integer, an i1)."""

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: SSAValue):
        self.value = value

    @property
    def type(self) -> Attribute:
        return self.value.type

    # -- arithmetic ----------------------------------------------------------------------------

    def _bin(self, spelling: str, other: Expr | Scalar, swap: bool = False) -> Expr:
        if not isinstance(other, Expr) and not isinstance(other, bool):
            # x + 0, x - 0, x * 1, x / 1, floordiv by 1: no op at all (keeps formulas short)
            if (spelling in ("+", "-") and other == 0 and not swap) or (
                spelling in ("*", "/", "floordiv") and other == 1 and not swap
            ):
                return self
            if spelling in ("+", "*") and swap and other == (0 if spelling == "+" else 1):
                return self
        a, b = _unify(self, other)
        if swap:
            a, b = b, a
        return Expr(_emit(exprs.binary(spelling, a.value, b.value)))

    def __add__(self, o: Expr | Scalar) -> Expr:
        return self._bin("+", o)

    def __radd__(self, o: Scalar) -> Expr:
        return self._bin("+", o, swap=True)

    def __sub__(self, o: Expr | Scalar) -> Expr:
        return self._bin("-", o)

    def __rsub__(self, o: Scalar) -> Expr:
        return self._bin("-", o, swap=True)

    def __mul__(self, o: Expr | Scalar) -> Expr:
        return self._bin("*", o)

    def __rmul__(self, o: Scalar) -> Expr:
        return self._bin("*", o, swap=True)

    def __truediv__(self, o: Expr | Scalar) -> Expr:
        return self._bin("/", o)

    def __rtruediv__(self, o: Scalar) -> Expr:
        return self._bin("/", o, swap=True)

    def __floordiv__(self, o: Expr | Scalar) -> Expr:
        return self._bin("floordiv", o)

    def __mod__(self, o: Expr | Scalar) -> Expr:
        return self._bin("rem", o)

    def __neg__(self) -> Expr:
        if exprs.is_float_type(self.type):
            return Expr(_emit(exprs.unary("neg", self.value)))
        return 0 - self

    def __and__(self, o: Expr | bool) -> Expr:
        return self._bin("and", o)

    def __or__(self, o: Expr | bool) -> Expr:
        return self._bin("or", o)

    def __invert__(self) -> Expr:
        ones = const(True if self.type == I1 else -1, self.type)
        return self._bin("xor", ones)

    # -- comparisons (== and != are methods: Python's would break identity tests) --------------

    def _cmp(self, spelling: str, other: Expr | Scalar) -> Expr:
        a, b = _unify(self, other)
        return Expr(_emit(exprs.compare_infix(spelling, a.value, b.value)))

    def __lt__(self, o: Expr | Scalar) -> Expr:
        return self._cmp("<", o)

    def __le__(self, o: Expr | Scalar) -> Expr:
        return self._cmp("<=", o)

    def __gt__(self, o: Expr | Scalar) -> Expr:
        return self._cmp(">", o)

    def __ge__(self, o: Expr | Scalar) -> Expr:
        return self._cmp(">=", o)

    def eq(self, o: Expr | Scalar) -> Expr:
        return self._cmp("==", o)

    def ne(self, o: Expr | Scalar) -> Expr:
        return self._cmp("ne", o)

    def astype(self, t: Attribute) -> Expr:
        return cast(self, t)


def const(value: Scalar, t: Attribute) -> Expr:
    return Expr(_emit(exprs.constant(value, t)))


def _lift(x: Expr | Scalar, like: Attribute | None) -> Expr:
    if isinstance(x, Expr):
        return x
    if like is None:
        like = I1 if isinstance(x, bool) else INDEX if isinstance(x, int) else exprs.default_float()
    return const(x, like)


def _unify(a: Expr | Scalar, b: Expr | Scalar) -> tuple[Expr, Expr]:
    if isinstance(a, Expr):
        return a, _lift(b, a.type)
    if isinstance(b, Expr):
        return _lift(a, b.type), b
    return _lift(a, None), _lift(b, None)


# -- the formula vocabulary as functions ---------------------------------------------------------


def select(cond: Expr, a: Expr | Scalar, b: Expr | Scalar) -> Expr:
    """Lazy: the reads of the branch not taken do not happen (padding, boundaries)."""
    x, y = _unify(a, b)
    return Expr(_emit(exprs.select(cond.value, x.value, y.value)))


def maximum(a: Expr | Scalar, b: Expr | Scalar) -> Expr:
    x, y = _unify(a, b)
    return Expr(_emit(exprs.binary("max", x.value, y.value)))


def minimum(a: Expr | Scalar, b: Expr | Scalar) -> Expr:
    x, y = _unify(a, b)
    return Expr(_emit(exprs.binary("min", x.value, y.value)))


def binary(name: str, a: Expr | Scalar, b: Expr | Scalar) -> Expr:
    x, y = _unify(a, b)
    return Expr(_emit(exprs.binary(name, x.value, y.value)))


def unary(name: str, x: Expr) -> Expr:
    return Expr(_emit(exprs.unary(name, x.value)))


def exp(x: Expr) -> Expr:
    return unary("exp", x)


def log(x: Expr) -> Expr:
    return unary("log", x)


def sqrt(x: Expr) -> Expr:
    return unary("sqrt", x)


def tanh(x: Expr) -> Expr:
    return unary("tanh", x)


def cast(x: Expr | Scalar, t: Attribute) -> Expr:
    if not isinstance(x, Expr):
        return const(x, t)
    if exprs.is_index_type(x.type) and exprs.is_float_type(t):
        x = Expr(_emit(exprs.cast(x.value, exprs.int_type(64))))  # type: ignore[arg-type]
    op = exprs.cast(x.value, t)
    return x if op is None else Expr(_emit(op))


def bitcast(x: Expr, t: Attribute) -> Expr:
    """The same bits read as `t` (of the same width)."""
    from xdsl.dialects import arith

    return x if x.type == t else Expr(_emit(arith.BitcastOp(x.value, t)))


def compare(predicate: str, a: Expr | Scalar, b: Expr | Scalar) -> Expr:
    x, y = _unify(a, b)
    return Expr(_emit(exprs.compare(predicate, x.value, y.value)))


def all_of(conds: Sequence[Expr]) -> Expr | None:
    """The conjunction of conditions (None when there are none)."""
    out: Expr | None = None
    for c in conds:
        out = c if out is None else out & c
    return out


# ----------------------------------------------------------------------------------------------
# Tensors and kernels
# ----------------------------------------------------------------------------------------------


@dataclass
class TensorRef:
    """A tensor of the kernel being built: a placeholder or the result of a te op."""

    value: SSAValue

    @property
    def type(self) -> TensorType:
        t = self.value.type
        assert isinstance(t, TensorType)
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> Attribute:
        return self.type.element_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Expr | int | Sequence[Expr | int]) -> Expr:
        if not isinstance(indices, tuple | list):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise ValueError(f"a rank-{self.ndim} tensor is read with {len(indices)} indices")
        values = [_lift(i, INDEX).value for i in indices]
        return Expr(_emit(ReadOp(self.value, values)))


@dataclass
class KernelBuilder:
    """Appends te ops for one kernel to a block; stage names are kept unique."""

    block: Block
    prefix: str = ""
    taken: set[str] = field(default_factory=set)
    panel: int = 0
    """The target's matmul column-panel width (Capabilities.panel; 0: do not pack)."""

    def unique(self, name: str) -> str:
        """`<op>` for an op's main compute, `<op>.<name>` for its helpers (e.g. conv2d.pad)."""
        if self.prefix and name and name != self.prefix:
            base = f"{self.prefix}.{name}"
        else:
            base = name or self.prefix or "t"
        candidate, k = base, 1
        while candidate in self.taken:
            candidate = f"{base}_{k}"
            k += 1
        self.taken.add(candidate)
        return candidate

    def _formula(
        self,
        count: int,
        names: Sequence[str],
        fn: Callable[..., Expr | Scalar],
        dtype: Attribute | None,
    ) -> tuple[Region, Attribute]:
        block = make_compute_block(count, names)
        _CURRENT.append(block)
        try:
            out = fn(*[Expr(a) for a in block.args])
            if not isinstance(out, Expr):
                if dtype is None:
                    raise ValueError("a formula that returns a Python number needs a dtype")
                out = const(out, dtype)
            elif dtype is not None and out.type != dtype:
                out = cast(out, dtype)
        finally:
            _CURRENT.pop()
        block.add_op(YieldOp(out.value))
        return Region(block), out.type

    def compute(
        self,
        shape: Sequence[int],
        fn: Callable[..., Expr | Scalar],
        *,
        name: str = "",
        dtype: Attribute | None = None,
        axes: Sequence[str] | None = None,
        template: str | None = None,
    ) -> TensorRef:
        """result[i...] = fn(i...)."""
        names = list(axes) if axes is not None else default_axis_names(len(shape))
        region, elt = self._formula(len(shape), names, fn, dtype)
        op = ComputeOp(
            self.unique(name), TensorType(elt, list(shape)), names, region, template=template
        )
        self.block.add_op(op)
        return TensorRef(op.result)

    def reduce(
        self,
        shape: Sequence[int],
        kind: str,
        reduce_shape: Sequence[int],
        fn: Callable[..., Expr | Scalar],
        *,
        name: str = "",
        dtype: Attribute | None = None,
        axes: Sequence[str] | None = None,
        reduce_axes: Sequence[str] | None = None,
        template: str | None = None,
    ) -> TensorRef:
        """result[i...] = kind over r... of fn(i..., r...) (sum, prod, max, min)."""
        names = list(axes) if axes is not None else default_axis_names(len(shape))
        rnames = (
            list(reduce_axes)
            if reduce_axes is not None
            else [f"r{k}" if len(reduce_shape) > 1 else "r" for k in range(len(reduce_shape))]
        )
        if not reduce_shape:
            return self.compute(shape, fn, name=name, dtype=dtype, axes=names, template=template)
        region, elt = self._formula(len(shape) + len(reduce_shape), names + rnames, fn, dtype)
        op = ComputeOp(
            self.unique(name),
            TensorType(elt, list(shape)),
            names + rnames,
            region,
            kind,
            reduce_shape,
            template,
        )
        self.block.add_op(op)
        return TensorRef(op.result)

    def constant(self, array: np.ndarray) -> TensorRef:
        op = ConstantOp(dense_of(np.asarray(array)))
        self.block.add_op(op)
        return TensorRef(op.result)

    def extern(
        self, callee: str, inputs: Sequence[TensorRef], output_types: Sequence[TensorType]
    ) -> list[TensorRef]:
        op = ExternOp(callee, [t.value for t in inputs], output_types, tag=self.unique(callee))
        self.block.add_op(op)
        return [TensorRef(r) for r in op.results]

    def copy(self, x: TensorRef, name: str = "copy") -> TensorRef:
        return self.compute(x.shape, lambda *i: x[i], name=name)


_ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.float32): exprs.default_float(),
    np.dtype(np.float64): Float64Type(),
    np.dtype(np.float16): Float16Type(),
    np.dtype(np.int64): IntegerType(64),
    np.dtype(np.int32): IntegerType(32),
    np.dtype(np.int16): IntegerType(16),
    np.dtype(np.int8): IntegerType(8),
    np.dtype(np.uint8): IntegerType(8, Signedness.UNSIGNED),
    np.dtype(np.bool_): IntegerType(1),
}


def dense_of(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding a small numpy array (te.constant's value)."""
    elt = _ELEMENT_TYPES.get(array.dtype)
    if elt is None:
        raise TypeError(f"te.constant does not hold {array.dtype} values")
    flat = array.reshape(-1)
    if array.dtype == np.bool_:
        flat = flat.astype(np.int64)
    return DenseIntOrFPElementsAttr.from_list(TensorType(elt, list(array.shape)), flat.tolist())


def default_axis_names(rank: int) -> list[str]:
    base = ["i", "j", "k", "l", "m", "n"]
    if rank <= len(base):
        return base[:rank]
    return [f"i{k}" for k in range(rank)]


def identity_of(kind: str, t: Attribute) -> Scalar:
    value = exprs.identity_value(kind, t)
    if isinstance(value, float) and math.isinf(value) and not exprs.is_float_type(t):
        raise ValueError(f"{kind} has no identity for {t}")
    return value
