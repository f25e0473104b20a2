"""Optimizers as graph functions: each emits its update of one param into the train step's
graph (so forward, backward and update compile into one entry point) and names the state it
carries from step to step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.ir import SSAValue

from nnvm.passes.gradient import GraphBuilder


@dataclass(frozen=True)
class Optimizer:
    lr: float = 0.01

    #: Names of the per-param state slots (each has the param's shape, starts at zero).
    SLOTS: ClassVar[tuple[str, ...]] = ()
    #: Whether the update reads the step number `t` (1, 2, ...), a rank-0 input of the step.
    USES_STEP: ClassVar[bool] = False

    def update(
        self,
        g: GraphBuilder,
        w: SSAValue,
        grad: SSAValue,
        slots: list[SSAValue],
        t: SSAValue | None,
    ) -> tuple[SSAValue, list[SSAValue]]:
        """(new param, new slot values)."""
        raise NotImplementedError


@dataclass(frozen=True)
class SGD(Optimizer):
    """w -= lr * (g + weight_decay * w), with heavy-ball momentum when momentum > 0:
    v = momentum * v + g; w -= lr * v."""

    lr: float = 0.01
    momentum: float = 0.0
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        # the momentum buffer is state only when there is momentum
        object.__setattr__(self, "SLOTS", ("momentum",) if self.momentum else ())

    def update(self, g, w, grad, slots, t):
        if self.weight_decay:
            grad = g.op("add", grad, g.op("mul", w, g.scalar(self.weight_decay, w)))
        if self.momentum:
            (v,) = slots
            v = g.op("add", g.op("mul", v, g.scalar(self.momentum, v)), grad)
            step, new = v, [v]
        else:
            step, new = grad, []
        return g.op("sub", w, g.op("mul", step, g.scalar(self.lr, step))), new


@dataclass(frozen=True)
class Adam(Optimizer):
    """Adam (Kingma and Ba): moments m, v with bias correction by the step number t."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    SLOTS: ClassVar[tuple[str, ...]] = ("m", "v")
    USES_STEP: ClassVar[bool] = True

    def update(self, g, w, grad, slots, t):
        assert t is not None
        m, v = slots
        b1, b2 = self.beta1, self.beta2
        m = g.op("add", g.op("mul", m, g.scalar(b1, m)), g.op("mul", grad, g.scalar(1 - b1, grad)))
        sq = g.op("mul", grad, grad)
        v = g.op("add", g.op("mul", v, g.scalar(b2, v)), g.op("mul", sq, g.scalar(1 - b2, sq)))
        # lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t)
        one = g.scalar(1.0, t)
        c1 = g.op("sub", one, g.op("pow", g.scalar(b1, t), t))
        c2 = g.op("sub", one, g.op("pow", g.scalar(b2, t), t))
        lr_t = g.op("div", g.op("mul", g.op("sqrt", c2), g.scalar(self.lr, t)), c1)
        denom = g.op("add", g.op("sqrt", v), g.scalar(self.eps, v))
        new_w = g.op("sub", w, g.op("mul", g.op("div", m, denom), lr_t))
        return new_w, [m, v]
