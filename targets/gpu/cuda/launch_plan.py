"""What the host side of a lowered GPU kernel does, as data the device runtime replays: the
temporaries it allocates and each gpu.launch_func (kernel, grid, block, buffers).

A buffer is ("arg", k) for the kernel's k-th argument (inputs, then outputs) or ("temp", k) for
its k-th temporary. The host function may only allocate, launch and return (GpuTarget outlines
every root stage); anything else is a located error."""

from __future__ import annotations

import json
from dataclasses import dataclass

from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
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
class LaunchPlan:
    n_args: int
    temps: tuple[int, ...]
    """Bytes of each temporary."""
    launches: tuple[Launch, ...]

    def to_json(self) -> dict:
        return {
            "n_args": self.n_args,
            "temps": list(self.temps),
            "launches": [
                {
                    "kernel": x.kernel,
                    "grid": list(x.grid),
                    "block": list(x.block),
                    "buffers": [list(b) for b in x.buffers],
                }
                for x in self.launches
            ],
        }

    @classmethod
    def from_json(cls, data: dict) -> LaunchPlan:
        return cls(
            int(data["n_args"]),
            tuple(int(t) for t in data["temps"]),
            tuple(
                Launch(
                    str(x["kernel"]),
                    tuple(x["grid"]),  # type: ignore[arg-type]
                    tuple(x["block"]),  # type: ignore[arg-type]
                    tuple((str(k), int(i)) for k, i in x["buffers"]),
                )
                for x in data["launches"]
            ),
        )


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
    launches: list[Launch] = []
    for op in fn.body.block.ops:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            consts[op.result] = op.value.value.data
        elif isinstance(op, memref.AllocOp | memref.AllocaOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            if not t.has_static_shape():
                raise LoweringError(op, "a GPU kernel's temporary must have a static shape")
            count = 1
            for d in t.get_shape():
                count *= d
            buffers[op.memref] = ("temp", len(temps))
            temps.append(max(count * byte_size(t.element_type), 1))
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
            refs = []
            for v in op.kernelOperands:
                if v not in buffers:
                    raise LoweringError(op, f"gpu.launch_func passes {v.type}, not a buffer")
                refs.append(buffers[v])
            kernel = op.kernel.nested_references.data[-1].data
            launches.append(Launch(kernel, tuple(sizes[:3]), tuple(sizes[3:]), tuple(refs)))  # type: ignore[arg-type]
        elif isinstance(op, memref.DeallocOp | func.ReturnOp):
            continue
        else:
            raise LoweringError(
                op,
                f"{op.name} in the host part of a GPU kernel (only allocations and launches "
                "can run there)",
            )
    return LaunchPlan(len(fn.body.block.args), tuple(temps), tuple(launches))


def encode_blob(plan: LaunchPlan, ptx: str, arch: str) -> bytes:
    """One kernel's device artifact: the plan and its PTX (JSON)."""
    return json.dumps(
        {"format": "nnvm-cuda/1", "arch": arch, "plan": plan.to_json(), "ptx": ptx}
    ).encode()


def decode_blob(blob: bytes) -> tuple[LaunchPlan, str, str]:
    """(plan, PTX, arch) of a blob from encode_blob."""
    try:
        data = json.loads(blob.decode())
        if data.get("format") != "nnvm-cuda/1":
            raise ValueError(data.get("format"))
        return LaunchPlan.from_json(data["plan"]), str(data["ptx"]), str(data["arch"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        raise UserError(f"not a CUDA kernel blob of this nnvm ({err})") from None


__all__ = ["Launch", "LaunchPlan", "decode_blob", "encode_blob", "launch_plan"]
