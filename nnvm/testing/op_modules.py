"""One graph op as a module of its own, for the op tests of every target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region

from nnvm.dialects.nnvm.base import NNVMOp


def op_module(cls: type[NNVMOp], arg_types: Sequence[TensorType], **props: Any) -> ModuleOp:
    """`func.func @k(args) { %r = <op>(args) {props}; return %r }`."""
    block = Block(arg_types=list(arg_types))
    op = cls.make(*block.args, **props)
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("k", (list(arg_types), [r.type for r in op.results]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module
