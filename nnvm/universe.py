"""nnvm's own dialects, passes and targets, published the way a plugin publishes its own:
`NNVM_UNIVERSE` under `xdsl.universe` (so stock xdsl-opt sees them), `NNVM_PLUGIN` under
`nnvm.plugins` (targets and target-specific passes)."""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.universe import Universe

from nnvm import lowering, passes
from nnvm.support.plugins import PLUGIN_API_VERSION, Plugin, lazy_attr, lazy_pass


def _nnvm() -> Dialect:
    from nnvm.dialects.nnvm import NNVM

    return NNVM


def _te() -> Dialect:
    from nnvm.dialects.te import TE

    return TE


def _hint() -> Dialect:
    from nnvm.dialects.hint import HINT

    return HINT


NNVM_UNIVERSE = Universe(
    all_dialects={"nnvm": _nnvm, "te": _te, "hint": _hint},
    all_passes={**passes.PASSES, **lowering.PASSES},
)

NNVM_PLUGIN = Plugin(
    api_version=PLUGIN_API_VERSION,
    passes={
        "convert-parallel-to-threads": lazy_pass(
            "nnvm.targets.cpu.convert_parallel_to_threads", "ConvertParallelToThreads"
        ),
    },
    targets={
        "llvm": lazy_attr("nnvm.targets.cpu.target", "CPUTarget"),
        "wasm": lazy_attr("nnvm.targets.wasm.target", "WasmTarget"),
        "opencl": lazy_attr("nnvm.targets.gpu.opencl.target", "OpenCLTarget"),
        "cuda": lazy_attr("nnvm.targets.gpu.cuda.target", "CudaTarget"),
    },
    llvm_conversions={"convert-parallel-to-threads": "loops"},
)
