"""A GPU kernel's launch plan: what its host function (after lower-te-to-gpu) does, as data a
device runtime replays: temporaries to allocate, constants to upload, kernels to launch (grid,
block, which buffers) and buffer copies. It travels as JSON beside the device code."""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, gpu, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import SSAValue

from nnvm.dialects.nnvm.dtypes import numpy_dtype_of
from nnvm.support.errors import UserError

Ref = tuple[str, int]
"""('arg', k): the k-th kernel argument (inputs, then outputs); ('temp', k); ('const', k)."""


@dataclass
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[Ref]


@dataclass
class Copy:
    src: Ref
    dst: Ref
    nbytes: int


@dataclass
class LaunchPlan:
    """The host side of one fused kernel on a GPU."""

    n_args: int
    temps: list[int] = field(default_factory=list)
    """Bytes of each temporary buffer (live for one run of the plan)."""
    consts: list[bytes] = field(default_factory=list)
    """Contents of each constant buffer (uploaded once per device)."""
    steps: list[Launch | Copy] = field(default_factory=list)

    def to_json(self) -> dict:
        steps = []
        for s in self.steps:
            if isinstance(s, Launch):
                steps.append({"launch": s.kernel, "grid": s.grid, "block": s.block, "args": s.args})
            else:
                steps.append({"copy": [s.src, s.dst], "bytes": s.nbytes})
        return {
            "n_args": self.n_args,
            "temps": self.temps,
            "consts": [base64.b64encode(c).decode() for c in self.consts],
            "steps": steps,
        }

    @staticmethod
    def from_json(d: dict) -> LaunchPlan:
        plan = LaunchPlan(d["n_args"], list(d["temps"]))
        plan.consts = [base64.b64decode(c) for c in d["consts"]]
        for s in d["steps"]:
            if "launch" in s:
                args = [(k, int(i)) for k, i in s["args"]]
                plan.steps.append(Launch(s["launch"], tuple(s["grid"]), tuple(s["block"]), args))
            else:
                (a, i), (b, j) = s["copy"]
                plan.steps.append(Copy((a, int(i)), (b, int(j)), int(s["bytes"])))
        return plan


def nbytes_of(t: MemRefType) -> int:
    return math.prod(t.get_shape()) * np.dtype(numpy_dtype_of(t.element_type)).itemsize


def _static(v: SSAValue, what: str) -> int:
    owner = v.owner
    if not isinstance(owner, arith.ConstantOp):
        raise UserError(f"a GPU launch's {what} is not a constant")
    return int(owner.value.value.data)  # type: ignore[attr-defined]


def launch_plan(module: ModuleOp, name: str) -> LaunchPlan:
    """The plan of the host function `name` of a module lowered by lower-te-to-gpu."""
    fn = next(
        (o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == name), None
    )
    if fn is None:
        raise UserError(f"no host function {name} in the lowered GPU kernel")
    globals_ = {o.sym_name.data: o for o in module.ops if isinstance(o, memref.GlobalOp)}
    block = fn.body.block
    refs: dict[SSAValue, Ref] = {a: ("arg", k) for k, a in enumerate(block.args)}
    plan = LaunchPlan(len(block.args))
    for op in block.ops:
        if isinstance(op, arith.ConstantOp | memref.DeallocOp | func.ReturnOp):
            continue
        if isinstance(op, memref.AllocOp):
            refs[op.memref] = ("temp", len(plan.temps))
            plan.temps.append(nbytes_of(op.memref.type))  # type: ignore[arg-type]
        elif isinstance(op, memref.GetGlobalOp):
            glob = globals_[op.name_.root_reference.data]
            t = glob.type
            assert isinstance(t, MemRefType)
            values = glob.initial_value.get_values()  # type: ignore[union-attr]
            data = np.asarray(values, dtype=numpy_dtype_of(t.element_type))
            refs[op.memref] = ("const", len(plan.consts))
            plan.consts.append(data.tobytes())
        elif isinstance(op, gpu.LaunchFuncOp):
            grid = tuple(
                _static(v, "grid size") for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ)
            )
            blk = tuple(
                _static(v, "block size") for v in (op.blockSizeX, op.blockSizeY, op.blockSizeZ)
            )
            args = []
            for v in op.kernelOperands:
                if v not in refs:
                    raise UserError(f"GPU kernel {name} launches with a buffer of no known origin")
                args.append(refs[v])
            kernel = op.kernel.nested_references.data[-1].data
            plan.steps.append(Launch(kernel, grid, blk, args))  # type: ignore[arg-type]
        elif isinstance(op, memref.CopyOp):
            src, dst = refs.get(op.source), refs.get(op.destination)
            if src is None or dst is None:
                raise UserError(f"GPU kernel {name} copies a buffer of no known origin")
            plan.steps.append(Copy(src, dst, nbytes_of(op.source.type)))  # type: ignore[arg-type]
        else:
            raise UserError(
                f"GPU kernel {name}: its host function runs {op.name}, which a device cannot "
                "(only allocations, copies and kernel launches)"
            )
    return plan


def plan_blob(code: str, plan: LaunchPlan) -> bytes:
    """A device blob: the device code and the plan, as one JSON document."""
    return json.dumps({"code": code, "plan": plan.to_json()}).encode()


def read_blob(blob: bytes) -> tuple[str, LaunchPlan]:
    try:
        d = json.loads(blob)
        return d["code"], LaunchPlan.from_json(d["plan"])
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"a GPU kernel blob that is not a launch plan: {err}") from None
