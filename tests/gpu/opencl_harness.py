"""Running one graph op (or a whole te kernel module) on the OpenCL target in tests: the GPU
kernel pipeline, the OpenCL C blob, the OpenCL runtime over numpy arrays, against the reference
executor. `requires_opencl` skips where no OpenCL platform (PoCL) is found."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.runtime.device import run_on_device
from nnvm.targets.gpu.opencl.runtime import OpenCLRuntime, opencl_devices
from nnvm.targets.gpu.opencl.target import OpenCLTarget
from nnvm.testing.op_modules import op_module  # noqa: F401 (the op tests' import)

CTX = make_context()
requires_opencl = pytest.mark.skipif(
    not opencl_devices(),
    reason="no OpenCL platform (apt-get install pocl-opencl-icd; pip install pyopencl)",
)


def random_inputs(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    rng = np.random.default_rng(seed)
    out = []
    for t in fn.function_type.inputs.data:
        dt = numpy_dtype_of(t.element_type)  # type: ignore[attr-defined]
        shape = tuple(t.get_shape())  # type: ignore[attr-defined]
        if dt == np.bool_:
            out.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dt, np.integer):
            out.append(rng.integers(-9, 10, shape).astype(dt))
        else:
            out.append(rng.standard_normal(shape).astype(dt))
    return out


def lower_for_opencl(module: ModuleOp, target: OpenCLTarget | None = None) -> bytes:
    """A copy of the kernel module through the target's passes -> its blob."""
    target = target or OpenCLTarget()
    m = module.clone()
    for p in target.kernel_passes():
        p.apply(CTX, m)
    m.verify()
    return target.emit_kernel(m, "k")


def run_opencl(module: ModuleOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    blob = lower_for_opencl(module)
    outs = [
        np.zeros(tuple(t.get_shape()), numpy_dtype_of(t.element_type))  # type: ignore[attr-defined]
        for t in fn.function_type.outputs.data
    ]
    runtime = OpenCLRuntime(None, sources={"k": blob})
    run_on_device(runtime, "k", [np.ascontiguousarray(x) for x in inputs], outs)
    return outs


def check_opencl(
    module: ModuleOp,
    inputs: Sequence[np.ndarray] | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """The op on OpenCL computes what the reference executor computes."""
    inputs = random_inputs(module) if inputs is None else list(inputs)
    want = run_reference(module, None, inputs, function="k")
    got = run_opencl(module, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype == np.bool_ or np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
