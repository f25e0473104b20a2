"""What the host side of a lowered GPU kernel does, as data the device runtime replays: the
temporaries it allocates, the constants it reads, and in order each gpu.launch_func (kernel,
grid, block, buffers) and memref.copy.

A buffer is ("arg", k) for the kernel's k-th argument (inputs, then outputs), ("temp", k) for
its k-th temporary or ("const", k) for its k-th constant. The host function may do nothing else
(GpuTarget outlines every root stage); anything else is a located error."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import SSAValue

from nnvm.lowering.errors import LoweringError
from nnvm.lowering.to_llvm.llvm_builder import byte_size
from nnvm.support.errors import UserError

Buffer = tuple[str, int]


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    buffers: tuple[Buffer, ...]


@dataclass(frozen=True)
class Copy:
    source: Buffer
    dest: Buffer
    nbytes: int


Step = Launch | Copy


@dataclass(frozen=True)
class LaunchPlan:
    n_args: int
    temps: tuple[int, ...]
    """Bytes of each temporary."""
    consts: tuple[bytes, ...]
    """Contents of each constant buffer (the kernel's folded te constants)."""
    steps: tuple[Step, ...]

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(s for s in self.steps if isinstance(s, Launch))

    def to_json(self) -> dict:
        steps: list[dict] = []
        for x in self.steps:
            if isinstance(x, Launch):
                steps.append(
                    {
                        "kernel": x.kernel,
                        "grid": list(x.grid),
                        "block": list(x.block),
                        "buffers": [list(b) for b in x.buffers],
                    }
                )
            else:
                steps.append({"copy": [list(x.source), list(x.dest)], "nbytes": x.nbytes})
        return {
            "n_args": self.n_args,
            "temps": list(self.temps),
            "consts": [base64.b64encode(c).decode() for c in self.consts],
            "steps": steps,
        }

    @classmethod
    def from_json(cls, data: dict) -> LaunchPlan:
        steps: list[Step] = []
        for x in data["steps"]:
            if "copy" in x:
                src, dst = (_buffer(b) for b in x["copy"])
                steps.append(Copy(src, dst, int(x["nbytes"])))
            else:
                steps.append(
                    Launch(
                        str(x["kernel"]),
                        tuple(int(n) for n in x["grid"]),  # type: ignore[arg-type]
                        tuple(int(n) for n in x["block"]),  # type: ignore[arg-type]
                        tuple(_buffer(b) for b in x["buffers"]),
                    )
                )
        return cls(
            int(data["n_args"]),
            tuple(int(t) for t in data["temps"]),
            tuple(base64.b64decode(c) for c in data["consts"]),
            tuple(steps),
        )


def _buffer(b: list) -> Buffer:
    kind, index = b
    if kind not in ("arg", "temp", "const"):
        raise ValueError(f"buffer kind {kind!r}")
    return (str(kind), int(index))


def _nbytes(t: MemRefType, op) -> int:
    if not t.has_static_shape():
        raise LoweringError(op, "a GPU kernel's buffers must have static shapes")
    count = 1
    for d in t.get_shape():
        count *= d
    return count * byte_size(t.element_type)


def _global_bytes(module: ModuleOp, op: memref.GetGlobalOp) -> bytes:
    name = op.name_.root_reference.data
    for g in module.ops:
        if isinstance(g, memref.GlobalOp) and g.sym_name.data == name:
            init = g.initial_value
            t = g.type
            if not isinstance(init, DenseIntOrFPElementsAttr):
                return bytes(_nbytes(t, op))
            values = np.asarray(list(init.get_values()))
            dtype = DTYPES.get(str(t.element_type))
            if dtype is None:
                raise LoweringError(op, f"a GPU constant of {t.element_type} is not supported")
            count = _nbytes(t, op) // np.dtype(dtype).itemsize
            return np.broadcast_to(values.astype(dtype), (count,)).tobytes()
    raise LoweringError(op, f"no memref.global @{name} for the GPU kernel's constant")


DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "index": np.int64,
}


def _host_function(module: ModuleOp, name: str) -> func.FuncOp:
    fns = [f for f in module.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
    for f in fns:
        if f.sym_name.data == name:
            return f
    if len(fns) == 1:
        return fns[0]
    raise UserError(f"no host function '{name}' in the lowered GPU kernel")


def launch_plan(module: ModuleOp, name: str) -> LaunchPlan:
    """The plan of host function `name` (or the module's only function)."""
    fn = _host_function(module, name)
    buffers: dict[SSAValue, Buffer] = {a: ("arg", k) for k, a in enumerate(fn.body.block.args)}
    consts: dict[SSAValue, int] = {}
    temps: list[int] = []
    data: list[bytes] = []
    steps: list[Step] = []
    for op in fn.body.block.ops:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            consts[op.result] = op.value.value.data
        elif isinstance(op, memref.AllocOp | memref.AllocaOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            buffers[op.memref] = ("temp", len(temps))
            temps.append(max(_nbytes(t, op), 1))
        elif isinstance(op, memref.GetGlobalOp):
            buffers[op.memref] = ("const", len(data))
            data.append(_global_bytes(module, op))
        elif isinstance(op, gpu.LaunchFuncOp):
            sizes = []
            for v in (
                op.gridSizeX,
                op.gridSizeY,
                op.gridSizeZ,
                op.blockSizeX,
                op.blockSizeY,
                op.blockSizeZ,
            ):
                if v not in consts:
                    raise LoweringError(
                        op, "gpu.launch_func with a grid or block size not constant"
                    )
                sizes.append(consts[v])
            refs = [_known(buffers, v, op) for v in op.kernelOperands]
            kernel = op.kernel.nested_references.data[-1].data
            steps.append(Launch(kernel, tuple(sizes[:3]), tuple(sizes[3:]), tuple(refs)))  # type: ignore[arg-type]
        elif isinstance(op, memref.CopyOp):
            t = op.source.type
            assert isinstance(t, MemRefType)
            src, dst = _known(buffers, op.source, op), _known(buffers, op.destination, op)
            steps.append(Copy(src, dst, _nbytes(t, op)))
        elif isinstance(op, memref.DeallocOp | func.ReturnOp):
            continue
        else:
            raise LoweringError(
                op,
                f"{op.name} in the host part of a GPU kernel (only allocations, constants, "
                "copies and launches can run there)",
            )
    return LaunchPlan(len(fn.body.block.args), tuple(temps), tuple(data), tuple(steps))


def _known(buffers: dict[SSAValue, Buffer], v: SSAValue, op) -> Buffer:
    if v not in buffers:
        raise LoweringError(op, f"{op.name} uses {v.type}, which is not a whole device buffer")
    return buffers[v]


def encode_blob(plan: LaunchPlan, ptx: str, arch: str, llvm_ir: str | None = None) -> bytes:
    """One kernel's device artifact (JSON): the plan, its PTX, and for `cuda -emulate` the
    LLVM IR the PTX came from."""
    data = {"format": "nnvm-cuda/1", "arch": arch, "plan": plan.to_json(), "ptx": ptx}
    if llvm_ir is not None:
        data["llvm_ir"] = llvm_ir
    return json.dumps(data).encode()


def decode_blob(blob: bytes) -> tuple[LaunchPlan, str, str]:
    """(plan, PTX, arch) of a blob from encode_blob."""
    try:
        data = json.loads(blob.decode())
        if data.get("format") != "nnvm-cuda/1":
            raise ValueError(data.get("format"))
        return LaunchPlan.from_json(data["plan"]), str(data["ptx"]), str(data["arch"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise UserError(f"not a CUDA kernel blob of this nnvm ({err})") from None


__all__ = ["Copy", "Launch", "LaunchPlan", "decode_blob", "encode_blob", "launch_plan"]
