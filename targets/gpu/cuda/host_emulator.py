"""`cuda -emulate`: the CUDA target's kernels run on the host CPU, one thread after another, from
the same NVVM-flavoured LLVM IR the PTX is generated from, so the GPU lowering is checked against
numpy on machines without a GPU. Special-register reads become loads of host globals that a
generated grid loop sets before calling the kernel for each (block, thread), blocks outermost.

Serial threads are a legal schedule only for kernels without barriers; a kernel that
synchronizes its block (llvm.nvvm.barrier0) is refused. Races between threads go unnoticed."""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from nnvm.targets.gpu.cuda.blob import decode_blob
from nnvm.targets.gpu.launch_plan import Launch, LaunchPlan

ALIGNMENT = 256
"""cudaMalloc's alignment, so emulated buffers are aligned as device ones are."""
SREGS = [f"{r}.{d}" for r in ("tid", "ctaid", "ntid", "nctaid") for d in "xyz"]
_KERNEL = re.compile(r'define ptx_kernel void @"?([\w.$]+)"?\(([^)]*)\)')


def _grid_loop(name: str, n_args: int) -> str:
    """`void @"nnvm.emu.grid.<name>"(ptr x n_args, ptr %dims)`: calls the kernel once per
    thread of the launch whose six sizes (grid x, y, z, block x, y, z; i32) `%dims` points at."""
    params = ", ".join(f"ptr %a{k}" for k in range(n_args))
    args = ", ".join(f"ptr %a{k}" for k in range(n_args))
    lines = [f'define void @"nnvm.emu.grid.{name}"({params}{", " if n_args else ""}ptr %dims) {{']
    lines.append("entry:")
    for k, what in enumerate(("nctaid.x", "nctaid.y", "nctaid.z", "ntid.x", "ntid.y", "ntid.z")):
        lines.append(f"  %p{k} = getelementptr i32, ptr %dims, i64 {k}")
        lines.append(f"  %s{k} = load i32, ptr %p{k}")
        lines.append(f'  store i32 %s{k}, ptr @"nnvm.emu.{what}"')
        lines.append(f"  %w{k} = zext i32 %s{k} to i64")
    lines += [
        "  %threads.xy = mul i64 %w3, %w4",
        "  %threads = mul i64 %threads.xy, %w5",
        "  %blocks.xy = mul i64 %w0, %w1",
        "  %blocks = mul i64 %blocks.xy, %w2",
        "  %total = mul i64 %threads, %blocks",
        "  %empty = icmp eq i64 %total, 0",
        "  br i1 %empty, label %exit, label %loop",
        "loop:",
        "  %i = phi i64 [ 0, %entry ], [ %next, %loop ]",
        "  %t = urem i64 %i, %threads",
        "  %b = udiv i64 %i, %threads",
    ]
    for src, sizes, reg in (("t", ("w3", "w4"), "tid"), ("b", ("w0", "w1"), "ctaid")):
        lines += [
            f"  %{reg}.x = urem i64 %{src}, %{sizes[0]}",
            f"  %{reg}.r = udiv i64 %{src}, %{sizes[0]}",
            f"  %{reg}.y = urem i64 %{reg}.r, %{sizes[1]}",
            f"  %{reg}.z = udiv i64 %{reg}.r, %{sizes[1]}",
        ]
        for d in "xyz":
            lines.append(f"  %{reg}.{d}.32 = trunc i64 %{reg}.{d} to i32")
            lines.append(f'  store i32 %{reg}.{d}.32, ptr @"nnvm.emu.{reg}.{d}"')
    lines += [
        f'  call void @"{name}"({args})',
        "  %next = add i64 %i, 1",
        "  %done = icmp eq i64 %next, %total",
        "  br i1 %done, label %exit, label %loop",
        "exit:",
        "  ret void",
        "}",
    ]
    return "\n".join(lines)


def host_ir(nvvm_ir: str, triple: str) -> tuple[str, dict[str, int]]:
    """The kernels' LLVM IR rewritten for the host, plus a grid loop per kernel; returns the IR
    and each kernel's number of pointer arguments."""
    if "llvm.nvvm.barrier0" in nvvm_ir:
        raise UserError(
            "cuda -emulate runs threads one after another; a kernel with a block barrier "
            "cannot be emulated that way"
        )
    kernels = {
        m.group(1): len([a for a in m.group(2).split(",") if a.strip()])
        for m in _KERNEL.finditer(nvvm_ir)
    }
    text = nvvm_ir.replace('@"llvm.nvvm.read.ptx.sreg.', '@"nnvm.emu.sreg.')
    text = text.replace("define ptx_kernel ", "define ")
    text = re.sub(r'^target triple = ".*"$', f'target triple = "{triple}"', text, flags=re.M)
    text = re.sub(r'^target datalayout = ".*"$', "", text, flags=re.M)
    text = re.sub(r'^declare i32 @"nnvm\.emu\.sreg\.[\w.]+"\(\)\s*$', "", text, flags=re.M)
    out = [text]
    for reg in SREGS:
        out.append(f'@"nnvm.emu.{reg}" = internal global i32 0')
        out.append(
            f'define internal i32 @"nnvm.emu.sreg.{reg}"() {{\n'
            f'  %v = load i32, ptr @"nnvm.emu.{reg}"\n  ret i32 %v\n}}'
        )
    out += [_grid_loop(name, n) for name, n in kernels.items()]
    return "\n".join(out), kernels


@dataclass
class EmulatedKernel:
    plan: LaunchPlan
    grids: dict[str, Any]
    temps: list[np.ndarray]
    consts: list[np.ndarray]
    module: Any


class EmulatedCudaRuntime(DeviceRuntime):
    """Device memory is host memory (numpy byte arrays); each launch runs its grid loop."""

    def __init__(self, lib: Any):
        self.lib = lib
        self.buffers: dict[int, np.ndarray] = {}
        self.kernels: dict[str, EmulatedKernel] = {}
        self.launches = 0
        self.lock = threading.Lock()

    def alloc(self, nbytes: int) -> int:
        raw = np.zeros(max(nbytes, 1) + ALIGNMENT, np.uint8)
        start = (-raw.ctypes.data) % ALIGNMENT
        buf = raw[start : start + max(nbytes, 1)]
        self.buffers[buf.ctypes.data] = buf
        return buf.ctypes.data

    def free(self, handle: int) -> None:
        self.buffers.pop(handle, None)

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        self.buffers[handle][: host.nbytes] = np.frombuffer(host, np.uint8)

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        np.frombuffer(host, np.uint8)[...] = self.buffers[handle][: host.nbytes]

    def load(self, kernel: str) -> EmulatedKernel:
        found = self.kernels.get(kernel)
        if found is None:
            found = self.kernels[kernel] = load_emulated(self.lib.blob(kernel), kernel)
        return found

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        for h in handles:
            if h not in self.buffers:
                raise UserError(f"{kernel}: {h:#x} is not a buffer of this device")
        with self.lock:  # its kernels' special registers and temporaries serve every run
            run_plan(self.load(kernel), handles)
            self.launches += 1


def load_emulated(blob: bytes, kernel: str) -> EmulatedKernel:
    """JIT a blob's kernels for the host (the blob must come from `cuda -emulate`)."""
    from nnvm.targets.cpu.target import host_target
    from nnvm.targets.llvm.compile import compile_jit

    plan, _, _, nvvm_ir = decode_blob(blob)
    launches = [s for s in plan.steps if isinstance(s, Launch)]
    temps = [np.zeros(max(n, 1), np.uint8) for n in plan.temps]
    consts = [np.frombuffer(bytearray(c), np.uint8) for c in plan.consts]
    if not launches:
        return EmulatedKernel(plan, {}, temps, consts, None)
    if nvvm_ir is None:
        raise UserError(f"{kernel}: the blob has no LLVM IR (build it for 'cuda -emulate')")
    target = host_target()
    text, arity = host_ir(nvvm_ir, target.triple)
    module = compile_jit(text, target)
    grids = {}
    for step in launches:
        n = arity[step.kernel]
        ftype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n + 1)))
        grids[step.kernel] = ftype(module.address_of(f"nnvm.emu.grid.{step.kernel}"))
    return EmulatedKernel(plan, grids, temps, consts, module)


def run_plan(k: EmulatedKernel, handles: Sequence[int]) -> None:
    if len(handles) != k.plan.n_args:
        raise UserError(f"{len(handles)} buffers for {k.plan.n_args} kernel arguments")
    spaces = {
        "arg": list(handles),
        "temp": [t.ctypes.data for t in k.temps],
        "const": [c.ctypes.data for c in k.consts],
    }
    for step in k.plan.steps:
        if isinstance(step, Launch):
            ptrs = [spaces[kind][i] for kind, i in step.args]
            dims = np.array([*step.grid, *step.block], np.int32)
            k.grids[step.kernel](*ptrs, dims.ctypes.data)
        else:
            dst, src = (spaces[kind][i] for kind, i in (step.dst, step.src))
            ctypes.memmove(dst, src, step.nbytes)


__all__ = ["EmulatedCudaRuntime", "host_ir", "load_emulated"]
