"""Remote against local timing of a bench model over loopback (issue 18): the same build runs
in this process and in an nnvm-rpc session; both are timed by the same loop
(nnvm.rpc.timing.time_run; remotely through time_evaluator, on the server), in interleaved
rounds, and the medians are compared. Reports numbers; asserts nothing.

    python -m bench.rpc [--model resnet18] [--threads 1] [--number 10] [--repeat 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def loopback_server(workdir: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """An nnvm-rpc server on loopback in a process of its own (its work dir and log under
    `workdir`); yields its (host, port)."""
    port_file = workdir / "port"
    log = (workdir / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nnvm.rpc.server", "--port", "0", "--port-file", str(port_file),
         "--work-dir", str(workdir / "work")],
        stderr=log,
        env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the RPC server did not start: {workdir / 'server.log'}")
            time.sleep(0.05)
        yield "127.0.0.1", int(port_file.read_text())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rpc")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)

    import nnvm
    from bench.models import MODELS
    from nnvm import rpc
    from nnvm.compiler import build
    from nnvm.frontend import from_onnx
    from nnvm.rpc.timing import time_run
    from nnvm.runtime import graph_runtime
    from nnvm.testing import onnx_models

    nnvm.set_num_threads(args.threads)
    model = MODELS[args.model]()
    start = time.perf_counter()
    module, params = from_onnx(model)
    graph, lib, params = build(module, target="llvm", params=params, opt_level=3)
    print(f"built {args.model} in {time.perf_counter() - start:.1f} s", flush=True)
    inputs = onnx_models.random_inputs(model, seed=0)

    tmp = Path(tempfile.mkdtemp(prefix="bench-rpc-"))
    lib.export_library(tmp / "libmodel.so")
    env = {**os.environ, "NNVM_NUM_THREADS": str(args.threads)}
    with loopback_server(tmp, env) as address:
        remote = rpc.connect(*address)
        remote.upload(tmp / "libmodel.so")
        rm = graph_runtime.create(graph, remote.load_module("libmodel.so"), remote.cpu(0))
        rm.set_input(**params)
        rm.set_input(**inputs)
        local = graph_runtime.create(graph, lib, nnvm.cpu(0))
        local.set_input(**params)
        local.set_input(**inputs)
        rm.run()
        local.run()
        np.testing.assert_allclose(rm.get_output(0), local.get_output(0), rtol=1e-5, atol=1e-6)
        evaluate = rm.time_evaluator(args.number, args.repeat, 0)
        local_ms: list[float] = []
        remote_ms: list[float] = []
        for _ in range(args.rounds):
            local_ms += [t * 1e3 for t in time_run(local.run, args.number, args.repeat).results]
            remote_ms += [t * 1e3 for t in evaluate().results]
        lm, rmed = statistics.median(local_ms), statistics.median(remote_ms)
        print(
            f"{args.model} threads={args.threads} number={args.number} "
            f"repeat={args.repeat} rounds={args.rounds}"
        )
        print(f"local  median {lm:.3f} ms (min {min(local_ms):.3f})")
        print(f"remote median {rmed:.3f} ms (min {min(remote_ms):.3f}) time_evaluator, loopback")
        print(f"remote / local = {rmed / lm:.3f} ({(rmed / lm - 1) * 100:+.1f}%)")
        remote.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
