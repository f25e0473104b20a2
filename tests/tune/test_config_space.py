"""The define-by-run knob space: defaults, chosen values, fallbacks, what it records."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from nnvm.support.config_space import ConfigSpace, mutating_chooser, random_chooser


def test_default_is_answered_and_recorded():
    cs = ConfigSpace()
    assert cs.knob("rows", [1, 2, 3], 2) == 2
    assert cs.knobs["rows"].candidates == (2, 1, 3)  # the default first
    assert cs.values == {"rows": 2}
    assert cs.size == 3


def test_chosen_value_wins_and_a_foreign_one_falls_back():
    cs = ConfigSpace(chosen={"rows": 3, "cols": 99})
    assert cs.knob("rows", [1, 2, 3], 2) == 3
    assert cs.knob("cols", [8, 16], 16) == 16  # 99 is not a candidate here


def test_a_knob_asked_twice_is_numbered():
    cs = ConfigSpace(chosen={"rows#2": 1})
    assert cs.knob("rows", [1, 2], 2) == 2
    assert cs.knob("rows", [1, 2], 2) == 1
    assert list(cs.knobs) == ["rows", "rows#2"]


@given(st.lists(st.integers(0, 50), min_size=1, max_size=8), st.integers(0, 1000))
def test_random_and_mutating_choosers_answer_candidates(cands, seed):
    rng = random.Random(seed)
    for chooser in (random_chooser(rng), mutating_chooser({"k": cands[0]}, rng)):
        cs = ConfigSpace(choose=chooser)
        assert cs.knob("k", cands, cands[-1]) in cands


def test_cpu_templates_declare_knobs(matmul_task):
    assert {"matmul.rows", "matmul.cols"} <= set(matmul_task.knobs)
    assert matmul_task.space_size > 4
    for name, value in matmul_task.default_config.items():
        assert value == matmul_task.knobs[name].default
