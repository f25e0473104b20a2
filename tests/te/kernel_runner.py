"""Running lowered te kernels in tests: through the CPU JIT when it is available, else through
xDSL's interpreter with numpy-backed implementations of the ops the lowering emits.

The interpreter keeps memrefs as numpy arrays and scalars as numpy scalars of the element
type, so f32 kernels compute in f32 as the JIT does; vectors are 1-D numpy arrays. Fresh
buffers are filled with NaN (floats) or a marker value so a read of an element that was never
written shows up in the results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref, scf, vector
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    VectorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Attribute

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of


def dtype_of(t: Attribute) -> np.dtype:
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    return numpy_dtype_of(t)


def _scalar(value: Any, t: Attribute) -> Any:
    if isinstance(t, IndexType):
        return int(value)
    return dtype_of(t).type(value)


def _result_type(op) -> Attribute:  # noqa: ANN001
    return op.results[0].type


def _elt(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _cast_to(value: Any, t: Attribute) -> Any:
    if isinstance(t, VectorType):
        return np.asarray(value).astype(dtype_of(t.element_type))
    return _scalar(value, t)


def _unsigned(t: Attribute) -> bool:
    e = _elt(t)
    return isinstance(e, IntegerType) and e.signedness.data == Signedness.UNSIGNED


_BINARY = {
    arith.AddfOp: np.add,
    arith.AddiOp: np.add,
    arith.SubfOp: np.subtract,
    arith.SubiOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.MuliOp: np.multiply,
    arith.DivfOp: np.divide,
    arith.FloorDivSIOp: np.floor_divide,
    arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax,
    arith.MinnumfOp: np.fmin,
    arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum,
    arith.MaxUIOp: np.maximum,
    arith.MinUIOp: np.minimum,
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.DivUIOp: np.floor_divide,
    arith.RemUIOp: np.remainder,
    xmath.PowFOp: np.power,
    xmath.Atan2Op: np.arctan2,
    xmath.CopySignOp: np.copysign,
}


def _round_half_away(x: Any) -> Any:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_ERF = np.vectorize(math.erf, otypes=[np.float64])

_UNARY = {
    arith.NegfOp: np.negative,
    xmath.ExpOp: np.exp,
    xmath.Exp2Op: np.exp2,
    xmath.ExpM1Op: np.expm1,
    xmath.LogOp: np.log,
    xmath.Log2Op: np.log2,
    xmath.Log1pOp: np.log1p,
    xmath.TanhOp: np.tanh,
    xmath.SqrtOp: np.sqrt,
    xmath.RsqrtOp: lambda x: 1 / np.sqrt(x),
    xmath.ErfOp: _ERF,
    xmath.FloorOp: np.floor,
    xmath.CeilOp: np.ceil,
    xmath.RoundOp: _round_half_away,
    xmath.RoundEvenOp: np.round,
    xmath.TruncOp: np.trunc,
    xmath.SinOp: np.sin,
    xmath.CosOp: np.cos,
    xmath.TanOp: np.tan,
    xmath.AtanOp: np.arctan,
    xmath.AbsFOp: np.abs,
    xmath.AbsIOp: np.abs,
}

_CMPF = {
    0: lambda a, b: np.zeros_like(a, dtype=bool),
    1: lambda a, b: a == b,
    2: lambda a, b: a > b,
    3: lambda a, b: a >= b,
    4: lambda a, b: a < b,
    5: lambda a, b: a <= b,
    6: lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
    7: lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    9: lambda a, b: ~(a <= b),
    10: lambda a, b: ~(a < b),
    11: lambda a, b: ~(a >= b),
    12: lambda a, b: ~(a > b),
    13: lambda a, b: a != b,
    14: lambda a, b: np.isnan(a) | np.isnan(b),
    15: lambda a, b: np.ones_like(a, dtype=bool),
}

_CMPI = {
    0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater,
    5: np.greater_equal, 6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal,
}  # fmt: skip


def _fresh(t: MemRefType) -> np.ndarray:
    dt = dtype_of(t.element_type)
    shape = tuple(t.get_shape())
    if np.issubdtype(dt, np.floating):
        return np.full(shape, np.nan, dtype=dt)
    if dt == np.bool_:
        return np.zeros(shape, dtype=dt)
    return np.full(shape, 77, dtype=dt)


class NumpyFunctions(InterpreterFunctions):
    """numpy semantics for what lower-te-to-loops emits (overrides xDSL's scalar ones)."""

    @impl(arith.ConstantOp)
    def run_constant(self, interp: Interpreter, op: arith.ConstantOp, args: PythonValues):
        v = op.value
        t = op.result.type
        if isinstance(v, DenseIntOrFPElementsAttr):
            vals = v.get_values()
            return (np.asarray(vals, dtype=dtype_of(_elt(t))).reshape(t.get_shape()),)  # type: ignore[attr-defined]
        if isinstance(v, FloatAttr):
            return (_scalar(v.value.data, t),)
        assert isinstance(v, IntegerAttr)
        data = v.value.data
        if t == IntegerType(1):
            return (np.bool_(data != 0),)
        return (_scalar(data, t),)

    def _binary(self, interp: Interpreter, op, args: PythonValues):  # noqa: ANN001
        a, b = args
        fn = _BINARY[type(op)]
        with np.errstate(all="ignore"):
            return (_cast_to(fn(a, b), _result_type(op)),)

    def _unary(self, interp: Interpreter, op, args: PythonValues):  # noqa: ANN001
        (a,) = args
        with np.errstate(all="ignore"):
            return (_cast_to(_UNARY[type(op)](a), _result_type(op)),)

    @impl(arith.DivSIOp)
    def run_divsi(self, interp: Interpreter, op: arith.DivSIOp, args: PythonValues):
        a, b = args
        q = np.trunc(np.divide(np.asarray(a, np.float64), b))
        return (_cast_to(q, _result_type(op)),)

    @impl(arith.RemSIOp)
    def run_remsi(self, interp: Interpreter, op: arith.RemSIOp, args: PythonValues):
        a, b = args
        return (_cast_to(np.fmod(a, b), _result_type(op)),)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, interp: Interpreter, op: arith.CeilDivSIOp, args: PythonValues):
        a, b = args
        return (_cast_to(-np.floor_divide(np.negative(a), b), _result_type(op)),)

    @impl(arith.CmpfOp)
    def run_cmpf(self, interp: Interpreter, op: arith.CmpfOp, args: PythonValues):
        a, b = args
        r = _CMPF[op.predicate.value.data](a, b)
        return (np.bool_(r) if np.ndim(r) == 0 else np.asarray(r),)

    @impl(arith.CmpiOp)
    def run_cmpi(self, interp: Interpreter, op: arith.CmpiOp, args: PythonValues):
        a, b = args
        pred = op.predicate.value.data
        if pred >= 6 and not _unsigned(op.lhs.type):
            a, b = np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64)
        r = _CMPI[pred](a, b)
        return (np.bool_(r) if np.ndim(r) == 0 else np.asarray(r),)

    @impl(arith.SelectOp)
    def run_select(self, interp: Interpreter, op: arith.SelectOp, args: PythonValues):
        c, a, b = args
        if np.ndim(c) == 0 and np.ndim(a) == 0:
            return (a if c else b,)
        return (np.where(c, a, b).astype(np.asarray(a).dtype),)

    def _convert(self, interp: Interpreter, op, args: PythonValues):  # noqa: ANN001
        (a,) = args
        t = _result_type(op)
        if isinstance(op, arith.FPToSIOp | arith.FPToUIOp):
            a = np.trunc(a)
        if isinstance(op, arith.BitcastOp):
            return (np.asarray(a).view(dtype_of(_elt(t))),)
        if isinstance(op, arith.ExtUIOp | arith.UIToFPOp) and not _unsigned(op.operands[0].type):
            src = np.asarray(a)
            if src.dtype != np.bool_:
                a = src.astype(src.dtype.str.replace("i", "u"))
        with np.errstate(all="ignore"):
            return (_cast_to(a, t),)

    @impl(memref.AllocOp)
    def run_alloc(self, interp: Interpreter, op: memref.AllocOp, args: PythonValues):
        return (_fresh(op.memref.type),)

    @impl(memref.AllocaOp)
    def run_alloca(self, interp: Interpreter, op: memref.AllocaOp, args: PythonValues):
        return (_fresh(op.memref.type),)

    @impl(memref.DeallocOp)
    def run_dealloc(self, interp: Interpreter, op: memref.DeallocOp, args: PythonValues):
        return ()

    @impl(memref.LoadOp)
    def run_load(self, interp: Interpreter, op: memref.LoadOp, args: PythonValues):
        buf, *idx = args
        for i, n in zip(idx, buf.shape, strict=True):
            if not 0 <= i < n:
                raise IndexError(f"memref.load out of bounds: {idx} in {buf.shape}")
        return (buf[tuple(idx)],)

    @impl(memref.StoreOp)
    def run_store(self, interp: Interpreter, op: memref.StoreOp, args: PythonValues):
        value, buf, *idx = args
        for i, n in zip(idx, buf.shape, strict=True):
            if not 0 <= i < n:
                raise IndexError(f"memref.store out of bounds: {idx} in {buf.shape}")
        buf[tuple(idx)] = value
        return ()

    @impl(memref.CopyOp)
    def run_copy(self, interp: Interpreter, op: memref.CopyOp, args: PythonValues):
        src, dst = args
        dst[...] = src
        return ()

    @impl(memref.GetGlobalOp)
    def run_get_global(self, interp: Interpreter, op: memref.GetGlobalOp, args: PythonValues):
        glob = interp.get_op_for_symbol(op.name_.root_reference.data)
        assert isinstance(glob, memref.GlobalOp)
        t = op.memref.type
        init = glob.initial_value
        assert isinstance(init, DenseIntOrFPElementsAttr)
        values = np.asarray(init.get_values(), dtype=dtype_of(t.element_type))  # type: ignore[attr-defined]
        shape = tuple(t.get_shape())  # type: ignore[attr-defined]
        if values.size == int(np.prod(shape)):
            return (values.reshape(shape).copy(),)
        return (np.broadcast_to(values, shape).copy(),)

    @impl(vector.LoadOp)
    def run_vload(self, interp: Interpreter, op: vector.LoadOp, args: PythonValues):
        buf, *idx = args
        n = op.result.type.get_shape()[0]
        row = buf[tuple(idx[:-1])]
        if idx[-1] < 0 or idx[-1] + n > row.shape[0]:
            raise IndexError(f"vector.load out of bounds: {idx} + {n} in {buf.shape}")
        return (np.array(row[idx[-1] : idx[-1] + n]),)

    @impl(vector.StoreOp)
    def run_vstore(self, interp: Interpreter, op: vector.StoreOp, args: PythonValues):
        value, buf, *idx = args
        n = len(value)
        row = buf[tuple(idx[:-1])]
        if idx[-1] < 0 or idx[-1] + n > row.shape[0]:
            raise IndexError(f"vector.store out of bounds: {idx} + {n} in {buf.shape}")
        row[idx[-1] : idx[-1] + n] = value
        return ()

    @impl(vector.CreateMaskOp)
    def run_create_mask(self, interp: Interpreter, op: vector.CreateMaskOp, args: PythonValues):
        (count,) = args
        return (np.arange(op.mask_vector.type.get_shape()[0]) < count,)

    @impl(vector.MaskedLoadOp)
    def run_masked_load(self, interp: Interpreter, op: vector.MaskedLoadOp, args: PythonValues):
        """The lanes in the mask read (each must be inside the row: a masked-off lane may
        point anywhere), the others take the passthru's."""
        buf, *idx, mask, passthru = args
        out = np.array(passthru)
        if not mask.any():
            return (out,)  # no lane reads: its indices may be anywhere (a pad's row above)
        row = buf[tuple(idx[:-1])]
        for k in np.flatnonzero(mask):
            if not 0 <= idx[-1] + k < row.shape[0]:
                raise IndexError(f"vector.maskedload lane {k} out of bounds: {idx} in {buf.shape}")
            out[k] = row[idx[-1] + k]
        return (out,)

    @impl(vector.MaskedStoreOp)
    def run_masked_store(self, interp: Interpreter, op: vector.MaskedStoreOp, args: PythonValues):
        buf, *idx, mask, value = args
        if not mask.any():
            return ()
        row = buf[tuple(idx[:-1])]
        for k in np.flatnonzero(mask):
            if not 0 <= idx[-1] + k < row.shape[0]:
                raise IndexError(f"vector.maskedstore lane {k} out of bounds: {idx} in {buf.shape}")
            row[idx[-1] + k] = value[k]
        return ()

    @impl(vector.BroadcastOp)
    def run_broadcast(self, interp: Interpreter, op: vector.BroadcastOp, args: PythonValues):
        (x,) = args
        t = op.vector.type
        return (np.full(t.get_shape(), x, dtype=dtype_of(t.element_type)),)

    @impl(vector.FMAOp)
    def run_vfma(self, interp: Interpreter, op: vector.FMAOp, args: PythonValues):
        a, b, c = args
        return ((a * b + c).astype(c.dtype, copy=False),)

    @impl(xmath.FmaOp)
    def run_fma(self, interp: Interpreter, op: xmath.FmaOp, args: PythonValues):
        a, b, c = args
        return (_scalar(a * b + c, op.result.type),)

    @impl(vector.ReductionOp)
    def run_reduction(self, interp: Interpreter, op: vector.ReductionOp, args: PythonValues):
        v, *acc = args
        kind = str(op.kind).lower()
        fns = {"add": np.sum, "mul": np.prod, "maximumf": np.max, "minimumf": np.min}
        fn = next(f for k, f in fns.items() if k in kind)
        return (_scalar(fn(v), op.dest.type),)

    @impl(scf.ParallelOp)
    def run_parallel(self, interp: Interpreter, op: scf.ParallelOp, args: PythonValues):
        n = len(op.lowerBound)
        lbs, ubs, steps = args[:n], args[n : 2 * n], args[2 * n : 3 * n]
        import itertools

        ranges = [range(lb, ub, st) for lb, ub, st in zip(lbs, ubs, steps, strict=True)]
        for point in itertools.product(*ranges):
            interp.run_ssacfg_region(op.body, point, "parallel")
        return ()

    @impl_terminator(scf.ReduceOp)
    def run_reduce(self, interp: Interpreter, op: scf.ReduceOp, args: PythonValues):
        from xdsl.interpreter import ReturnedValues

        return ReturnedValues(()), ()

    @impl(func.CallOp)
    def run_call(self, interp: Interpreter, op: func.CallOp, args: PythonValues):
        return interp.call_op(op.callee.root_reference.data, args)

    @impl(bufferization.ToBufferOp)
    def run_to_buffer(self, interp: Interpreter, op, args: PythonValues):  # noqa: ANN001
        return (args[0],)

    @impl(bufferization.ToTensorOp)
    def run_to_tensor(self, interp: Interpreter, op, args: PythonValues):  # noqa: ANN001
        return (args[0],)


for _cls in _BINARY:
    setattr(NumpyFunctions, f"run_{_cls.__name__}", impl(_cls)(NumpyFunctions._binary))
for _cls in _UNARY:
    setattr(NumpyFunctions, f"run_{_cls.__name__}", impl(_cls)(NumpyFunctions._unary))
for _cls in (
    arith.IndexCastOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp,
    arith.ExtFOp, arith.TruncFOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.BitcastOp,
):  # fmt: skip
    setattr(NumpyFunctions, f"run_{_cls.__name__}", impl(_cls)(NumpyFunctions._convert))
register_impls(NumpyFunctions)


def make_interpreter(module: ModuleOp) -> Interpreter:
    interp = Interpreter(module, index_bitwidth=64)
    interp.register_implementations(FuncFunctions())
    interp.register_implementations(ScfFunctions())
    interp.register_implementations(NumpyFunctions(), override=True)
    return interp


def interpret_kernel(module: ModuleOp, name: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run kernel `name` (memref ins then outs) on numpy inputs; returns the outputs."""
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == name)
    types = list(fn.function_type.inputs.data)
    args: list[Any] = []
    for k, t in enumerate(types):
        assert isinstance(t, MemRefType)
        if k < len(inputs):
            args.append(
                np.ascontiguousarray(np.asarray(inputs[k], dtype=dtype_of(t.element_type))).copy()
            )
        else:
            args.append(_fresh(t))
    interp = make_interpreter(module)
    interp.call_op(name, tuple(args))
    return args[len(inputs) :]
