"""A layer's program from its te schedule: te_layer.py's kernel and schedule, lowered by
lower_te.py, placed in the layer's DRAM image (conv2d_program.layer_regions), with the micro-op
LOAD first, FINISH last and the dependency tokens from tokens.py. `plan_layer_te` is what
accel-lower-layers runs; conv2d_program.plan_layer, the hand-written generator it replaced,
stays as the reference the tests compare it with."""

from __future__ import annotations

from nnvm.dialects.te.stages import ScheduleState
from nnvm.support.diagnostics import DiagnosticError
from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.conv2d_program import LayerPlan, check_layer, layer_regions
from nnvm.targets.accel.isa import FinishInsn
from nnvm.targets.accel.lower_te import AccelLowering, Program
from nnvm.targets.accel.te_layer import gemm_intrinsic, scheduled_kernel
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling, choose_tiling
from nnvm.targets.accel.tokens import insert_tokens, uop_load

ARGUMENT_REGIONS = {"arg0": "inp", "arg1": "wgt", "arg2": "requant", "out": "out"}
"""The kernel's tensors -> the DRAM image's regions."""

REGION_BUFFER = {"uop": "uop", "inp": "inp", "wgt": "wgt", "requant": "acc", "out": "out"}
"""The buffer whose entries address each region."""


def lower_state(cfg: AccelConfig, state: ScheduleState) -> Program:
    """The instructions of a scheduled layer kernel (its schedule applied)."""
    return AccelLowering(cfg, state, {"gemm": gemm_intrinsic(cfg)}, ARGUMENT_REGIONS).lower()


def finish_plan(
    cfg: AccelConfig, layer: Conv2dLayer, tiling: Tiling, vt: int, program: Program
) -> LayerPlan:
    """The program in the layer's DRAM image, with its uop LOAD, FINISH and tokens."""
    regions, size = layer_regions(cfg, layer, len(program.uops))
    bases = {name: r.offset // cfg.entry_bytes(REGION_BUFFER[name]) for name, r in regions.items()}
    insns = [uop_load(program.uops, bases["uop"]), *program.relocated(bases), FinishInsn()]
    insns = insert_tokens(insns, program.uops)
    return LayerPlan(cfg, layer, tiling, vt, insns, program.uops, regions, size)


def plan_layer_te(
    cfg: AccelConfig,
    layer: Conv2dLayer,
    relu: bool = False,
    virtual_threads: int = 1,
    shift: int | None = None,
    tiling: Tiling | None = None,
) -> LayerPlan:
    """The program computing clip((conv2d(x, w) + bias) >> shift), from the te schedule of
    the layer (conv2d_program.plan_layer's contract: same image, same result)."""
    check_layer(layer)
    if virtual_threads not in (1, 2):
        raise UserError(f"virtual_threads is 1 or 2, got {virtual_threads!r}")
    t = tiling or choose_tiling(cfg, layer, virtual_threads)
    fn = scheduled_kernel(cfg, layer, t, virtual_threads, relu, shift)
    try:
        state = ScheduleState(fn)
        state.apply_all()
        program = lower_state(cfg, state)
    except DiagnosticError as err:
        raise UserError(f"{layer}: {err.message}") from None
    return finish_plan(cfg, layer, t, virtual_threads, program)
