"""The ONNX fuzzer in our own suite (nnvm/testing/fuzz_onnx.py): seeded protobuf mutations of
small models, imported, built and run by us and by onnxruntime on the same inputs. Every case
must match onnxruntime (or the reference executor where onnxruntime has no kernel), or be
refused by both, or be refused by us with a UserError (those are counted and listed). 24 cases
in the fast tier, 2,000 in the full tier (in shards)."""

from __future__ import annotations

import pytest

from nnvm.testing.fuzz_onnx import fuzz

FULL_CASES, FULL_SHARDS = 2_000, 8


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    # the worker inherits the environment: its kernels go to this session's cache
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))


def _check(count: int, seed: int) -> None:
    report = fuzz(count, seed)
    print(f"{count} mutations: {dict(report.verdicts)}")
    for line in report.refusals:
        print("  onnxruntime accepts, we refuse:", line)
    assert sum(report.verdicts.values()) == count
    assert not report.problems, f"{len(report.problems)} of {count}:\n" + "\n".join(
        report.problems[:5]
    )


def test_mutated_onnx_matches_onnxruntime_or_fails_clearly_fast() -> None:
    _check(24, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(FULL_SHARDS))
def test_mutated_onnx_matches_onnxruntime_or_fails_clearly_full(shard: int) -> None:
    _check(FULL_CASES // FULL_SHARDS, seed=2000 + shard)
