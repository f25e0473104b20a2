"""Transformations within a level (graph passes: fuse, alter-layout, fold-constants, ...).

`PASSES` maps each command-line name to a lazy factory, read by nnvm.registry."""

from nnvm.support.plugins import PassFactory, lazy_pass

PASSES: dict[str, PassFactory] = {
    "infer-shapes": lazy_pass(".infer_shapes", "InferShapesPass", __name__),
    "fold-constants": lazy_pass(".fold_constants", "FoldConstantsPass", __name__),
    "fuse": lazy_pass(".fuse", "FuseOpsPass", __name__),
    "plan-memory": lazy_pass(".plan_memory", "PlanMemoryPass", __name__),
    "nnvm-O0": lazy_pass(".pipelines", "O0", __name__),
    "nnvm-O1": lazy_pass(".pipelines", "O1", __name__),
    "nnvm-O2": lazy_pass(".pipelines", "O2", __name__),
    "nnvm-O3": lazy_pass(".pipelines", "O3", __name__),
    "simplify-inference": lazy_pass(".simplify_inference", "SimplifyInferencePass", __name__),
    "fold-scale-axis": lazy_pass(".fold_scale_axis", "FoldScaleAxisPass", __name__),
    "prune-conv-taps": lazy_pass(".prune_conv_taps", "PruneConvTapsPass", __name__),
    "alter-layout": lazy_pass(".alter_layout", "AlterLayoutPass", __name__),
    "sink-reshapes": lazy_pass(".sink_reshapes", "SinkReshapesPass", __name__),
    "gradient": lazy_pass(".gradient", "GradientPass", __name__),
    "quantize-int8": lazy_pass(".quantize_int8", "QuantizeInt8Pass", __name__),
    "integer-products": lazy_pass(".integer_products", "IntegerProductsPass", __name__),
    "apply-default-schedule": lazy_pass(
        ".apply_default_schedule", "ApplyDefaultSchedulePass", __name__
    ),
    "hoist-loop-invariant-accesses": lazy_pass(
        ".hoist_loop_invariant_accesses", "HoistLoopInvariantAccessesPass", __name__
    ),
    "fold-reciprocal-multiply": lazy_pass(
        ".fold_reciprocal_multiply", "FoldReciprocalMultiplyPass", __name__
    ),
    "multiply-by-reciprocal": lazy_pass(
        ".multiply_by_reciprocal", "MultiplyByReciprocalPass", __name__
    ),
    "apply-tuning-log": lazy_pass(".apply_tuning_log", "ApplyTuningLogPass", __name__),
}
