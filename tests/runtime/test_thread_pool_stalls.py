"""The thread pool beside a busy core (targets/cpu/nnvm_threads.c): a worker that holds a chunk
for milliseconds (as one whose core another process took) is a stall; the next loops run on a
team one thread smaller, and after the cap's while the full team again. Driven through the
pool's C entry points with a Python loop body whose worker sleeps in its chunk."""

from __future__ import annotations

import ctypes
import time

import pytest

from nnvm.targets.cpu.link import threads_library

BODY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@pytest.fixture(scope="module")
def pool():
    lib = ctypes.CDLL(str(threads_library()))
    lib.nnvm_parallel.argtypes = [BODY, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.nnvm_loop_start.argtypes = [ctypes.c_int64] * 4 + [i64p, i64p]
    lib.nnvm_loop_start.restype = ctypes.c_bool
    lib.nnvm_loop_next.argtypes = [i64p, i64p]
    lib.nnvm_loop_next.restype = ctypes.c_bool
    lib.nnvm_thread_index.restype = ctypes.c_int32
    lib.nnvm_team_size.restype = ctypes.c_int32
    lib.nnvm_pool_stalls.restype = ctypes.c_int64
    return lib


def run_loop(pool, iterations: int, worker_sleep_s: float = 0.0) -> list[tuple[int, int]]:
    """One parallel loop of `iterations` one-iteration chunks on two threads; each iteration
    records (thread index, team size); a worker sleeps in its first chunk."""
    seen: list[tuple[int, int]] = []

    def body(_ctx) -> None:
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        more = pool.nnvm_loop_start(0, iterations, 1, 1, ctypes.byref(lo), ctypes.byref(hi))
        first = True
        while more:
            index = pool.nnvm_thread_index()
            seen.append((index, pool.nnvm_team_size()))
            if index != 0 and first and worker_sleep_s:
                time.sleep(worker_sleep_s)
            first = False
            more = pool.nnvm_loop_next(ctypes.byref(lo), ctypes.byref(hi))

    callback = BODY(body)
    pool.nnvm_parallel(callback, None, 2, 0)
    assert len(seen) == iterations  # every iteration ran once, whoever ran it
    return seen


def test_a_stalled_worker_caps_the_team_for_a_while(pool):
    time.sleep(0.3)  # past any cap an earlier loop of this process left
    for _ in range(50):  # a worker joins the loop unless its core is busy the whole time
        before = pool.nnvm_pool_stalls()
        seen = run_loop(pool, 64, worker_sleep_s=0.02)
        if any(index != 0 for index, _ in seen):
            break
    else:
        pytest.skip("no pool worker joined a loop in 50 tries (a busy machine)")
    ended = time.perf_counter()
    # the loop whose worker slept counted a stall (on a busy machine, as under CI's xdist
    # workers, a loop may count one more: a worker that waits for the GIL or a core)
    assert pool.nnvm_pool_stalls() >= before + 1
    after = run_loop(pool, 64)
    # the caller waited 20 ms on the worker's chunk: a loop within the cap's first 2 ms runs
    # on one thread
    if time.perf_counter() - ended < 0.0015:  # here 0.1 ms; a slow machine may take longer
        assert set(after) == {(0, 1)}
    time.sleep(0.3)  # longer than the longest cap
    assert {team for _, team in run_loop(pool, 64)} == {2}
