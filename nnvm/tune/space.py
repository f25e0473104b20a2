"""Candidates of a task's search space: a config (knob values) and the schedule the target's
templates build from it. The space is define-by-run (nnvm.support.config_space): sampling and
mutation run the template with a chooser, and the config recorded is what the template used,
so two configs that give the same schedule are one candidate."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import func

from nnvm.registry import make_context
from nnvm.support.config_space import Chooser, ConfigSpace, mutating_chooser, random_chooser
from nnvm.support.diagnostics import parse_module
from nnvm.support.ir_text import ir_text
from nnvm.tune.task import Task, te_function


@dataclass(frozen=True)
class Candidate:
    config: dict[str, Any]
    schedule: str
    """The te.schedule op as text (what the log records)."""

    @property
    def key(self) -> str:
        return config_key(self.config)


def config_key(config: Mapping[str, Any]) -> str:
    return json.dumps(dict(config), sort_keys=True)


class TaskSpace:
    """Makes candidates of one task (parses its te kernel once)."""

    def __init__(self, task: Task):
        self.task = task
        self.ctx = make_context()
        self.module = parse_module(self.ctx, task.te_text, task.name)
        self.fn: func.FuncOp = te_function(self.module)

    def make(
        self, chosen: Mapping[str, Any] | None = None, choose: Chooser | None = None
    ) -> Candidate | None:
        """The candidate the templates give for these choices (None: it does not apply)."""
        space = ConfigSpace(chosen=dict(chosen or {}), choose=choose)
        sched = self.task.target.configured_schedule(self.fn, space)
        if sched is None:
            return None
        return Candidate(dict(space.values), ir_text(sched))

    def default(self) -> Candidate:
        found = self.make()
        assert found is not None, "the default config always applies"
        return found

    def random(self, rng: random.Random) -> Candidate | None:
        return self.make(choose=random_chooser(rng))

    def mutate(self, base: Mapping[str, Any], rng: random.Random, rate: float = 0.3):
        return self.make(choose=mutating_chooser(base, rng, rate))

    def grid(self) -> Iterator[Candidate]:
        """Every combination of the knobs the default run asked (knobs that only appear on
        another branch take their defaults there), each distinct candidate once."""
        knobs = list(self.task.knobs.values())
        seen: set[str] = set()
        for values in itertools.product(*(k.candidates for k in knobs)):
            found = self.make({k.name: v for k, v in zip(knobs, values, strict=True)})
            if found is not None and found.key not in seen:
                seen.add(found.key)
                yield found

    def module_text(self, candidate: Candidate) -> str:
        """The te kernel module with the candidate's schedule: what a builder compiles."""
        from xdsl.parser import Parser
        from xdsl.rewriter import InsertPoint, Rewriter

        module = self.module.clone()
        fn = te_function(module)
        sched = Parser(self.ctx, candidate.schedule).parse_op()
        ret = fn.body.block.last_op
        assert ret is not None
        Rewriter.insert_op(sched, InsertPoint.before(ret))
        return ir_text(module)
