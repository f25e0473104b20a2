"""Which ONNX backend node tests measure the frontend: the op lists of the ONNX-frontend issue
and the mapping from node-test names to the op they exercise (shared by the pytest module and
the per-op report script)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

#: The core ops (tier 1 of docs/reference/onnx-backend-suite.md): their node tests are fast tier.
CORE_OPS: tuple[str, ...] = (
    "Conv", "Relu", "Add", "Mul", "Sub", "Div", "MatMul", "Gemm", "Reshape", "Transpose",
    "Flatten", "Concat", "Split", "Slice", "Gather", "Shape", "Unsqueeze", "Squeeze", "Expand",
    "Cast", "Constant", "ConstantOfShape", "Identity", "Where", "Equal", "And", "GreaterOrEqual",
    "IsNaN", "Softmax", "LayerNormalization", "Erf", "Tanh", "Sigmoid", "HardSigmoid",
    "HardSwish", "Clip", "MaxPool", "GlobalAveragePool", "ReduceMean", "ReduceSum", "Resize",
    "Pow", "Sqrt", "Mod", "GatherND", "LSTM", "BatchNormalization", "AveragePool", "Sum", "LRN",
    "Dropout",
)  # fmt: skip

#: The rest of the issue's list: full tier.
EXTRA_OPS: tuple[str, ...] = (
    "Less", "Greater", "Not", "Neg", "Exp", "Log", "Abs", "Min", "Max", "ReduceMax", "LeakyRelu",
    "PRelu", "Gelu", "Pad", "Tile", "Range", "InstanceNormalization",
)  # fmt: skip

ISSUE_OPS: tuple[str, ...] = CORE_OPS + EXTRA_OPS

_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def base_name(test_name: str) -> str:
    """`test_softmax_axis_0_expanded_ver18` -> `test_softmax_axis_0`."""
    return _EXPANDED.sub("", test_name)


@lru_cache(maxsize=1)
def node_test_ops() -> dict[str, str]:
    """Node-test name -> the ONNX op it tests (expanded variants map to their base test's op)."""
    from onnx.backend.test.loader import load_model_tests

    cases = load_model_tests(kind="node")
    single = {
        c.name: c.model.graph.node[0].op_type
        for c in cases
        if c.model is not None and not _EXPANDED.search(c.name)
    }
    return {c.name: single.get(base_name(c.name), "") for c in cases}


def tests_for(ops: Iterable[str]) -> list[str]:
    wanted = set(ops)
    return sorted(name for name, op in node_test_ops().items() if op in wanted)


def name_regex(names: Iterable[str]) -> str:
    """A regex matching exactly these test names on the CPU device (BackendTest's filter)."""
    return "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")_cpu$"
