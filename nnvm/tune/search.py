"""Search strategies over one task's space: each proposes the next batch of candidates given
what has been measured (config key -> (candidate, seconds)); the default candidate is always
measured first, so a tuned record is never slower than the default one it replaces.

* `random`: uniform samples of the space;
* `grid`: every combination, in order (small spaces);
* `evolution`: the cost model (cost_model.py), fitted on the measurements, ranks a pool of
  mutations of the best candidates so far and fresh random ones; the best-ranked are measured,
  one slot per batch kept for a random candidate so the model keeps seeing the whole space.
  With a transfer history (other tasks of the same template measured before), the model ranks
  from the first batch after the default instead of after a random warm-up."""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping

from nnvm.support.errors import UserError
from nnvm.tune.cost_model import CostModel
from nnvm.tune.space import Candidate, TaskSpace
from nnvm.tune.transfer import MIN_ROWS, TransferHistory

Measured = Mapping[str, tuple[Candidate, float]]

SAMPLE_ATTEMPTS = 40
"""Random draws per wanted candidate before a space counts as exhausted."""


class Search(ABC):
    name: str

    def __init__(self, space: TaskSpace, seed: int = 0):
        self.space = space
        self.rng = random.Random(seed)

    def next_batch(self, n: int, measured: Measured) -> list[Candidate]:
        """Up to `n` candidates not in `measured` (fewer: the space is exhausted)."""
        default = self.space.default()
        if default.key not in measured:
            return [default, *self.propose(n - 1, measured, {default.key})]
        return self.propose(n, measured, set())

    @abstractmethod
    def propose(self, n: int, measured: Measured, taken: set[str]) -> list[Candidate]: ...

    def _random(self, n: int, measured: Measured, taken: set[str]) -> list[Candidate]:
        out: list[Candidate] = []
        for _ in range(n * SAMPLE_ATTEMPTS):
            if len(out) >= n:
                break
            c = self.space.random(self.rng)
            if c is not None and c.key not in measured and c.key not in taken:
                taken.add(c.key)
                out.append(c)
        return out


class RandomSearch(Search):
    name = "random"

    def propose(self, n: int, measured: Measured, taken: set[str]) -> list[Candidate]:
        return self._random(n, measured, taken)


class GridSearch(Search):
    name = "grid"

    def __init__(self, space: TaskSpace, seed: int = 0):
        super().__init__(space, seed)
        self._grid = space.grid()

    def propose(self, n: int, measured: Measured, taken: set[str]) -> list[Candidate]:
        out: list[Candidate] = []
        for c in self._grid:
            if c.key not in measured and c.key not in taken:
                taken.add(c.key)
                out.append(c)
                if len(out) >= n:
                    break
        return out


class EvolutionarySearch(Search):
    name = "evolution"

    def __init__(
        self,
        space: TaskSpace,
        seed: int = 0,
        model: str = "auto",
        warmup: int = 8,
        pool: int = 128,
        parents: int = 8,
        history: TransferHistory | None = None,
    ):
        super().__init__(space, seed)
        self.model = CostModel(space.task, model, seed)
        self.warmup = warmup
        self.pool = pool
        self.parents = parents
        self.history = history
        """Other tasks' measurements: with enough of them the model ranks from the first
        batch (no random warm-up)."""
        self._default_key = space.default().key

    def propose(self, n: int, measured: Measured, taken: set[str]) -> list[Candidate]:
        prior = self.history.for_task(self.space.task) if self.history is not None else []
        default = measured.get(self._default_key)
        if len(prior) < MIN_ROWS:
            prior = []
        if (len(measured) < self.warmup and not prior) or n <= 0:
            return self._random(n, measured, taken)
        items = list(measured.values())
        default_s = default[1] if default is not None else math.nan
        self.model.fit([c for c, _ in items], [s for _, s in items], prior, default_s)
        best = sorted(items, key=lambda cs: cs[1])[: self.parents]
        proposals: dict[str, Candidate] = {}
        # a model trained on other tasks ranks a larger pool: before this task's own trials,
        # its parents are no better than the default
        pool = self.pool * (4 if prior else 1)
        for _ in range(pool * 2):
            if len(proposals) >= pool:
                break
            if self.rng.random() < 0.75 and best:
                parent = self.rng.choice(best)[0]
                c = self.space.mutate(parent.config, self.rng)
            else:
                c = self.space.random(self.rng)
            if c is not None and c.key not in measured and c.key not in taken:
                proposals[c.key] = c
        ranked = list(proposals.values())
        if self.model.trained and ranked:
            scores = self.model.predict(ranked)
            ranked = [ranked[k] for k in scores.argsort()]
        chosen = ranked[: max(n - 1, 1)] if n > 1 else ranked[:1]
        taken.update(c.key for c in chosen)
        rest = ranked[len(chosen) :]
        if len(chosen) < n and rest:  # exploration: one random pick of the rest
            pick = self.rng.choice(rest)
            taken.add(pick.key)
            chosen.append(pick)
        if len(chosen) < n:
            chosen += self._random(n - len(chosen), measured, taken)
        return chosen


STRATEGIES = {"random": RandomSearch, "grid": GridSearch, "evolution": EvolutionarySearch}


def make_search(
    name: str,
    space: TaskSpace,
    seed: int = 0,
    model: str = "auto",
    history: TransferHistory | None = None,
) -> Search:
    if name not in STRATEGIES:
        raise UserError(f"unknown search '{name}'; use one of {', '.join(STRATEGIES)}")
    if name == "evolution":
        return EvolutionarySearch(space, seed, model, history=history)
    return STRATEGIES[name](space, seed)
