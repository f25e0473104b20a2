"""The knobs of a schedule template, defined as the template runs (AutoTVM's define-by-run
space): a template asks `config.knob(name, candidates, default)` where it makes a choice, and
gets back the value a tuner picked, or its default. The same call records the knob, so the
search space of a kernel is whatever its template asked on a run, and a knob that only exists
on one branch (the depth-blocked matmul's block depth) only appears when that branch is taken.

A config is a plain dict of knob values (JSON in the tuning log); the schedule it produces is
the record itself (te schedule IR), so a log outlives changes to the knobs."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

Chooser = Callable[[str, tuple[Hashable, ...], Hashable], Hashable]
"""(knob name, candidates, default) -> the value to use (a search's sampler)."""


@dataclass(frozen=True)
class Knob:
    name: str
    candidates: tuple[Hashable, ...]
    default: Hashable


@dataclass
class ConfigSpace:
    """Answers a template's knobs from `chosen` (else `choose`, else the default) and records
    every knob it was asked, with the value it answered, in order."""

    chosen: Mapping[str, Hashable] = field(default_factory=dict)
    choose: Chooser | None = None
    knobs: dict[str, Knob] = field(default_factory=dict)
    values: dict[str, Hashable] = field(default_factory=dict)

    def knob(self, name: str, candidates: Sequence[Hashable], default: Hashable) -> Hashable:
        """The value of knob `name`, one of `candidates` (the default first if it is not
        among them). A chosen value that is not a candidate here (the space moved under a
        config, or a mutation) falls back to the default."""
        options = tuple(dict.fromkeys([default, *candidates]))
        name = self._unique(name)
        self.knobs[name] = Knob(name, options, default)
        if name in self.chosen and self.chosen[name] in options:
            value = self.chosen[name]
        elif self.choose is not None:
            value = self.choose(name, options, default)
        else:
            value = default
        self.values[name] = value
        return value

    def _unique(self, name: str) -> str:
        """A template scheduling two anchors asks the same knobs twice: number the second."""
        if name not in self.knobs:
            return name
        k = 2
        while f"{name}#{k}" in self.knobs:
            k += 1
        return f"{name}#{k}"

    @property
    def size(self) -> int:
        """Configs of the knobs seen on this run (an upper bound of the conditional space)."""
        n = 1
        for k in self.knobs.values():
            n *= len(k.candidates)
        return n


def random_chooser(rng: random.Random) -> Chooser:
    """Uniform over each knob's candidates."""
    return lambda name, options, default: rng.choice(options)


def mutating_chooser(
    base: Mapping[str, Hashable], rng: random.Random, rate: float = 0.3
) -> Chooser:
    """Keeps `base`'s values (as `chosen` would), with probability `rate` per knob (and
    for knobs `base` lacks) a random candidate: the evolutionary search's mutation."""

    def choose(name: str, options: tuple[Hashable, ...], default: Hashable) -> Hashable:
        if name in base and base[name] in options and rng.random() >= rate:
            return base[name]
        return rng.choice(options)

    return choose
