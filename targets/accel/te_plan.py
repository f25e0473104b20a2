"""A layer's program from its te schedule: te_layer.py's kernel and schedule, lowered by
lower_te.py, placed in the layer's DRAM image (conv2d_program.layer_regions), with the micro-op
LOAD first, FINISH last and the dependency tokens from tokens.py. `plan_layer_te` is what
accel-lower-layers runs; conv2d_program.plan_layer, the hand-written generator it replaced,
stays as the reference the tests compare it with.

`lower-te-to-accel` is the same lowering as a pass, for any te kernel of this form (a function
of te ops with its te.schedule): the function becomes an `accel.program` (without tokens:
accel-insert-tokens adds them) whose DRAM image is the uop table, then each argument, then the
result, each page-aligned, recorded in its `dram` attribute (byte offsets, then the size)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType
from xdsl.parser import Parser
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import ParseError

from nnvm.dialects.te import TE
from nnvm.dialects.te.analysis import is_te_kernel
from nnvm.dialects.te.exprs import element_bits
from nnvm.dialects.te.schedule import DoubleBufferOp, ReorderOp, ScheduleOp, SplitOp
from nnvm.dialects.te.stages import ScheduleState
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.support.pass_statistics import record_statistic
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.conv2d_program import LayerPlan, check_layer, layer_regions
from nnvm.targets.accel.dialect import ProgramOp, i64_array
from nnvm.targets.accel.isa import FinishInsn
from nnvm.targets.accel.lower_te import AccelLowering, Program
from nnvm.targets.accel.pass_options import AccelPass
from nnvm.targets.accel.program_ir import program_to_ir
from nnvm.targets.accel.target import AccelTarget
from nnvm.targets.accel.te_layer import gemm_intrinsic, layer_kernel, scheduled_kernel
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling, choose_tiling
from nnvm.targets.accel.tokens import insert_tokens, uop_load

PAGE = 4096
LAYER_REGIONS = {"arg0": "inp", "arg1": "wgt", "arg2": "requant", "out": "out"}
"""The layer kernel's tensors -> the layer image's regions."""


def lower_state(cfg: AccelConfig, state: ScheduleState, regions: dict[str, str]) -> Program:
    """The instructions of a scheduled kernel (its schedule applied; scopes and tensorize
    checked as the target allows them)."""
    AccelTarget().check_schedule(state)
    return AccelLowering(cfg, state, {"gemm": gemm_intrinsic(cfg)}, regions).lower()


def stream(cfg: AccelConfig, program: Program, offsets: dict[str, int]) -> list:
    """The whole stream: the uop LOAD, the program placed at `offsets`, FINISH."""
    uop_base = offsets["uop"] // cfg.entry_bytes("uop")
    return [uop_load(program.uops, uop_base), *program.relocated(cfg, offsets), FinishInsn()]


def plan_layer_te(
    cfg: AccelConfig,
    layer: Conv2dLayer,
    relu: bool = False,
    virtual_threads: int = 1,
    shift: int | None = None,
    tiling: Tiling | None = None,
    schedule: str | None = None,
) -> LayerPlan:
    """The program computing clip((conv2d(x, w) + bias) >> shift), from the te schedule of
    the layer (conv2d_program.plan_layer's contract: same image, same result): the default
    one for `tiling` (default: tiling.py's choice), or `schedule`, a te.schedule's text (a
    tuning record's), whose own double buffering then decides the virtual threads."""
    check_layer(layer, virtual_threads)
    if schedule is None:
        t: Tiling | None = tiling or choose_tiling(cfg, layer, virtual_threads)
        assert t is not None
        fn = scheduled_kernel(cfg, layer, t, virtual_threads, relu, shift)
    else:
        fn = layer_kernel(cfg, layer, relu, shift)
        sched = parse_schedule(schedule)
        ret = fn.body.block.last_op
        assert ret is not None
        fn.body.block.insert_op_before(sched, ret)
        t = tiling_of(sched)
        virtual_threads = virtual_threads_of(sched)
    try:
        return plan_of_kernel(cfg, layer, fn, t, virtual_threads)
    except DiagnosticError as err:
        raise UserError(f"{layer}: {err.message}") from None


def plan_of_kernel(
    cfg: AccelConfig, layer: Conv2dLayer, fn: func.FuncOp, tiling: Tiling | None, vt: int
) -> LayerPlan:
    """The program of `layer`'s kernel with its te.schedule, in the layer's DRAM image, with
    its uop LOAD, FINISH and tokens; a DiagnosticError where the schedule does not lower."""
    state = ScheduleState(fn)
    state.apply_all()
    program = lower_state(cfg, state, LAYER_REGIONS)
    regions, size = layer_regions(cfg, layer, len(program.uops))
    offsets = {name: r.offset for name, r in regions.items()}
    insns = insert_tokens(stream(cfg, program, offsets), program.uops)
    return LayerPlan(cfg, layer, tiling, vt, insns, program.uops, regions, size)


def virtual_threads_of(sched: ScheduleOp) -> int:
    """2 where a layer schedule double-buffers its on-chip stages, else 1."""
    return 2 if any(isinstance(p, DoubleBufferOp) for p in sched.primitives) else 1


def parse_schedule(text: str) -> ScheduleOp:
    """A te.schedule from its text (UserError when it is not one)."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TE)
    try:
        op = Parser(ctx, text, "<schedule>").parse_op()
    except ParseError as err:
        raise UserError(f"the layer's schedule does not parse: {err}") from None
    if not isinstance(op, ScheduleOp):
        raise UserError(f"the layer's schedule is a {op.name}, not a te.schedule")
    return op


def tiling_of(sched: ScheduleOp) -> Tiling | None:
    """The tiling a layer schedule splits by (None: not the default template's splits)."""
    factors: dict[tuple[str, str], int] = {}
    order = None
    for p in sched.primitives:
        if isinstance(p, SplitOp) and p.factor is not None:
            factors[(p.stage_name, p.axis.data)] = int(p.factor.value.data)
        if isinstance(p, ReorderOp) and p.stage_name == "out":
            names = [a.data for a in p.axes.data]
            if "ob.o" in names and "y.o" in names:
                order = "weights" if names.index("ob.o") < names.index("y.o") else "inputs"
    keys = [("out", "ob"), ("conv", "ib"), ("out", "y"), ("out", "x")]
    if order is None or any(k not in factors for k in keys):
        return None
    return Tiling(*(factors[k] for k in keys), order)


def kernel_image(fn: func.FuncOp, n_uops: int) -> tuple[dict[str, int], int]:
    """Byte offsets of a kernel's DRAM image (uop table, arguments, result; page-aligned) and
    its size."""
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    names = ["uop", *(f"arg{k}" for k in range(len(fn.function_type.inputs))), "result"]
    sizes = [4 * n_uops]
    for t in types:
        assert isinstance(t, TensorType)
        sizes.append(math.prod(t.get_shape()) * max(element_bits(t.element_type) // 8, 1))
    offsets, at = {}, 0
    for name, n in zip(names, sizes, strict=True):
        offsets[name] = at
        at += -(-n // PAGE) * PAGE
    return offsets, at


@dataclass(frozen=True)
class LowerTEToAccel(AccelPass):
    """Each te kernel (a function of te ops with its te.schedule) -> an accel.program."""

    name = "lower-te-to-accel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cfg = self.accel_config()
        count = 0
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and is_te_kernel(f)]:
            state = ScheduleState(fn)
            state.apply_all()
            outputs = [s for s in state.stages if s.is_output]
            if len(outputs) != 1:
                raise DiagnosticError(fn, "lower-te-to-accel: a kernel has one result")
            regions = {f"arg{k}": f"arg{k}" for k in range(len(fn.args))}
            regions[outputs[0].name] = "result"
            program = lower_state(cfg, state, regions)
            offsets, size = kernel_image(fn, len(program.uops))
            (new,) = program_to_ir(stream(cfg, program, offsets), program.uops).ops
            assert isinstance(new, ProgramOp)
            new.detach()
            new.attributes["kernel"] = fn.sym_name
            new.attributes["dram"] = i64_array([*offsets.values(), size])
            new.location = fn.location
            Rewriter.replace_op(fn, new)
            count += 1
        record_statistic(op, self.name, "kernels", count, "te kernels lowered to accel programs")
