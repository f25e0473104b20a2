"""`cuda -emulate`: the CUDA target's kernels run on the host CPU, one thread after another, from
the same NVVM-flavoured LLVM IR the PTX is generated from, so the GPU lowering is checked against
numpy on machines without a GPU. Special-register reads become loads of host globals that a
generated grid loop sets before calling the kernel for each (block, thread), blocks outermost.

A kernel that synchronizes its block (llvm.nvvm.barrier0, around shared-memory copies) runs
each block's threads as host threads instead, blocks one after another: the thread index comes
from a per-thread callback, the barrier is a `threading.Barrier` of the block, and the block's
shared buffers (addrspace(3) globals in the device IR) are plain host globals, valid since one
block runs at a time. A thread that ends while others still wait at a barrier breaks it, and the
launch is a UserError (a barrier not every thread reaches would hang or race on a GPU). Races
between threads go unnoticed."""

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


def _threaded_hooks() -> list[str]:
    """Host IR of a barrier kernel's hooks: thread indices and the barrier call back into the
    emulator (function pointers `nnvm.emu.hooks` installs); `nnvm.emu.setblock(ptr)` sets the
    grid, block and block-index registers (nine i32) before a block's threads start."""
    out = [
        '@"nnvm.emu.hook.tid" = internal global ptr null',
        '@"nnvm.emu.hook.barrier" = internal global ptr null',
        'define void @"nnvm.emu.hooks"(ptr %tid, ptr %barrier) {\n'
        '  store ptr %tid, ptr @"nnvm.emu.hook.tid"\n'
        '  store ptr %barrier, ptr @"nnvm.emu.hook.barrier"\n  ret void\n}',
        'define internal void @"nnvm.emu.barrier"() {\n'
        '  %f = load ptr, ptr @"nnvm.emu.hook.barrier"\n  call void %f()\n  ret void\n}',
    ]
    lines = ['define void @"nnvm.emu.setblock"(ptr %dims) {']
    for k, reg in enumerate(("nctaid", "ntid", "ctaid")):
        for j, d in enumerate("xyz"):
            lines.append(f"  %p{k}{d} = getelementptr i32, ptr %dims, i64 {3 * k + j}")
            lines.append(f"  %v{k}{d} = load i32, ptr %p{k}{d}")
            lines.append(f'  store i32 %v{k}{d}, ptr @"nnvm.emu.{reg}.{d}"')
    out.append("\n".join([*lines, "  ret void", "}"]))
    return out


def host_ir(nvvm_ir: str, triple: str) -> tuple[str, dict[str, int], bool]:
    """The kernels' LLVM IR rewritten for the host, plus a grid loop per kernel (or, when a
    kernel has a barrier, the threaded hooks); returns the IR, each kernel's number of pointer
    arguments, and whether the kernels run threaded."""
    threaded = "llvm.nvvm.barrier0" in nvvm_ir
    kernels = {
        m.group(1): len([a for a in m.group(2).split(",") if a.strip()])
        for m in _KERNEL.finditer(nvvm_ir)
    }
    text = nvvm_ir.replace('@"llvm.nvvm.read.ptx.sreg.', '@"nnvm.emu.sreg.')
    text = text.replace("define ptx_kernel ", "define ")
    text = re.sub(r'^target triple = ".*"$', f'target triple = "{triple}"', text, flags=re.M)
    text = re.sub(r'^target datalayout = ".*"$', "", text, flags=re.M)
    text = re.sub(r'^declare i32 @"nnvm\.emu\.sreg\.[\w.]+"\(\)\s*$', "", text, flags=re.M)
    # shared buffers: plain host globals (one block runs at a time)
    text = re.sub(r"addrspacecast \(ptr addrspace\(3\) (@\S+) to ptr\)", r"\1", text)
    text = re.sub(
        r"= internal addrspace\(3\) global (.*) undef",
        r"= internal global \1 zeroinitializer",
        text,
    )
    out = [text]
    if threaded:
        out[0] = re.sub(r"^declare void @\"?llvm\.nvvm\.barrier0\"?\(\).*$", "", text, flags=re.M)
        out[0] = re.sub(r'@"?llvm\.nvvm\.barrier0"?', '@"nnvm.emu.barrier"', out[0])
        out += _threaded_hooks()
    for reg in SREGS:
        out.append(f'@"nnvm.emu.{reg}" = internal global i32 0')
        if threaded and reg.startswith("tid."):
            out.append(
                f'define internal i32 @"nnvm.emu.sreg.{reg}"() {{\n'
                '  %f = load ptr, ptr @"nnvm.emu.hook.tid"\n'
                f"  %v = call i32 %f(i32 {'xyz'.index(reg[-1])})\n  ret i32 %v\n}}"
            )
        else:
            out.append(
                f'define internal i32 @"nnvm.emu.sreg.{reg}"() {{\n'
                f'  %v = load i32, ptr @"nnvm.emu.{reg}"\n  ret i32 %v\n}}'
            )
    if not threaded:
        out += [_grid_loop(name, n) for name, n in kernels.items()]
    return "\n".join(out), kernels, threaded


class BlockBarrier:
    """A block's barrier for its host threads that notices divergence: a thread arriving after
    another has ended, or ending while others wait, breaks it (they could never all arrive)."""

    def __init__(self, n: int):
        self.n = n
        self.cond = threading.Condition()
        self.arrived = 0
        self.generation = 0
        self.ended = 0
        self.broken = False

    def wait(self) -> None:
        with self.cond:
            if self.ended or self.broken:
                self.broken = True
                self.cond.notify_all()
                return
            generation = self.generation
            self.arrived += 1
            if self.arrived == self.n:
                self.arrived = 0
                self.generation += 1
                self.cond.notify_all()
                return
            while self.generation == generation and not self.broken:
                self.cond.wait()

    def end(self) -> None:
        with self.cond:
            self.ended += 1
            if self.arrived:
                self.broken = True
                self.cond.notify_all()


class BlockThreads:
    """One block at a time as host threads: the callbacks the threaded hooks call (the thread's
    index, the block's barrier) and the launch that starts and joins the threads."""

    def __init__(self, module: Any):
        self.local = threading.local()
        self.barrier = BlockBarrier(1)
        self._tid = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(self._thread_index)
        self._bar = ctypes.CFUNCTYPE(None)(self._wait)
        hooks = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
            module.address_of("nnvm.emu.hooks")
        )
        hooks(ctypes.cast(self._tid, ctypes.c_void_p), ctypes.cast(self._bar, ctypes.c_void_p))
        self._setblock = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            module.address_of("nnvm.emu.setblock")
        )

    def _thread_index(self, d: int) -> int:
        return self.local.tid[d]

    def _wait(self) -> None:
        self.barrier.wait()

    def launch(
        self, kernel: Any, name: str, grid: Sequence[int], block: Sequence[int], ptrs: list[int]
    ) -> None:
        n = block[0] * block[1] * block[2]
        for b in range(grid[0] * grid[1] * grid[2]):
            ctaid = (b % grid[0], b // grid[0] % grid[1], b // (grid[0] * grid[1]))
            dims = np.array([*grid, *block, *ctaid], np.int32)
            self._setblock(dims.ctypes.data)
            barrier = self.barrier = BlockBarrier(n)

            def run(t: int, barrier: BlockBarrier = barrier) -> None:
                self.local.tid = (
                    t % block[0],
                    t // block[0] % block[1],
                    t // (block[0] * block[1]),
                )
                try:
                    kernel(*ptrs)
                finally:
                    barrier.end()

            threads = [threading.Thread(target=run, args=(t,)) for t in range(n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if barrier.broken:
                raise UserError(
                    f"{name}: block {ctaid} has a barrier that not all of its {n} threads "
                    "reach (cuda -emulate)"
                )


@dataclass
class EmulatedKernel:
    plan: LaunchPlan
    grids: dict[str, Any]
    """Per kernel: its grid loop (serial threads), or with `threads` the kernel itself."""
    temps: list[np.ndarray]
    consts: list[np.ndarray]
    module: Any
    threads: BlockThreads | None = None


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
    text, arity, threaded = host_ir(nvvm_ir, target.triple)
    module = compile_jit(text, target)
    grids = {}
    for step in launches:
        n = arity[step.kernel]
        if threaded:
            ftype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))
            grids[step.kernel] = ftype(module.address_of(step.kernel))
        else:
            ftype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n + 1)))
            grids[step.kernel] = ftype(module.address_of(f"nnvm.emu.grid.{step.kernel}"))
    threads = BlockThreads(module) if threaded else None
    return EmulatedKernel(plan, grids, temps, consts, module, threads)


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
            if k.threads is not None:
                k.threads.launch(k.grids[step.kernel], step.kernel, step.grid, step.block, ptrs)
                continue
            dims = np.array([*step.grid, *step.block], np.int32)
            k.grids[step.kernel](*ptrs, dims.ctypes.data)
        else:
            dst, src = (spaces[kind][i] for kind, i in (step.dst, step.src))
            ctypes.memmove(dst, src, step.nbytes)


__all__ = ["EmulatedCudaRuntime", "host_ir", "load_emulated"]
