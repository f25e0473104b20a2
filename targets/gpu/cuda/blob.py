"""A CUDA kernel's blob: the GPU family's launch plan (targets/gpu/launch_plan.py), the PTX, the
architecture it was built for and, for `cuda -emulate`, the LLVM IR the PTX came from (JSON)."""

from __future__ import annotations

import json

from nnvm.support.errors import UserError
from nnvm.targets.gpu.launch_plan import LaunchPlan

FORMAT = "nnvm-cuda/1"


def encode_blob(plan: LaunchPlan, ptx: str, arch: str, llvm_ir: str | None = None) -> bytes:
    data = {"format": FORMAT, "arch": arch, "code": ptx, "plan": plan.to_json()}
    if llvm_ir is not None:
        data["llvm_ir"] = llvm_ir
    return json.dumps(data).encode()


def decode_blob(blob: bytes) -> tuple[LaunchPlan, str, str, str | None]:
    """(plan, PTX, arch, LLVM IR or None) of a blob from encode_blob."""
    try:
        data = json.loads(blob.decode())
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
        plan = LaunchPlan.from_json(data["plan"])
        return plan, str(data["code"]), str(data["arch"]), data.get("llvm_ir")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise UserError(f"not a CUDA kernel blob of this nnvm ({err})") from None


__all__ = ["decode_blob", "encode_blob"]
