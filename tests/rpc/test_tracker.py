"""The tracker: a server registers under its key, a client's request gets it, and a run whose
server dies mid-call is retried on the server that comes back (re-registered)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nnvm import rpc
from nnvm.rpc.tracker import connect_tracker, start_tracker
from nnvm.runtime import graph_runtime


def _wait_for(tracker, count: int) -> list[dict]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        servers = tracker.summary()["servers"]
        if len(servers) == count:
            return servers
        time.sleep(0.1)
    raise AssertionError(f"tracker lists {tracker.summary()} not {count} servers")


def test_a_run_survives_a_server_restart(server_factory, model):
    graph, _lib, params, inputs, path = model
    tracked = start_tracker()
    host, port = tracked.server_address[:2]
    tracker = connect_tracker(host, port)
    first = server_factory("--tracker", f"{host}:{port}", "--key", "board")
    _wait_for(tracker, 1)
    attempts = []
    servers = [first]

    def measure(remote):
        attempts.append(remote)
        remote.upload(path)
        m = graph_runtime.create(graph, remote.load_module("mylib.so"), remote.cpu(0))
        m.set_input(**params)
        if len(attempts) == 1:  # the board restarts in the middle of the first measurement
            servers[0].proc.kill()
            servers[0].proc.wait()
            servers.append(server_factory("--tracker", f"{host}:{port}", "--key", "board"))
        m.run(**inputs)
        return m.get_output(0)

    out = tracker.run("board", measure, retries=3, timeout=30)
    local = graph_runtime.create(graph, model[1])
    local.set_input(**params)
    local.run(**inputs)
    np.testing.assert_array_equal(out, local.get_output(0))
    assert len(attempts) >= 2
    listed = _wait_for(tracker, 1)
    assert listed[0]["port"] == servers[-1].port and not listed[0]["busy"]
    tracked.shutdown()


def test_request_for_an_unknown_key_times_out(server_factory):
    tracked = start_tracker()
    tracker = connect_tracker(*tracked.server_address[:2])
    with pytest.raises(rpc.RPCTimeoutError, match="no free server"):
        tracker.request("nope", timeout=0.5)
    tracked.shutdown()


def test_a_held_server_is_not_handed_out_twice(server_factory):
    tracked = start_tracker()
    host, port = tracked.server_address[:2]
    tracker = connect_tracker(host, port)
    server_factory("--tracker", f"{host}:{port}", "--key", "one")
    _wait_for(tracker, 1)
    held = tracker.request("one", timeout=10)
    with pytest.raises(rpc.RPCTimeoutError):
        tracker.request("one", timeout=0.5)
    held.close()
    again = tracker.request("one", timeout=10)
    assert again.listdir() == []
    again.close()
    tracked.shutdown()
