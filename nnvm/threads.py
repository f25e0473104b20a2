"""How many threads parallel kernels use: `set_num_threads(n)`, else `NNVM_NUM_THREADS`, else
every CPU this process may run on.

Compiled modules read the value at each call and hand it to the thread pool's `nnvm_parallel`, so a change
takes effect at the next kernel call, for kernels compiled before or after it.
"""

from __future__ import annotations

import os

_num_threads: int | None = None


def set_num_threads(n: int) -> None:
    """Use `n` threads (n >= 1) for parallel loops from now on."""
    global _num_threads
    if int(n) < 1:
        raise ValueError(f"number of threads must be at least 1, got {n}")
    _num_threads = int(n)


def get_num_threads() -> int:
    """The thread count parallel kernels will use."""
    if _num_threads is not None:
        return _num_threads
    env = os.environ.get("NNVM_NUM_THREADS", "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            raise ValueError(f"NNVM_NUM_THREADS must be a positive integer, got {env!r}") from None
        if value >= 1:
            return value
        raise ValueError(f"NNVM_NUM_THREADS must be a positive integer, got {env!r}")
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


__all__ = ["get_num_threads", "set_num_threads"]
