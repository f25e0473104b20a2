"""Symbols -> a graph-level module: one walk in dependency order, one op per node, built by
the op classes' own `make` (their inference gives every result type)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from nnvm.dialects.nnvm.autodiff import NoGradient
from nnvm.dialects.nnvm.base import ShapeError, tensor
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.nnvm.sources import ConstantOp, ParamOp
from nnvm.passes.gradient import differentiate
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.symbol.symbol import Symbol, SymbolError, _Node, _walk


def _names(names: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({"nnvm.name": StringAttr(n)}) for n in names])


class _Emitter:
    def __init__(self, shapes, dtypes, params):
        self.shapes: Mapping[str, Sequence[int]] = shapes
        self.dtypes: Mapping[str, str] = dtypes
        self.params: dict[str, np.ndarray] = params
        self.block = Block()
        self.arg_names: list[str] = []
        self.used_params: dict[str, np.ndarray] = {}
        self.values: dict[int, list[SSAValue]] = {}
        self.vars: dict[str, _Node] = {}

    def variable(self, node: _Node) -> list[SSAValue]:
        other = self.vars.setdefault(node.name, node)
        if other is not node:
            raise SymbolError(f"two different Variables are named {node.name!r}")
        dtype = self.dtypes.get(node.name, node.dtype or "float32")
        if node.name in self.params:
            value = np.asarray(self.params[node.name])
            for want, what in ((node.shape, "declares"), (self.shapes.get(node.name), "is given")):
                if want is not None and tuple(want) != value.shape:
                    raise SymbolError(
                        f"Variable {node.name!r} {what} shape {list(want)}, but its param "
                        f"holds {list(value.shape)}"
                    )
            self.used_params[node.name] = value
            op = ParamOp(node.name, tensor(value.shape, value.dtype))
            self.block.add_op(op)
            return [op.result]
        shape = self.shapes.get(node.name, node.shape)
        if shape is None:
            raise SymbolError(
                f"Variable {node.name!r} has no shape: give Variable(shape=...), a shape "
                "for it, or a param value"
            )
        self.arg_names.append(node.name)
        return [self.block.insert_arg(tensor(shape, dtype), len(self.block.args))]

    def op(self, node: _Node) -> list[SSAValue]:
        assert node.op is not None
        ins = [self.values[id(s._node)] for s in node.inputs]
        like = next((v[0] for s, v in zip(node.inputs, ins, strict=True) if v), None)
        operands: list[SSAValue] = []
        for s, vals in zip(node.inputs, ins, strict=True):
            if s._node.kind == "scalar":
                dtype = numpy_dtype_of(like.type.element_type) if like else np.float32  # type: ignore[attr-defined]
                c = ConstantOp(np.asarray(s._node.value, dtype=dtype))
                self.block.add_op(c)
                operands.append(c.result)
            else:
                operands.append(vals[s._index])
        try:
            built = node.op.make(*operands, **node.props)
        except (ShapeError, VerifyException, TypeError, ValueError) as err:
            raise SymbolError(f"symbol {node.name} ({node.op.name}): {err}") from None
        self.block.add_op(built)
        return list(built.results)

    def emit(self, node: _Node) -> None:
        if node.kind == "var":
            out = self.variable(node)
        elif node.kind == "const":
            c = ConstantOp(np.asarray(node.value))
            self.block.add_op(c)
            out = [c.result]
        elif node.kind == "scalar":
            out = []  # materialized by each user, in the user's dtype
        elif node.kind == "grad":
            out = []  # the gradient pass fills these in
        else:
            out = self.op(node)
        self.values[id(node)] = out


def build_module(
    outputs: Sequence[Symbol],
    shapes: Mapping[str, Sequence[int]],
    dtypes: Mapping[str, str],
    params: dict[str, np.ndarray],
) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    grads = [s for s in outputs if s._node.kind == "grad"]
    losses = {id(s._node.inputs[0]._node): s._node.inputs[0] for s in grads}
    if len(losses) > 1:
        raise SymbolError("the gradients of one module must all be of the same loss")
    loss = next(iter(losses.values()), None)
    forward = [s for s in outputs if s._node.kind != "grad"]
    wanted = forward + ([loss] if loss is not None else [])
    for s in wanted:
        if s._node.kind == "scalar":
            raise SymbolError("a bare number cannot be an output; use sym.const")
    emitter = _Emitter(shapes, dtypes, params)
    for node in _walk(wanted):
        emitter.emit(node)
    unknown = set(shapes) - set(emitter.vars)
    if unknown:
        raise SymbolError(f"shapes given for unknown variables: {sorted(unknown)}")
    results = [emitter.values[id(s._node)][s._index] for s in wanted]
    names = [s.name if s._node.num_outputs == 1 else f"{s.name}:{s._index}" for s in wanted]
    block = emitter.block
    block.add_op(func.ReturnOp(*results))
    fn = func.FuncOp(
        "main",
        ([a.type for a in block.args], [r.type for r in results]),
        Region(block),
        arg_attrs=_names(emitter.arg_names),
        res_attrs=_names(names),
    )
    module = ModuleOp([fn])
    if grads:
        leaves = [s._node.props["wrt"] for s in grads]
        try:
            differentiate(module, leaves, loss=len(wanted) - 1)
        except (NoGradient, DiagnosticError) as err:
            raise SymbolError(str(err)) from None
        ret = fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        values = list(ret.operands)
        grad_values = dict(zip(leaves, values[len(wanted) :], strict=True))
        by_output = [
            values[forward.index(s)]
            if s._node.kind != "grad"
            else grad_values[s._node.props["wrt"]]
            for s in outputs
        ]
        out_names = [
            names[forward.index(s)] if s._node.kind != "grad" else f"{s._node.props['wrt']}.grad"
            for s in outputs
        ]
        new_ret = func.ReturnOp(*by_output)
        fn.body.block.insert_op_before(new_ret, ret)
        fn.body.block.erase_op(ret)
        fn.function_type = func.FunctionType.from_lists(
            fn.function_type.inputs.data, [v.type for v in by_output]
        )
        fn.res_attrs = _names(out_names)
    try:
        module.verify()
    except VerifyException as err:
        raise UserError(f"internal: the module built from symbols does not verify: {err}") from err
    assert all(isinstance(t, TensorType) for t in fn.function_type.outputs.data)
    return module, emitter.used_params
