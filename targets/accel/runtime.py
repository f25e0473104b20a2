"""The accelerator's device runtime: device buffers are host byte arrays, and a launch packs
the layer's operands into its DRAM image, runs the program on the cycle-level simulator
(bit-exact; simulator.py) and unpacks the int8 result. Each launch's cycle report is kept, so a
user sees what the offloaded layers would cost on the hardware (`reports`, `summary()`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.accel.conv2d_program import LayerPlan
from nnvm.targets.accel.kernel_blob import decode_plan
from nnvm.targets.accel.simulator import Report, simulate


@dataclass
class Launch:
    """One kernel run: which kernel (`plan(kernel)` has its layer) and its cycle report."""

    kernel: str
    report: Report


class AccelRuntime(DeviceRuntime):
    """One simulated accelerator: its buffers and the programs of one model library."""

    def __init__(self, lib):
        self.lib = lib
        self.memory: dict[int, np.ndarray] = {}
        self.plans: dict[str, tuple[LayerPlan, int]] = {}
        self.next_handle = 1
        self.reports: list[Launch] = []

    def alloc(self, nbytes: int) -> int:
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.memory[handle] = np.zeros(max(nbytes, 1), np.uint8)
        return handle

    def free(self, handle: int) -> None:
        self.memory.pop(handle, None)

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        self.memory[handle][: host.nbytes] = np.frombuffer(host, np.uint8)

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        np.frombuffer(host, np.uint8)[...] = self.memory[handle][: host.nbytes]

    def plan(self, kernel: str) -> tuple[LayerPlan, int]:
        """The kernel's plan and how many inputs it takes (decoded once)."""
        if kernel not in self.plans:
            self.plans[kernel] = decode_plan(self.lib.blob(kernel), kernel)
        return self.plans[kernel]

    def _array(self, handle: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        count = int(np.prod(shape)) * np.dtype(dtype).itemsize
        buf = self.memory[handle]
        if buf.nbytes < count:
            raise UserError(
                f"accel buffer {handle} holds {buf.nbytes} bytes, the layer reads {count}"
            )
        return buf[:count].view(dtype).reshape(shape)

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        plan, inputs = self.plan(kernel)
        if len(handles) != inputs + 1:
            raise UserError(
                f"accel kernel {kernel} takes {inputs} inputs and 1 output, got {len(handles)}"
            )
        L = plan.layer
        o = L.out_channels
        x = self._array(handles[0], "i1", (L.batch, L.in_channels, L.height, L.width))
        w = self._array(handles[1], "i1", (o, L.in_channels, L.kernel_h, L.kernel_w))
        per_channel = [self._array(h, "<i4", (o,)) for h in handles[2:inputs]]
        if inputs == 4:
            per_channel.insert(0, np.zeros(o, np.int32))
        bias, rounding, shifts = per_channel
        if shifts.min(initial=0) < 0 or shifts.max(initial=0) > 31:
            raise UserError(f"accel kernel {kernel}: requantization shifts must be in 0..31")
        total = (bias.astype(np.int64) + rounding).astype(np.int32)  # the ALU adds wrap
        dram = plan.pack(x, w, total, shifts.astype(np.int32))
        report = simulate(plan.cfg, plan.insns, dram)
        out = self._array(handles[inputs], "i1", (L.batch, o, L.out_height, L.out_width))
        out[...] = plan.output(dram)
        self.reports.append(Launch(kernel, report))

    def summary(self) -> dict:
        """Totals over every launch so far: cycles, GEMM-core busy cycles and utilisation,
        seconds at the configured clock, bytes moved per buffer."""
        cycles = sum(r.report.total_cycles for r in self.reports)
        gemm = sum(r.report.gemm_cycles for r in self.reports)
        moved: dict[str, int] = {}
        for r in self.reports:
            for k, v in r.report.bytes_moved.items():
                moved[k] = moved.get(k, 0) + v
        clock = next(iter(self.plans.values()))[0].cfg.clock_mhz if self.plans else 100
        return {
            "launches": len(self.reports),
            "cycles": cycles,
            "gemm_cycles": gemm,
            "gemm_utilization": gemm / cycles if cycles else 0.0,
            "seconds": cycles / (clock * 1e6),
            "bytes_moved": moved,
        }
