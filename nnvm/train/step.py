"""A compiled training step: forward, backward and the optimizer's update in one graph, built
once by `nnvm.compiler.build` and run by the graph runtime.

The step's graph takes the batch inputs, every param, every optimizer slot (and the step number
for optimizers that read it) and returns the loss, the updated params and the updated slots; the
step object keeps params and slots as numpy arrays and writes each run's results back into them
(`get_output(out=...)`: one copy each way per step).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr
from xdsl.ir import OpResult

from nnvm.compiler.build import build
from nnvm.dialects.nnvm.base import tensor
from nnvm.dialects.nnvm.sources import ParamOp
from nnvm.passes.gradient import GraphBuilder, differentiate
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.support.ir import argument_names, find_function
from nnvm.symbol import Symbol
from nnvm.train.optimizers import SGD, Optimizer


def _names(names: list[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({"nnvm.name": StringAttr(n)}) for n in names])


def train_module(
    loss: Symbol, params: Mapping[str, np.ndarray], optimizer: Optimizer, checkpoint: int = 0
):
    """The train step's graph-level module, and its argument names in order (`checkpoint`:
    the gradient pass's recomputation segments, -1 for about sqrt(n))."""
    module, used = loss.to_module(params=params)
    unused = sorted(set(params) - set(used))
    if unused:
        raise UserError(f"train step: params not used by the loss: {unused}")
    differentiate(module, checkpoint=checkpoint)  # every float param
    fn = find_function(module)
    block = fn.body.block
    names = argument_names(fn)
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    loss_value, *grads = ret.operands
    param_ops = [op for op in block.ops if isinstance(op, ParamOp)]
    if len(grads) != len(param_ops):
        raise AssertionError("one gradient per float param")
    t = None
    if optimizer.USES_STEP:
        t = block.insert_arg(tensor((), loss_value.type.element_type), len(block.args))
    new_params, new_slots, slot_names = [], [], []
    for op, grad in zip(param_ops, grads, strict=True):
        arg = block.insert_arg(op.result.type, len(block.args))
        op.result.replace_all_uses_with(arg)
        block.erase_op(op)
        names_here = []
        slots = []
        for slot in optimizer.SLOTS:
            slots.append(block.insert_arg(arg.type, len(block.args)))
            names_here.append(f"{op.key}.{slot}")
        # the update goes right after the gradient is complete, so the gradient dies there
        # instead of staying live to the end of the backward pass
        at = grad.owner.next_op if isinstance(grad, OpResult) else None
        here = GraphBuilder(block, at if at is not None else ret)
        w, updated = optimizer.update(here, arg, grad, slots, t)
        new_params.append((op.key, arg, w))
        new_slots.extend(updated)
        slot_names.extend(names_here)
    # argument order: batch inputs, [t], then per param: the param and its slots
    arg_names = list(names) + (["step"] if t is not None else [])
    for key, _, _ in new_params:
        arg_names.append(key)
        arg_names.extend(f"{key}.{slot}" for slot in optimizer.SLOTS)
    results = [loss_value, *(w for _, _, w in new_params), *new_slots]
    out_names = ["loss", *(k for k, _, _ in new_params), *slot_names]
    block.insert_op_before(func.ReturnOp(*results), ret)
    block.erase_op(ret)
    fn.function_type = func.FunctionType.from_lists(
        [a.type for a in block.args], [r.type for r in results]
    )
    fn.arg_attrs = _names(arg_names)
    fn.res_attrs = _names(out_names)
    module.verify()
    return module, [k for k, _, _ in new_params], slot_names, list(names)


@dataclass
class TrainStep:
    """`step = TrainStep(loss, params, Adam(1e-3))`; `step(x=batch, labels=y)` runs one update
    and returns the loss; `step.params` holds the current values."""

    loss: Symbol
    params: dict[str, np.ndarray]
    optimizer: Optimizer = field(default_factory=SGD)
    target: str = "llvm"
    checkpoint: int = 0
    """Recompute the forward pass in this many segments during backward (-1: about sqrt(n)):
    less activation memory for one more forward pass."""
    compile_seconds: float = 0.0

    def __post_init__(self) -> None:
        self.params = {k: np.array(v, copy=True) for k, v in self.params.items()}
        t0 = time.perf_counter()
        module, self.param_names, self.slot_names, self.input_names = train_module(
            self.loss, self.params, self.optimizer, self.checkpoint
        )
        graph, lib, folded = build(module, target=self.target, params={})
        self.compile_seconds = time.perf_counter() - t0
        self.runtime = graph_runtime.create(graph, lib)
        self.arena_bytes = graph.arena_bytes
        if folded:  # constants the build folded (broadcast seeds, transposed constants)
            self.runtime.set_input(**folded)
        self.slots = {
            f"{k}.{slot}": np.zeros_like(self.params[k])
            for k in self.param_names
            for slot in self.optimizer.SLOTS
        }
        self.steps = 0

    def __call__(self, **batch: np.ndarray) -> float:
        missing = [n for n in self.input_names if n not in batch]
        extra = [n for n in batch if n not in self.input_names]
        if missing or extra:
            raise UserError(
                f"train step takes inputs {self.input_names}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {extra}" if extra else "")
            )
        self.steps += 1
        m = self.runtime
        for name, value in batch.items():
            m.set_input(name, value)
        if self.optimizer.USES_STEP:
            dtype = next(iter(self.params.values())).dtype
            m.set_input("step", np.asarray(self.steps, dtype=dtype))
        for name in self.param_names:
            m.set_input(name, self.params[name])
        for name, value in self.slots.items():
            m.set_input(name, value)
        m.run()
        loss = float(m.get_output(0))
        k = 1
        for name in self.param_names:
            m.get_output(k, out=self.params[name])
            k += 1
        for name in self.slot_names:
            m.get_output(k, out=self.slots[name])
            k += 1
        return loss


def fit(
    step: TrainStep,
    batches: Iterable[Mapping[str, np.ndarray]]
    | Callable[[int], Iterable[Mapping[str, np.ndarray]]],
    epochs: int = 1,
    progress: bool = True,
) -> list[float]:
    """Run `epochs` passes over `batches` (an iterable of input dicts, or a function of the
    epoch returning one); returns each epoch's mean loss. A progress line goes to stderr."""
    history: list[float] = []
    for epoch in range(epochs):
        data = list(batches(epoch) if callable(batches) else batches)
        losses: list[float] = []
        t0 = time.perf_counter()
        for k, batch in enumerate(data):
            losses.append(step(**batch))
            if progress and sys.stderr.isatty():
                done = int(30 * (k + 1) / len(data))
                sys.stderr.write(
                    f"\repoch {epoch + 1}/{epochs} [{'=' * done}{' ' * (30 - done)}] "
                    f"loss {np.mean(losses):.4f}"
                )
        if progress:
            sys.stderr.write(
                f"\repoch {epoch + 1}/{epochs}: loss {np.mean(losses):.4f} "
                f"({len(data)} steps, {time.perf_counter() - t0:.2f} s)\n"
            )
        history.append(float(np.mean(losses)) if losses else float("nan"))
    return history
