"""An offloaded layer as the library carries it: the 128-bit instruction stream and the 32-bit
micro-ops the hardware would fetch, behind a JSON header with what the host needs to pack the
operands (the accelerator configuration, the layer's geometry, tiling and DRAM image layout).

    b"NNVMACC1" | u32 header bytes | header JSON | instructions (16 B each) | micro-ops (4 B each)

The header's layout is checked against the one recomputed from the geometry, so a damaged or
foreign blob is a UserError, never a wrong answer."""

from __future__ import annotations

import json
import struct
from dataclasses import asdict

from nnvm.support.errors import UserError
from nnvm.targets.accel.config import AccelConfig, config_from_dict
from nnvm.targets.accel.conv2d_program import LayerPlan, recorded_regions
from nnvm.targets.accel.isa import decode_insns, decode_uops, encode_insns, encode_uops
from nnvm.targets.accel.tiling import Conv2dLayer, Tiling

MAGIC = b"NNVMACC1"
VERSION = 1


def config_dict(cfg: AccelConfig) -> dict:
    """The config as its JSON keys (config.py's `to_json`)."""
    return json.loads(cfg.to_json())


def encode_plan(plan: LayerPlan, inputs: int) -> bytes:
    """The blob of a layer whose kernel takes `inputs` operands (5 with a bias, else 4)."""
    t = plan.tiling
    header = {
        "inputs": inputs,
        "version": VERSION,
        "config": config_dict(plan.cfg),
        "layer": asdict(plan.layer),
        "tiling": None if t is None else asdict(t),
        "virtual_threads": plan.virtual_threads,
        "dram": plan.dram_layout,
        "insns": len(plan.insns),
        "uops": len(plan.uops),
    }
    text = json.dumps(header, sort_keys=True).encode()
    return b"".join(
        [
            MAGIC,
            struct.pack("<I", len(text)),
            text,
            encode_insns(plan.insns).tobytes(),
            encode_uops(plan.uops).tobytes(),
        ]
    )


def decode_plan(blob: bytes, name: str = "kernel") -> tuple[LayerPlan, int]:
    """The plan a blob holds and how many inputs its kernel takes; UserError naming `name` for
    anything that does not fit."""

    def bad(why: str) -> UserError:
        return UserError(f"accel kernel {name}: {why}")

    if blob[: len(MAGIC)] != MAGIC or len(blob) < len(MAGIC) + 4:
        raise bad("not an accel kernel (bad magic)")
    (size,) = struct.unpack_from("<I", blob, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        header = json.loads(blob[start : start + size])
        if header["version"] != VERSION:
            raise bad(f"format version {header['version']}, this nnvm reads {VERSION}")
        cfg = config_from_dict(header["config"], f"{name} header")
        layer = Conv2dLayer(**header["layer"])
        tiling = None if header["tiling"] is None else Tiling(**header["tiling"])
        n_insns, n_uops = int(header["insns"]), int(header["uops"])
        vt = int(header["virtual_threads"])
        dram = [int(v) for v in header["dram"]]
        inputs = int(header["inputs"])
        if inputs not in (4, 5):
            raise bad(f"{inputs} inputs (a layer takes 4 or 5)")
    except (ValueError, KeyError, TypeError) as err:
        raise bad(f"bad header ({err})") from None
    body = start + size
    if len(blob) != body + 16 * n_insns + 4 * n_uops:
        raise bad(f"{len(blob)} bytes, the header promises {body + 16 * n_insns + 4 * n_uops}")
    insns = decode_insns(blob[body : body + 16 * n_insns])
    uops = decode_uops(blob[body + 16 * n_insns :])
    try:
        regions, total = recorded_regions(cfg, layer, n_uops, dram)
    except UserError as err:
        raise bad(err.message) from None
    return LayerPlan(cfg, layer, tiling, vt, insns, uops, regions, total), inputs
