"""ONNX's official backend tests through from_onnx + the reference executor.

Fast tier: the node tests of the core ops. Full tier (`-m slow`): the node tests of every other
op the importer supports, and the `simple`, `pytorch-converted` and `pytorch-operator` model
folders. Expected failures are listed explicitly, each with its reason, in
nnvm/testing/backend_suite.py; an unexpected pass fails (so the list stays honest).
Tolerance: rtol 1e-3, atol 1e-5 (the issue's), for every test.
"""

from __future__ import annotations

import re

from nnvm.testing.backend_suite import ALL_TEST_NAMES, XFAIL, collect

globals().update(collect(module=__name__))


def test_xfail_patterns_each_match_a_test() -> None:
    """A stale expected-failure entry is a bug in the list."""
    for pattern in XFAIL:
        assert any(re.search(pattern, n) for n in ALL_TEST_NAMES), pattern
