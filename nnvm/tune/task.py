"""Tuning tasks: one per distinct tunable kernel of a model (its workload key), weighted by how
many times a run of the model calls it. A kernel is tunable where its target's templates ask
knobs of it (conv2d, dense, matmul on the CPU); elementwise kernels have nothing to tune."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnvm.compiler.build import graph_passes, kernel_module
from nnvm.compiler.executor_graph import executor_graph
from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.dialects.te.ops import ComputeOp
from nnvm.dialects.te.workload import workload_key, workload_shapes
from nnvm.passes.fuse import FUSED_PREFIX
from nnvm.registry import make_context
from nnvm.support.config_space import ConfigSpace, Knob
from nnvm.support.errors import UserError
from nnvm.support.ir_text import ir_text
from nnvm.support.param_store import attach_params
from nnvm.support.target import Target, parse_target


@dataclass
class Task:
    """A kernel to tune: its te module (no schedule) as text, and the graph-level kernel the
    reference executor checks candidates against."""

    name: str
    workload: str
    target: Target
    te_text: str
    graph_text: str
    shapes: list[list[int]]
    dtypes: list[str]
    """numpy dtype names of the arguments (inputs, then outputs)."""
    n_inputs: int
    weight: int
    flops: int
    template: str
    knobs: dict[str, Knob] = field(default_factory=dict)
    default_config: dict[str, Any] = field(default_factory=dict)

    @property
    def space_size(self) -> int:
        return math.prod(len(k.candidates) for k in self.knobs.values())

    def describe(self) -> str:
        shapes = " ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        return f"{self.template} {shapes}"


def te_function(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def _flops(fn: func.FuncOp) -> int:
    """2 x (outputs x reduction extent) of each sum-reduction: the multiply-adds."""
    total = 0
    for op in fn.body.block.ops:
        if isinstance(op, ComputeOp) and op.reduce_kind == "sum":
            total += 2 * math.prod(op.shape) * math.prod(op.reduce_shape)
    return total


def _template(fn: func.FuncOp) -> str:
    names = [op.template_name for op in fn.body.block.ops if isinstance(op, ComputeOp)]
    return next((n for n in names if n and n not in ("pad", "pack")), "kernel")


def extract_tasks(
    module: ModuleOp,
    params: Mapping[str, np.ndarray] | None,
    target: str | Target = "llvm",
    opt_level: int = 3,
    devices: Sequence[str | Target] = (),
) -> list[Task]:
    """The tunable kernels of a graph-level module after the build's graph passes, in the
    order a run first calls them, one task per workload. With `devices`, a kernel a device
    takes is a task of that device when it builds the kernel's te itself
    (`Target.te_kernel`: the accelerator's layers, measured on its cycle model)."""
    from nnvm.compiler.build import place_kernels

    host = parse_target(target)
    device_targets = [parse_target(d) for d in devices]
    if not isinstance(module, ModuleOp):
        raise UserError("extract_tasks expects a graph-level module (nnvm.frontend.from_onnx)")
    module = module.clone()
    attach_params(module, {k: np.asarray(v) for k, v in (params or {}).items()})
    ctx = make_context()
    for p in graph_passes(opt_level, host, devices=device_targets):
        p.apply(ctx, module)
    graph = executor_graph(module)
    kernels = {
        f.sym_name.data: f
        for f in module.ops
        if isinstance(f, func.FuncOp) and f.sym_name.data.startswith(FUSED_PREFIX)
    }
    placement = place_kernels({n: kernels[n] for n in graph.kernels}, device_targets)
    calls: dict[str, int] = {}
    for node in graph.nodes:
        calls[node.kernel] = calls.get(node.kernel, 0) + 1
    lower = next(p for p in host.kernel_passes() if p.name == "lower-to-te")
    tasks: dict[str, Task] = {}
    for name in graph.kernels:
        graph_module = kernel_module(kernels[name])
        device = placement[name]
        if device is not None:
            fn = device.te_kernel(kernels[name])
            if fn is None:
                continue
            te_module = ModuleOp([fn])
        else:
            te_module = graph_module.clone()
            lower.apply(ctx, te_module)
            fn = te_function(te_module)
        key = workload_key(fn)
        if key in tasks:
            tasks[key].weight += calls.get(name, 1)
            continue
        task = kernel_task(device or host, name, te_module, ir_text(graph_module))
        if task is not None:
            task.weight = calls.get(name, 1)
            tasks[key] = task
    return list(tasks.values())


def kernel_task(
    target: Target, name: str, te_module: ModuleOp, graph_text: str = ""
) -> Task | None:
    """The task of one te kernel (None: its target's templates ask no knobs of it).
    `graph_text` is the graph-level kernel the reference executor checks candidates against
    ('' for a target that checks them itself: `Target.simulate_kernel`)."""
    fn = te_function(te_module)
    space = ConfigSpace()
    if target.configured_schedule(fn, space) is None or not space.knobs:
        return None
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    return Task(
        name=name,
        workload=workload_key(fn),
        target=target,
        te_text=ir_text(te_module),
        graph_text=graph_text,
        shapes=workload_shapes(fn),
        dtypes=[numpy_dtype_of(t.element_type).name for t in types],  # type: ignore[attr-defined]
        n_inputs=len(fn.function_type.inputs.data),
        weight=1,
        flops=_flops(fn),
        template=_template(fn),
        knobs=dict(space.knobs),
        default_config=dict(space.values),
    )


def tasks_by_weight(tasks: Sequence[Task]) -> list[Task]:
    """Tasks in order of the work they stand for (flops x calls), largest first."""
    return sorted(tasks, key=lambda t: -t.flops * t.weight)
