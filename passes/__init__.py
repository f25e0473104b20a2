"""Transformations within a level (graph passes: fuse, alter-layout, fold-constants, ...).

`PASSES` maps each command-line name to a lazy factory, read by nnvm.registry."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _infer_shapes() -> type[ModulePass]:
    from nnvm.passes.infer_shapes import InferShapesPass

    return InferShapesPass


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "infer-shapes": _infer_shapes,
}
