"""The loop-nest implementation of a scheduled te kernel function: memref arguments for its
inputs and outputs, buffers for the stages computed at the root, then each root stage's nest."""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, SSAValue

from nnvm.dialects.te.intrinsics import TensorIntrinsic
from nnvm.dialects.te.ops import ConstantOp, ExternOp
from nnvm.dialects.te.stage_tree import Stage
from nnvm.dialects.te.stages import ScheduleState
from nnvm.lowering.te_to_loops.emitter import ALIGNMENT, Scope, View, hint
from nnvm.lowering.te_to_loops.loop_nests import LoopNestEmitter
from nnvm.lowering.te_to_loops.vectorize import NATIVE_BITS
from nnvm.support.diagnostics import DiagnosticError

__all__ = ["ALIGNMENT", "NATIVE_BITS", "KernelGenerator", "memref_of"]


def memref_of(t: Attribute) -> MemRefType:
    """The memref type a tensor type becomes in the loop-nest kernel."""
    assert isinstance(t, TensorType), t
    return MemRefType(t.element_type, list(t.get_shape()))


class KernelGenerator(LoopNestEmitter):
    """Replaces a scheduled te kernel function by its loop-nest implementation."""

    def __init__(
        self,
        state: ScheduleState,
        module: ModuleOp,
        vector_bits: int = NATIVE_BITS,
        intrinsics: Mapping[str, TensorIntrinsic] | None = None,
        lane_permutes: Mapping[int, str] | None = None,
    ):
        super().__init__(state, module, vector_bits)
        self._deallocs: list[SSAValue] = []
        self.intrinsics = dict(intrinsics or {})
        self.lane_permutes = dict(lane_permutes or {})

    def generate(self) -> None:
        state, fn = self.state, self.state.fn
        inputs = list(fn.function_type.inputs.data)
        outputs = state.outputs
        in_types = [memref_of(t) for t in inputs]
        out_types = [memref_of(v.type) for v in outputs]
        self.entry = Block(arg_types=[*in_types, *out_types])
        for arg, old in zip(self.entry.args, fn.body.block.args, strict=False):
            if old.name_hint:
                arg.name_hint = old.name_hint
        self.block = self.entry
        views: dict[Stage, View] = {}
        for stage in state.stages:
            if stage.arg_index is not None:
                views[stage] = View(self.entry.args[stage.arg_index], [None] * len(stage.shape))
        copies: list[tuple[Stage, SSAValue]] = []
        for k, v in enumerate(outputs):
            out = self.entry.args[len(inputs) + k]
            out.name_hint = f"out{k}" if len(outputs) > 1 else "out"
            stage = state.by_value[v]
            if stage.op is not None and not isinstance(stage.op, ConstantOp) and stage not in views:
                views[stage] = View(out, [None] * len(stage.shape))
            else:
                copies.append((stage, out))
        for stage in state.stages:
            if isinstance(stage.op, ConstantOp):
                views[stage] = View(self._global(stage.op), [None] * len(stage.shape))
        for stage in state.stages:
            materialized = stage.attach == "root" and stage.op is not None
            if materialized and stage not in views and not isinstance(stage.op, ConstantOp):
                mem = self.add1(
                    memref.AllocOp.get(stage.value.type.element_type, ALIGNMENT, stage.shape)
                )  # type: ignore[attr-defined]
                mem.name_hint = hint(stage.name)
                views[stage] = View(mem, [None] * len(stage.shape))
                self._deallocs.append(mem)
        scope = Scope(views, self.entry, heap=self._deallocs)
        done_externs: set[int] = set()
        for stage in state.stages:
            if stage.attach != "root":
                continue
            if stage.compute is not None and 0 in stage.shape:
                continue  # an empty tensor: nothing to compute
            if stage.compute is not None:
                self.emit_compute(stage, scope, None)
            elif isinstance(stage.op, ExternOp) and id(stage.op) not in done_externs:
                done_externs.add(id(stage.op))
                self.emit_extern(stage.op, scope)
        for stage, out in copies:
            self.add(memref.CopyOp(scope.views[stage].buffer, out))
        for mem in self._deallocs:
            self.add(memref.DeallocOp.get(mem))
        self.add(func.ReturnOp())
        old = fn.body.block
        fn.body.detach_block(old)
        for op in reversed(list(old.ops)):
            op.drop_all_references()
        fn.body.add_block(self.entry)
        fn.function_type = func.FunctionType.from_lists([*in_types, *out_types], [])
        fn.arg_attrs = None
        fn.res_attrs = None

    def _global(self, op: ConstantOp) -> SSAValue:
        taken = {o.sym_name.data for o in self.module.ops if hasattr(o, "sym_name")}
        k = 0
        while (name := f"__te_const_{self.state.fn.sym_name.data}_{k}") in taken:
            k += 1
        t = memref_of(op.result.type)
        glob = memref.GlobalOp.get(
            StringAttr(name), t, op.value, StringAttr("private"), UnitAttr(), ALIGNMENT
        )
        self.module.body.block.insert_op_before(glob, self.state.fn)
        return self.add1(memref.GetGlobalOp(name, t))

    def emit_extern(self, op: ExternOp, scope: Scope) -> None:
        args: list[SSAValue] = []
        for v in [*op.inputs, *op.outputs]:
            stage = self.state.by_value[v]
            view = scope.views.get(stage)
            if view is None or any(o is not None for o in view.offsets):
                raise DiagnosticError(op, f"te.extern: '{stage.name}' has no whole buffer")
            args.append(view.buffer)
        callee = op.callee.root_reference.data
        if not any(
            isinstance(o, func.FuncOp) and o.sym_name.data == callee for o in self.module.ops
        ):
            decl = func.FuncOp.external(callee, [a.type for a in args], [])
            self.module.body.block.insert_op_before(decl, self.state.fn)
        self.add(func.CallOp(SymbolRefAttr(callee), args, []))
