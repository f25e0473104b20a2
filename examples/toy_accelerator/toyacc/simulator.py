"""The accelerator's runtime: device buffers are numpy byte arrays, and a kernel's program (its
toyacc IR) is interpreted op by op, the matmul tile by tile on the 16x16 GEMM core, counting
what the hardware would do."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from nnvm.support.errors import UserError
from nnvm.support.target import DeviceRuntime
from toyacc.dialect import TILE, AddOp, BiasAddOp, MatmulOp, ReluOp

STATS = {"launches": 0, "gemm_tiles": 0, "alu_ops": 0, "bytes_in": 0, "bytes_out": 0}


def matmul_tiled(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[M, K] @ b[K, N] as the GEMM core does it: zero-padded 16x16 blocks of b, one row of a
    per instruction, f32 accumulators."""
    m, k = a.shape
    n = b.shape[1]
    kp, np_ = -(-k // TILE) * TILE, -(-n // TILE) * TILE
    a_pad = np.zeros((m, kp), np.float32)
    a_pad[:, :k] = a
    b_pad = np.zeros((kp, np_), np.float32)
    b_pad[:k, :n] = b
    acc = np.zeros((m, np_), np.float32)
    for jo, ko in itertools.product(range(np_ // TILE), range(kp // TILE)):
        cols, depth = slice(jo * TILE, (jo + 1) * TILE), slice(ko * TILE, (ko + 1) * TILE)
        acc[:, cols] += a_pad[:, depth] @ b_pad[depth, cols]
        STATS["gemm_tiles"] += m
    return acc[:, :n]


def run_program(fn: func.FuncOp, args: list[np.ndarray]) -> list[np.ndarray]:
    values = dict(zip(fn.body.block.args, args, strict=True))
    for op in fn.body.block.ops:
        if isinstance(op, MatmulOp):
            a, b = values[op.lhs], values[op.rhs]
            b = b.T if op.transpose_rhs is not None else b
            rows = matmul_tiled(a.reshape(-1, a.shape[-1]), b)
            values[op.result] = rows.reshape(*a.shape[:-1], b.shape[1])
        elif isinstance(op, AddOp):
            values[op.result] = values[op.lhs] + values[op.rhs]
            STATS["alu_ops"] += 1
        elif isinstance(op, BiasAddOp):
            values[op.result] = values[op.data] + values[op.bias]
            STATS["alu_ops"] += 1
        elif isinstance(op, ReluOp):
            values[op.result] = np.maximum(values[op.data], np.float32(0))
            STATS["alu_ops"] += 1
        elif isinstance(op, func.ReturnOp):
            return [values[v] for v in op.operands]
        else:
            raise UserError(f"toyacc cannot execute {op.name}")
    raise UserError("toyacc program has no return")


class Simulator(DeviceRuntime):
    """One device: its memory, and the programs of one model library."""

    def __init__(self, lib):
        self.lib = lib
        self.memory: dict[int, np.ndarray] = {}
        self.programs: dict[str, func.FuncOp] = {}
        self.next_handle = 1

    def alloc(self, nbytes: int) -> int:
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.memory[handle] = np.zeros(nbytes, np.uint8)
        return handle

    def free(self, handle: int) -> None:
        self.memory.pop(handle, None)

    def copy_to_device(self, handle: int, host: memoryview) -> None:
        self.memory[handle][: host.nbytes] = np.frombuffer(host, np.uint8)
        STATS["bytes_in"] += host.nbytes

    def copy_from_device(self, host: memoryview, handle: int) -> None:
        np.frombuffer(host, np.uint8)[...] = self.memory[handle][: host.nbytes]
        STATS["bytes_out"] += host.nbytes

    def _program(self, kernel: str) -> func.FuncOp:
        if kernel not in self.programs:
            from nnvm.registry import make_context
            from nnvm.support.diagnostics import parse_module

            text = self.lib.blob(kernel).decode()
            module: ModuleOp = parse_module(make_context(), text, kernel)
            self.programs[kernel] = next(f for f in module.ops if isinstance(f, func.FuncOp))
        return self.programs[kernel]

    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        fn = self._program(kernel)
        types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
        arrays = []
        for h, t in zip(handles, types, strict=True):
            assert isinstance(t, TensorType)
            count = int(np.prod(t.get_shape()))
            arrays.append(self.memory[h][: count * 4].view(np.float32).reshape(t.get_shape()))
        n_in = len(fn.function_type.inputs.data)
        for out, value in zip(arrays[n_in:], run_program(fn, arrays[:n_in]), strict=True):
            out[...] = value
        STATS["launches"] += 1
