"""The data-movement ops, by family: each output element is some input element found by an index
computation. TRANSFORM_OPS lists them all for the dialect."""

from __future__ import annotations

from nnvm.dialects.nnvm.base import NNVMOp
from nnvm.dialects.nnvm.concat_split import ConcatOp, SplitOp
from nnvm.dialects.nnvm.indexing import GatherElementsOp, GatherNDOp, GatherOp, SliceOp
from nnvm.dialects.nnvm.pad import PadOp
from nnvm.dialects.nnvm.passthrough import DropoutOp, IdentityOp
from nnvm.dialects.nnvm.permute import (
    DepthToSpaceOp,
    LayoutTransformOp,
    SpaceToDepthOp,
    TransposeOp,
)
from nnvm.dialects.nnvm.repeat import BroadcastToOp, TileOp
from nnvm.dialects.nnvm.reshape import ExpandDimsOp, FlattenOp, ReshapeOp, SqueezeOp
from nnvm.dialects.nnvm.resize import ResizeOp
from nnvm.dialects.nnvm.scan import CumProdOp, CumSumOp

TRANSFORM_OPS: list[type[NNVMOp]] = [
    ReshapeOp,
    FlattenOp,
    SqueezeOp,
    ExpandDimsOp,
    TransposeOp,
    LayoutTransformOp,
    DepthToSpaceOp,
    SpaceToDepthOp,
    ConcatOp,
    SplitOp,
    SliceOp,
    GatherOp,
    GatherNDOp,
    GatherElementsOp,
    BroadcastToOp,
    TileOp,
    PadOp,
    ResizeOp,
    IdentityOp,
    DropoutOp,
    CumSumOp,
    CumProdOp,
]
