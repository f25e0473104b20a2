"""quantize(): the whole post-training int8 flow on a float graph: fold batch norms into the
weights, calibrate on sample inputs, rewrite conv2d / dense / matmul with quantize-int8."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.passes.fold_constants import FoldConstantsPass
from nnvm.passes.fold_scale_axis import FoldScaleAxisPass
from nnvm.passes.quantize_calibration import Calibration
from nnvm.passes.quantize_int8 import quantize_module
from nnvm.passes.simplify_inference import SimplifyInferencePass
from nnvm.quantize.calibrate import calibrate
from nnvm.registry import make_context
from nnvm.support.errors import UserError
from nnvm.support.param_store import attach_params, params_of


def prepare(module: ModuleOp, params: Mapping[str, np.ndarray]) -> ModuleOp:
    """A copy of `module` with batch norms folded into the conv weights and constant weight
    arithmetic precomputed into its params store (what quantization then calibrates)."""
    if not isinstance(module, ModuleOp):
        raise UserError("quantize expects a graph-level module (from nnvm.frontend.from_onnx)")
    copy = module.clone()
    attach_params(copy, {k: np.asarray(v) for k, v in params.items()})
    ctx = make_context()
    for p in (SimplifyInferencePass(), FoldScaleAxisPass(), FoldConstantsPass()):
        p.apply(ctx, copy)
    return copy


def used_params(module: ModuleOp) -> dict[str, np.ndarray]:
    """The module's params store, restricted to the params its ops still name."""
    used = {op.key for op in module.walk() if isinstance(op, ParamOp)}
    return {k: v for k, v in params_of(module).items() if k in used}


def quantize(
    module: ModuleOp,
    params: Mapping[str, np.ndarray],
    calibration_inputs: Iterable[Mapping[str, np.ndarray]] | Calibration,
    *,
    method: str = "percentile",
    requant: str = "multiplier",
    skip_first: bool = True,
    engine: str = "reference",
) -> tuple[ModuleOp, dict[str, np.ndarray], Calibration]:
    """Post-training int8 quantization: returns (quantized module, its params, the Calibration).

    `calibration_inputs` is an iterable of input dicts (name -> array), run through the float
    graph on `engine` ("reference" or "cpu"), or a Calibration made earlier for this graph.
    `method` picks the activation ranges (minmax, percentile, kl); `requant` is "multiplier"
    (int32 fixed point), "float" (f32 scale and round half to even, as onnxruntime) or "shift" (power-of-two scales, no float: the accelerator)."""
    prepared = prepare(module, params)
    if isinstance(calibration_inputs, Calibration):
        cal = calibration_inputs
    else:
        cal = calibrate(prepared, params_of(prepared), calibration_inputs, engine=engine)
    quantize_module(prepared, cal, method, requant, skip_first)
    DeadCodeElimination().apply(make_context(), prepared)
    out = used_params(prepared)
    attach_params(prepared, out)
    return prepared, dict(out), cal
