"""Measuring on a remote device over nnvm.rpc (AutoTVM's RPC runner): each candidate's kernel
object, built here, is linked into a one-kernel model library (its arguments are the graph's
inputs and outputs), uploaded to the server, run once and checked against the reference
executor's outputs, then timed by the server's `time_evaluator`. A session that dies (the
kernel crashed the server's session process) is a "crash" trial, and the next candidate gets
a new session."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from nnvm.rpc.errors import RPCError, RPCSessionCrashed, RPCTimeoutError
from nnvm.runtime import graph_runtime
from nnvm.support.errors import UserError
from nnvm.support.executor_graph import ExecutorGraph, Node, Ref, TensorInfo
from nnvm.tune.measure import RunJob, RunResult, check_outputs
from nnvm.tune.runner import MeasureOptions, Runner


def one_kernel_graph(job: RunJob) -> ExecutorGraph:
    """An executor graph that calls the job's kernel once, on graph inputs into graph outputs."""
    infos = [
        TensorInfo(list(s), np.dtype(d).name) for s, d in zip(job.shapes, job.dtypes, strict=True)
    ]
    ins, outs = infos[: job.n_inputs], infos[job.n_inputs :]
    graph = ExecutorGraph(
        inputs=[{"name": f"a{k}", "shape": i.shape, "dtype": i.dtype} for k, i in enumerate(ins)],
        outputs=outs,
        params=[],
        constants={},
        nodes=[
            Node(
                job.name,
                [Ref("input", k) for k in range(len(ins))],
                [Ref("output", k) for k in range(len(outs))],
                ins,
                outs,
            )
        ],
        copies=[],
        arena_bytes=0,
        naive_bytes=0,
        kernels=[job.name],
    )
    graph.target = job.target.description
    graph.model_hash = hashlib.sha256(job.obj).hexdigest()[:32]
    return graph


class RPCRunner(Runner):
    """Times candidates on the nnvm-rpc server at `address` ("host:port")."""

    def __init__(
        self,
        address: str,
        options: MeasureOptions | None = None,
        token: str | None = None,
        tls=None,
    ):
        super().__init__(options)
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise UserError(f"an RPC address is HOST:PORT, not {address!r}")
        self.host, self.port, self.token, self.tls = host, int(port), token, tls
        self.session = self._connect()  # an unreachable server fails here, before tuning
        self.workdir = Path(tempfile.mkdtemp(prefix="nnvm-tune-rpc-"))

    def _connect(self):
        from nnvm.rpc.client import connect

        try:
            return connect(self.host, self.port, token=self.token, tls=self.tls)
        except RPCError as err:
            raise UserError(
                f"cannot reach the RPC server at {self.host}:{self.port}: {err}"
            ) from None

    def run(self, jobs: Sequence[RunJob]) -> list[RunResult]:
        """Each job in turn on the server; the next candidate's library is linked here while
        the server runs this one."""
        out = []
        with ThreadPoolExecutor(1) as linker:
            linking = [linker.submit(self._link, job, f"cand{k}.so") for k, job in enumerate(jobs)]
            for job, linked in zip(jobs, linking, strict=True):
                try:
                    graph, lib = linked.result()
                except UserError as err:  # the toolchain refused the candidate's library
                    out.append(RunResult([], "build", f"link: {err.message}"))
                    continue
                try:
                    out.append(self._measure(job, graph, lib))
                except (RPCSessionCrashed, RPCTimeoutError) as err:
                    code = "timeout" if isinstance(err, RPCTimeoutError) else "crash"
                    out.append(RunResult([], code, f"rpc: {err}"))
                    self._reopen()
                except RPCError as err:
                    out.append(RunResult([], "run", f"rpc: {err}"))
                    self._reopen()
                finally:
                    lib.unlink(missing_ok=True)
        return out

    def _link(self, job: RunJob, name: str) -> tuple[ExecutorGraph, Path]:
        graph = one_kernel_graph(job)
        return graph, job.target.link(graph, [job.obj], self.workdir / name, {})

    def _reopen(self) -> None:
        try:
            self.session.close()
        except Exception:  # noqa: BLE001 - the old session is gone either way
            pass
        self.session = self._connect()

    def _measure(self, job: RunJob, graph: ExecutorGraph, lib: Path) -> RunResult:
        name = lib.name
        self.session.upload(lib, name)
        try:
            rlib = self.session.load_module(name)
            m = graph_runtime.create(graph, rlib, self.session.cpu(0))
            for k, x in enumerate(job.inputs):
                m.set_input(f"a{k}", x)
            m.run()
            if job.expected is not None:
                outs = [m.get_output(k) for k in range(len(job.expected))]
                wrong = check_outputs(job, outs)
                if wrong is not None:
                    return wrong
            timing = m.time_evaluator(
                number=1, repeat=job.repeat, min_repeat_ms=job.min_round_s * 1e3
            )()
            return RunResult(list(timing.results))
        finally:
            self.session.remove(name)

    def close(self) -> None:
        super().close()
        import shutil

        self.session.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
