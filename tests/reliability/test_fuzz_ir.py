"""The IR fuzzer in our own suite (nnvm/testing/fuzz_ir.py): seeded mutations of the lit inputs
through nnvm-opt with every pass family; a failure prints its reproducer. A few cases in the
fast tier, more in the full tier (each case is a child process, ~1 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnvm.testing.fuzz_ir import fuzz

LIT = Path(__file__).resolve().parents[2] / "filecheck"


def _check(count: int, seed: int) -> None:
    findings = fuzz(LIT, count, seed)
    assert not findings, "\n\n".join(f.reproducer() for f in findings[:3])


def test_mutated_ir_keeps_the_contract_fast() -> None:
    _check(12, seed=0)


@pytest.mark.slow
def test_mutated_ir_keeps_the_contract_full() -> None:
    _check(300, seed=1)
