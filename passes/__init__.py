"""Transformations within a level (graph passes: fuse, alter-layout, fold-constants, ...).

`PASSES` maps each command-line name to a lazy factory, read by nnvm.registry."""

from nnvm.support.plugins import PassFactory, lazy_pass


def _here(module: str, cls: str) -> PassFactory:
    return lazy_pass(f"nnvm.passes.{module}", cls)


PASSES: dict[str, PassFactory] = {
    "infer-shapes": _here("infer_shapes", "InferShapesPass"),
    "fold-constants": _here("fold_constants", "FoldConstantsPass"),
    "fuse": _here("fuse", "FuseOpsPass"),
    "plan-memory": _here("plan_memory", "PlanMemoryPass"),
    "nnvm-O0": _here("pipelines", "O0"),
    "nnvm-O1": _here("pipelines", "O1"),
    "nnvm-O2": _here("pipelines", "O2"),
    "nnvm-O3": _here("pipelines", "O3"),
    "simplify-inference": _here("simplify_inference", "SimplifyInferencePass"),
    "fold-scale-axis": _here("fold_scale_axis", "FoldScaleAxisPass"),
    "alter-layout": _here("alter_layout", "AlterLayoutPass"),
    "apply-default-schedule": _here("apply_default_schedule", "ApplyDefaultSchedulePass"),
}
