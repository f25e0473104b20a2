"""The numpy reference executor: runs a graph-level module op by op through each op's
`evaluate`. It is the oracle of the test suite and the engine of fold-constants, so it favours
obviously-right over fast."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.nnvm.base import EvalContext, NNVMOp
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.support.ir import argument_names, find_function


class ReferenceError(Exception):
    """A module the reference executor cannot run, or inputs that do not fit it."""


def _coerce_input(value: object, arg_type: object, what: str) -> np.ndarray:
    if not isinstance(arg_type, TensorType):
        raise ReferenceError(f"{what}: only tensor arguments are supported, got {arg_type}")
    dtype = numpy_dtype_of(arg_type.element_type)
    array = np.asarray(value)
    shape = tuple(arg_type.get_shape())
    if array.shape != shape and not (array.size == 1 and len(shape) == 0):
        raise ReferenceError(f"{what}: expected shape {list(shape)}, got {list(array.shape)}")
    if array.dtype != dtype:
        if not np.can_cast(array.dtype, dtype, casting="same_kind"):
            raise ReferenceError(f"{what}: expected dtype {dtype}, got {array.dtype}")
        array = array.astype(dtype)
    return array.reshape(shape)


def run_function(
    module: ModuleOp,
    fn: func.FuncOp,
    args: Sequence[np.ndarray],
    ctx: EvalContext,
) -> list[np.ndarray]:
    """Evaluate one function on already-checked arguments."""
    env: dict[SSAValue, np.ndarray] = dict(zip(fn.body.block.args, args, strict=True))
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.operands]
        outs = _evaluate_op(module, op, [env[v] for v in op.operands], ctx)
        if len(outs) != len(op.results):
            raise ReferenceError(
                f"{op.name} produced {len(outs)} values for {len(op.results)} results"
            )
        for res, out in zip(op.results, outs, strict=True):
            env[res] = out
    raise ReferenceError(f"@{fn.sym_name.data} has no func.return")


def _evaluate_op(
    module: ModuleOp, op: Operation, inputs: list[np.ndarray], ctx: EvalContext
) -> list[np.ndarray]:
    if isinstance(op, NNVMOp):
        try:
            return op.evaluate(inputs, ctx)
        except KeyError as err:  # a param missing from the store
            detail = err.args[0] if err.args else err
            raise ReferenceError(f"{op.name}: {detail}") from err
        except (ValueError, IndexError) as err:
            # Keep the type (callers match on it) but say which op hit it.
            if err.args and isinstance(err.args[0], str) and not err.args[0].startswith(op.name):
                err.args = (f"{op.name}: {err.args[0]}", *err.args[1:])
            raise
    if isinstance(op, func.CallOp):
        callee = find_function(module, op.callee.root_reference.data)
        return run_function(module, callee, inputs, ctx)
    raise ReferenceError(f"the reference executor cannot run {op.name}")


def run_reference(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None,
    inputs: Mapping[str, object] | Sequence[object],
    function: str = "main",
) -> list[np.ndarray]:
    """Run `@function` of a graph-level module; inputs by position or by argument name."""
    fn = find_function(module, function)
    arg_types = list(fn.function_type.inputs.data)
    names = argument_names(fn)
    if isinstance(inputs, Mapping):
        missing = [n for n in names if n not in inputs]
        extra = [k for k in inputs if k not in names]
        if missing or extra:
            raise ReferenceError(
                f"inputs do not match @{function}({', '.join(names)}): "
                + (f"missing {missing} " if missing else "")
                + (f"unknown {extra}" if extra else "")
            )
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(arg_types):
            raise ReferenceError(f"@{function} takes {len(arg_types)} inputs, got {len(values)}")
    args = [
        _coerce_input(v, t, f"input {n!r}")
        for v, t, n in zip(values, arg_types, names, strict=True)
    ]
    return run_function(module, fn, args, EvalContext(params=dict(params or {})))
