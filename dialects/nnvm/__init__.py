"""The graph dialect `nnvm`: whole networks as SSA dataflow over tensors.

Each op is one class that owns its verifier, shape/dtype inference, fusion pattern kind and
numpy semantics; this module only gathers them into the dialect.
"""

from xdsl.ir import Dialect

from nnvm.dialects.nnvm.binary import BINARY_OPS
from nnvm.dialects.nnvm.bitwise import BITWISE_OPS
from nnvm.dialects.nnvm.conv import Conv2DOp
from nnvm.dialects.nnvm.elementwise import UNARY_OPS
from nnvm.dialects.nnvm.grid_sample import GRID_SAMPLE_OPS
from nnvm.dialects.nnvm.loss import LOSS_OPS
from nnvm.dialects.nnvm.nn import NN_OPS
from nnvm.dialects.nnvm.pooling import POOLING_OPS
from nnvm.dialects.nnvm.reduce import REDUCE_OPS
from nnvm.dialects.nnvm.rnn import RNN_OPS
from nnvm.dialects.nnvm.scatter import SCATTER_OPS
from nnvm.dialects.nnvm.sources import SOURCE_OPS
from nnvm.dialects.nnvm.topk import TOPK_OPS
from nnvm.dialects.nnvm.transform import TRANSFORM_OPS
from nnvm.dialects.nnvm.trigonometric import TRIGONOMETRIC_OPS

ALL_OPS = [
    *SOURCE_OPS,
    *UNARY_OPS,
    *BINARY_OPS,
    *BITWISE_OPS,
    *TRIGONOMETRIC_OPS,
    Conv2DOp,
    *NN_OPS,
    *POOLING_OPS,
    *REDUCE_OPS,
    *RNN_OPS,
    *TRANSFORM_OPS,
    *SCATTER_OPS,
    *TOPK_OPS,
    *GRID_SAMPLE_OPS,
    *LOSS_OPS,
]

NNVM = Dialect("nnvm", ALL_OPS, [])

__all__ = ["NNVM", "ALL_OPS"]
