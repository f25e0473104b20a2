"""Dialects of nnvm: `nnvm` (graph level), `te` (tensor expressions and schedules); later the
target dialects. `DIALECTS` lists the extra dialects the tools load (lazily) beside `nnvm`."""

from collections.abc import Callable

from xdsl.ir import Dialect


def _te() -> Dialect:
    from nnvm.dialects.te import TE

    return TE


DIALECTS: dict[str, Callable[[], Dialect]] = {"te": _te}
