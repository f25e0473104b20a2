"""What schedule primitives mean: `ScheduleState` holds a te kernel's stages (stage_tree.py) and
applies its primitives in order, each by the rule beside it (loop_primitives.py, annotations.py,
placement.py, cache_stages.py, rfactor.py), with a located diagnostic when one is illegal."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from nnvm.dialects.te import annotations, cache_stages, loop_primitives, placement, rfactor
from nnvm.dialects.te.ops import ComputeOp, ConstantOp, ExternOp
from nnvm.dialects.te.placement import check_attach, check_double_buffer
from nnvm.dialects.te.schedule import Primitive, ScheduleOp
from nnvm.dialects.te.stage_tree import IterVar, Stage, placeholder_name
from nnvm.support.diagnostics import DiagnosticError


class ScheduleState:
    """The stages of one te kernel (a func.func) and the effect of the primitives so far.

    Every tensor of the kernel is a stage: placeholders (`arg<k>`), constants, externs and
    computes, in the order of the function body."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.stages: list[Stage] = []
        self.by_name: dict[str, Stage] = {}
        self.by_value: dict[SSAValue, Stage] = {}
        self.schedule_ops: list[ScheduleOp] = []
        block = fn.body.block
        for k, arg in enumerate(block.args):
            self._add(Stage(placeholder_name(k), arg, None, arg_index=k))
        const_count = 0
        for op in block.ops:
            if isinstance(op, ComputeOp):
                self._add(self.compute_stage(op.stage_name, op))
            elif isinstance(op, ExternOp):
                for k, r in enumerate(op.results):
                    name = op.stage_name if len(op.results) == 1 else f"{op.stage_name}.{k}"
                    self._add(Stage(name, r, op))
            elif isinstance(op, ConstantOp):
                self._add(Stage(f"const{const_count}", op.result, op))
                const_count += 1
            elif isinstance(op, ScheduleOp):
                self.schedule_ops.append(op)
        ret = block.last_op
        self.outputs: list[SSAValue] = list(ret.operands) if isinstance(ret, func.ReturnOp) else []
        for v in self.outputs:
            if v in self.by_value:
                self.by_value[v].is_output = True

    def _add(self, stage: Stage) -> None:
        if stage.name in self.by_name:
            raise DiagnosticError(stage.op, f"two stages are named '{stage.name}'")
        self.stages.append(stage)
        self.by_name[stage.name] = stage
        self.by_value[stage.value] = stage

    @staticmethod
    def compute_stage(name: str, op: ComputeOp) -> Stage:
        """A compute's stage: one loop per axis (spatial, then reduction), outermost first."""
        root = [IterVar(n, e, False) for n, e in zip(op.spatial_names, op.shape, strict=True)]
        root += [IterVar(n, e, True) for n, e in zip(op.reduce_names, op.reduce_shape, strict=True)]
        return Stage(name, op.result, op, root=root, leaves=list(root))

    # -- lookups with diagnostics ----------------------------------------------------------

    def stage(self, prim: Operation, name: str, compute: bool = True) -> Stage:
        """The stage a primitive names (a compute stage unless `compute` is false)."""
        stage = self.by_name.get(name)
        if stage is None:
            known = ", ".join(f"'{s.name}'" for s in self.stages)
            raise DiagnosticError(prim, f"{prim.name}: no stage named '{name}' (stages: {known})")
        if compute and stage.compute is None:
            what = "a placeholder" if stage.is_placeholder else "not a te.compute"
            raise DiagnosticError(prim, f"{prim.name}: stage '{name}' is {what}")
        return stage

    @staticmethod
    def leaf(prim: Operation, stage: Stage, name: str) -> IterVar:
        """The leaf loop a primitive names."""
        for v in stage.leaves:
            if v.name == name:
                return v
        if stage.find(name) is not None:
            raise DiagnosticError(
                prim, f"{prim.name}: axis '{name}' of '{stage.name}' was already split or fused"
            )
        leaves = ", ".join(v.name for v in stage.leaves)
        raise DiagnosticError(
            prim, f"{prim.name}: stage '{stage.name}' has no axis '{name}' (its loops: {leaves})"
        )

    @staticmethod
    def fresh(prim: Operation, stage: Stage, names: Iterable[str]) -> None:
        """Check that the axis names a primitive makes are new to the stage."""
        names = list(names)
        if len(set(names)) != len(names):
            raise DiagnosticError(prim, f"{prim.name}: new axis names repeat: {names}")
        for n in names:
            if stage.find(n) is not None:
                raise DiagnosticError(
                    prim, f"{prim.name}: stage '{stage.name}' already has an axis '{n}'"
                )

    # -- applying a schedule ---------------------------------------------------------------

    def apply_all(self) -> None:
        for sched in self.schedule_ops:
            for prim in sched.primitives:
                self.apply(prim)
        self.finalize()

    def apply(self, prim: Primitive) -> None:
        handler = HANDLERS.get(type(prim))
        if handler is None:
            raise DiagnosticError(prim, f"{prim.name} is not a schedule primitive")
        handler(self, prim)

    def retarget(self, stage: Stage, op: ComputeOp) -> None:
        """`stage` is now computed by `op` (a primitive rewrote the kernel's te ops)."""
        del self.by_value[stage.value]
        stage.op, stage.value = op, op.result
        self.by_value[op.result] = stage
        self.outputs = [op.result if v is stage.value else v for v in self.outputs]
        ret = self.fn.body.block.last_op
        if isinstance(ret, func.ReturnOp):
            self.outputs = list(ret.operands)

    def insert_stage(self, stage: Stage, before: Stage) -> None:
        """Add a stage made by a primitive, in the order of the function body."""
        if stage.name in self.by_name:
            raise DiagnosticError(stage.op, f"a stage '{stage.name}' already exists")
        self.stages.insert(self.stages.index(before), stage)
        self.by_name[stage.name] = stage
        self.by_value[stage.value] = stage

    # -- whole-schedule checks -----------------------------------------------------------------

    def readers(self, stage: Stage) -> list[Stage]:
        """Stages whose formula (or extern call) reads this stage's tensor directly."""
        found: list[Stage] = []
        for use in stage.value.uses:
            op = use.operation
            while op is not None and not isinstance(op, ComputeOp | ExternOp):
                op = op.parent_op()
            if op is None:
                continue
            for r in op.results:
                reader = self.by_value.get(r)
                if reader is not None and reader not in found:
                    found.append(reader)
        return found

    def effective_readers(self, stage: Stage) -> list[Stage]:
        """Readers after inlining: an inlined reader is replaced by its own readers."""
        out: list[Stage] = []
        todo = self.readers(stage)
        seen: set[int] = set()
        while todo:
            r = todo.pop(0)
            if id(r) in seen:
                continue
            seen.add(id(r))
            if r.attach == "inline":
                todo.extend(self.readers(r))
            elif r not in out:
                out.append(r)
        return out

    def finalize(self) -> None:
        """The checks that need the whole schedule: a vectorized loop is innermost, a stage has
        at most one parallel loop, and each compute_at is legal."""
        for stage in self.stages:
            if stage.compute is None:
                continue
            last = stage.leaves[-1] if stage.leaves else None
            parallel = [v for v in stage.leaves if v.annotation == "parallel"]
            for v in stage.leaves:
                if v.annotation == "vectorize" and v is not last:
                    raise DiagnosticError(
                        v.annotated_by,
                        f"te.vectorize: '{v.name}' is not the innermost loop of '{stage.name}'",
                    )
            if len(parallel) > 1:
                raise DiagnosticError(
                    parallel[1].annotated_by,
                    f"te.parallel: '{stage.name}' already has the parallel loop "
                    f"'{parallel[0].name}' (nested parallel loops are not supported)",
                )
            if stage.attach == "at":
                check_attach(self, stage)
            check_double_buffer(stage)


HANDLERS: dict[type[Primitive], Callable[[ScheduleState, Primitive], None]] = {
    **loop_primitives.HANDLERS,
    **annotations.HANDLERS,
    **placement.HANDLERS,
    **cache_stages.HANDLERS,
    **rfactor.HANDLERS,
}
"""How each primitive changes the state, by op class."""


def schedule_applies(fn: func.FuncOp, prims: Iterable[Primitive]) -> bool:
    """Does this schedule apply to the kernel? (tried on a copy)"""
    clone = fn.clone()
    sched = ScheduleOp([p.clone() for p in prims])
    ret = clone.body.block.last_op
    assert ret is not None
    clone.body.block.insert_op_before(sched, ret)
    try:
        ScheduleState(clone).apply_all()
    except DiagnosticError:
        return False
    return True
