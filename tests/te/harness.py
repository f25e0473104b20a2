"""Differential checks of the tensor level: a graph kernel runs through the reference executor
and through lower-to-te -> (default or given) schedule -> lower-te-to-loops -> CPU JIT (or
xDSL's interpreter), and the results must agree."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.te.schedule import ScheduleOp
from nnvm.lowering.te_to_loops.lower_te_to_loops import LowerTEToLoops
from nnvm.lowering.to_te.lower_to_te import LowerToTE
from nnvm.passes.apply_default_schedule import ApplyDefaultSchedulePass
from nnvm.passes.hoist_loop_invariant_accesses import HoistLoopInvariantAccessesPass
from nnvm.reference import run_reference
from nnvm.registry import make_context
from nnvm.support.diagnostics import parse_module
from nnvm.testing.op_modules import op_module  # noqa: F401 (the op tests' import)

CTX = make_context()


def parse(text: str) -> ModuleOp:
    return parse_module(CTX, text, "<test>")


def random_inputs(
    module: ModuleOp, name: str = "k", seed: int = 0, positive: bool = False
) -> list[np.ndarray]:
    fn = _function(module, name)
    rng = np.random.default_rng(seed)
    out = []
    for t in fn.function_type.inputs.data:
        assert isinstance(t, TensorType)
        dt = numpy_dtype_of(t.element_type)
        shape = tuple(t.get_shape())
        if dt == np.bool_:
            out.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dt, np.integer):
            lo = 1 if positive or np.issubdtype(dt, np.unsignedinteger) else -9
            out.append(rng.integers(lo, 10, shape).astype(dt))
        else:
            v = rng.standard_normal(shape)
            if positive:
                v = np.abs(v) + 0.1
            out.append(v.astype(dt))
    return out


def _function(module: ModuleOp, name: str) -> func.FuncOp:
    return next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == name)


def lower(module: ModuleOp, schedule: str | None = "default", name: str = "k") -> ModuleOp:
    """A copy of the module lowered to loops; `schedule` is "default", None (no schedule) or
    the text of the primitives to put in a te.schedule of function `name`."""
    m = module.clone()
    LowerToTE().apply(CTX, m)
    if schedule == "default":
        ApplyDefaultSchedulePass().apply(CTX, m)
    elif schedule:
        attach_schedule(m, schedule, name)
    LowerTEToLoops().apply(CTX, m)
    HoistLoopInvariantAccessesPass().apply(CTX, m)  # as the CPU target's kernel passes do
    m.verify()
    assert_no_stray_uses(m)
    return m


def assert_no_stray_uses(module: ModuleOp) -> None:
    """Every use of a value is by an op of the module. An op the lowering built and dropped
    without erasing it keeps a use that printing does not show but that later conversions
    trip over (reconcile-unrealized-casts left casts behind)."""
    inside = {id(op) for op in module.walk()}
    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for value in values:
            for use in value.uses:
                assert id(use.operation) in inside, (
                    f"{value.name_hint or value} is used by a {use.operation.name} that is not "
                    "in the module"
                )


def attach_schedule(module: ModuleOp, primitives: str, name: str = "k") -> None:
    text = "te.schedule {\n" + primitives + "\n}"
    parsed = parse(text)
    sched = next(o for o in parsed.ops if isinstance(o, ScheduleOp))
    sched.detach()
    fn = _function(module, name)
    ret = fn.body.block.last_op
    assert ret is not None
    fn.body.block.insert_op_before(sched, ret)


def run_lowered(
    module: ModuleOp, inputs: Sequence[np.ndarray], name: str = "k", backend: str = "jit"
) -> list[np.ndarray]:
    """Run a lowered kernel (memref ins then outs) on numpy inputs."""
    if backend == "interp":
        from kernel_runner import interpret_kernel

        return interpret_kernel(module, name, inputs)
    from nnvm.lowering.to_llvm.convert_to_llvm import ConvertToLLVM
    from nnvm.targets.llvm.compile import compile_jit

    fn = _function(module, name)
    types = list(fn.function_type.inputs.data)
    outs = [
        np.zeros(tuple(t.get_shape()), numpy_dtype_of(t.element_type))  # type: ignore[attr-defined]
        for t in types[len(inputs) :]
    ]
    m = module.clone()
    for op in list(m.ops):  # keep the kernel (made public) and the globals it uses
        if isinstance(op, func.FuncOp) and not op.is_declaration:
            if op.sym_name.data == name:
                op.sym_visibility = None
            else:
                op.detach()
    ConvertToLLVM().apply(CTX, m)
    jit = compile_jit(m)
    args = [np.ascontiguousarray(x) for x in inputs]
    jit[name](*args, *outs)
    return outs


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def check(
    module: ModuleOp,
    inputs: Sequence[np.ndarray] | None = None,
    *,
    schedule: str | None = "default",
    backend: str | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    positive: bool = False,
    name: str = "k",
    want: Sequence[np.ndarray] | None = None,
) -> ModuleOp:
    """Reference (or `want`) vs lowered kernel on the same inputs; returns the lowered
    module."""
    if inputs is None:
        inputs = random_inputs(module, name, positive=positive)
    if want is None:
        want = run_reference(module, {}, list(inputs), function=name)
    lowered = lower(module, schedule, name)
    backend = backend or os.environ.get("NNVM_TE_BACKEND", "jit")
    backends = ["jit", "interp"] if backend == "both" else [backend]
    for be in backends:
        got = run_lowered(lowered, inputs, name, be)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_close(g, w.astype(g.dtype) if g.dtype != w.dtype else w, rtol, atol)
    return lowered
