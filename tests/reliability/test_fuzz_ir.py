"""The IR fuzzer in our own suite (nnvm/tools/fuzz_ir.py): seeded mutations of the lit inputs
through nnvm-opt with every pass family; a failure prints its reproducer. The cases run in one
worker process with a time limit each (~10 ms a case): 200 in the fast tier, 10,000 in the full
tier (in shards, so xdist spreads them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nnvm.tools.fuzz_ir import fuzz

LIT = Path(__file__).resolve().parents[2] / "filecheck"
FULL_CASES, FULL_SHARDS = 10_000, 4


def _check(count: int, seed: int) -> None:
    findings = fuzz(LIT, count, seed)
    assert not findings, f"{len(findings)} of {count}:\n\n" + "\n\n".join(
        f.reproducer() for f in findings[:3]
    )


def test_mutated_ir_keeps_the_contract_fast() -> None:
    _check(200, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(FULL_SHARDS))
def test_mutated_ir_keeps_the_contract_full(shard: int) -> None:
    _check(FULL_CASES // FULL_SHARDS, seed=1000 + shard)
