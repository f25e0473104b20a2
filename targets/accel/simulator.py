"""The cycle-level simulator: fetch, load, compute and store modules run concurrently, each in
order from its own command queue, synchronised by dependency-token queues; each instruction's
effect is applied (machine.py) when it starts, so an order the tokens allow is the order run.

Routing: LOAD inp/wgt -> load; LOAD uop/acc, GEMM, ALU, FINISH -> compute; STORE -> store.
Token queues: load->compute and compute->load, compute->store and store->compute. `pop_prev`
waits for (and takes) a token from the previous module's queue, `pop_next` from the next one's;
`push_prev` / `push_next` give one back when the instruction ends. Costs (cycles.py) are a DMA
latency per row plus bytes over the bandwidth, one GEMM block or ALU vector per cycle per uop
iteration. Each module's DMA has the full bandwidth, or with SHARED_DMA the load, compute and
store DMAs hold one port in turn, whole instructions at a time (instruction fetch has its own)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig
from nnvm.targets.accel.cycles import gemm_cycles, insn_cycles, insn_dma_bytes
from nnvm.targets.accel.isa import Buffer, FinishInsn, GemmInsn, Insn, MemInsn
from nnvm.targets.accel.machine import Machine
from nnvm.targets.accel.printer import format_insn

MODULES = ("load", "compute", "store")
PREV_MODULE = {"load": None, "compute": "load", "store": "compute"}
NEXT_MODULE = {"load": "compute", "compute": "store", "store": None}


def module_of(insn: Insn) -> str:
    """The module that executes `insn`."""
    if isinstance(insn, MemInsn):
        if insn.store:
            return "store"
        return "load" if insn.buffer in (Buffer.INP, Buffer.WGT) else "compute"
    return "compute"


@dataclass
class Report:
    """What a run cost: cycles, per-module busy cycles, traffic and instruction counts."""

    total_cycles: int = 0
    busy: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("fetch", *MODULES), 0))
    gemm_cycles: int = 0
    """Cycles the GEMM core multiplies (GEMM instructions without reset)."""
    bytes_moved: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("insn", "uop", "inp", "wgt", "acc", "out"), 0)
    )
    counts: dict[str, int] = field(default_factory=dict)
    leftover_tokens: dict[str, int] = field(default_factory=dict)

    @property
    def gemm_utilization(self) -> float:
        return self.gemm_cycles / self.total_cycles if self.total_cycles else 0.0

    def seconds(self, cfg: AccelConfig) -> float:
        return self.total_cycles / (cfg.clock_mhz * 1e6)

    def format(self) -> str:
        lines = [
            f"cycles {self.total_cycles}  gemm utilization {self.gemm_utilization:.1%}",
            "busy " + "  ".join(f"{m} {c}" for m, c in self.busy.items()),
            "bytes " + "  ".join(f"{b} {n}" for b, n in self.bytes_moved.items()),
            "insns " + "  ".join(f"{k} {n}" for k, n in sorted(self.counts.items())),
        ]
        return "\n".join(lines) + "\n"


def _token_queues(module: str, insn: Insn, index: int) -> tuple[list[str], list[str]]:
    """(queues popped, queues pushed) by `insn` on `module`, named 'src->dst'."""
    pops, pushes = [], []
    for flag, other, pop in (
        ("pop_prev", PREV_MODULE[module], True),
        ("pop_next", NEXT_MODULE[module], True),
        ("push_prev", PREV_MODULE[module], False),
        ("push_next", NEXT_MODULE[module], False),
    ):
        if getattr(insn, flag):
            if other is None:
                raise UserError(
                    f"instruction {index} ({format_insn(insn)}): {flag} on the {module} module, "
                    f"which has no {'previous' if 'prev' in flag else 'next'} module"
                )
            (pops if pop else pushes).append(f"{other}->{module}" if pop else f"{module}->{other}")
    return pops, pushes


def simulate(cfg: AccelConfig, insns: list[Insn], dram: np.ndarray | None) -> Report:
    """Run `insns` on `dram` (modified in place: STOREs land there); the cycle report. With
    no `dram`, only the cycle model runs (what the tuner measures: the timing of a stream
    does not depend on its data)."""
    machine = Machine(cfg, dram) if dram is not None else None
    n = len(insns)
    finish = [k for k, insn in enumerate(insns) if isinstance(insn, FinishInsn)]
    if not finish:
        raise UserError("the instruction stream has no FINISH")
    if finish[0] != n - 1:
        raise UserError(f"instruction {finish[0]} is a FINISH before the end of the stream")
    route = [module_of(insn) for insn in insns]
    tokens = [
        _token_queues(m, insn, k) for k, (m, insn) in enumerate(zip(route, insns, strict=True))
    ]
    report = Report()
    fetch_cost = -(-16 // cfg.dma_bytes_per_cycle)
    queues: dict[str, deque[tuple[int, int]]] = {m: deque() for m in MODULES}
    token_times: dict[str, deque[int]] = {
        q: deque() for q in ("load->compute", "compute->load", "compute->store", "store->compute")
    }
    free = dict.fromkeys(MODULES, 0)
    fetched, fetch_time, done = 0, cfg.dma_row_latency, 0
    port_free = 0  # SHARED_DMA: when the one DRAM port is next free
    while done < n:
        best: tuple[int, int, str] | None = None  # (time, priority, who)
        if fetched < n and len(queues[route[fetched]]) < cfg.cmd_queue_depth:
            best = (fetch_time + fetch_cost, 0, "fetch")
        for prio, m in enumerate(MODULES, 1):
            if not queues[m]:
                continue
            k, arrived = queues[m][0]
            pops = tokens[k][0]
            if any(not token_times[q] for q in pops):
                continue
            start = max([free[m], arrived, *(token_times[q][0] for q in pops)])
            if cfg.shared_dma and isinstance(insns[k], MemInsn):
                start = max(start, port_free)
            if best is None or (start, prio) < best[:2]:
                best = (start, prio, m)
        if best is None:
            raise UserError(_deadlock(insns, queues, tokens, token_times, fetched, route, cfg))
        time, _, who = best
        if who == "fetch":
            fetch_time = time
            queues[route[fetched]].append((fetched, time))
            report.busy["fetch"] += fetch_cost
            report.bytes_moved["insn"] += 16
            fetched += 1
            continue
        if fetched < n and route[fetched] == who and len(queues[who]) >= cfg.cmd_queue_depth:
            fetch_time = max(fetch_time, time)  # the stalled fetch resumes once a slot frees
        k, _ = queues[who].popleft()
        insn = insns[k]
        pops, pushes = tokens[k]
        for q in pops:
            token_times[q].popleft()
        if machine is not None:
            machine.execute(insn, k)
        cost = insn_cycles(cfg, insn)
        free[who] = time + cost
        if cfg.shared_dma and isinstance(insn, MemInsn):
            port_free = time + cost
        for q in pushes:
            token_times[q].append(time + cost)
        report.busy[who] += cost
        if isinstance(insn, GemmInsn):
            report.gemm_cycles += gemm_cycles(insn)
        if isinstance(insn, MemInsn):
            report.bytes_moved[insn.buffer.name.lower()] += insn_dma_bytes(cfg, insn)
        name = type(insn).__name__.removesuffix("Insn").upper()
        if isinstance(insn, MemInsn):
            name = ("STORE " if insn.store else "LOAD ") + insn.buffer.name.lower()
        report.counts[name] = report.counts.get(name, 0) + 1
        report.total_cycles = max(report.total_cycles, time + cost)
        done += 1
    report.leftover_tokens = {q: len(t) for q, t in token_times.items() if t}
    return report


def _deadlock(insns, queues, tokens, token_times, fetched, route, cfg) -> str:
    """Name what every module waits for when nothing can move."""
    waits = []
    for m in MODULES:
        if queues[m]:
            k, _ = queues[m][0]
            missing = [q for q in tokens[k][0] if not token_times[q]]
            waits.append(
                f"{m} waits at instruction {k} ({format_insn(insns[k])}) for a token on "
                f"{' and '.join(missing)}"
            )
    if fetched < len(insns):
        waits.append(
            f"fetch is stalled at instruction {fetched}: the {route[fetched]} command queue is "
            f"full ({cfg.cmd_queue_depth} entries)"
        )
    return "token deadlock: no token those waits need will ever be pushed: " + "; ".join(waits)
