"""The accelerator's configuration: GEMM-core shape, data widths, on-chip buffer sizes and the
DMA/clock figures the cycle model uses. The default is VTA's PYNQ configuration (1x16x16 int8
core, 64-bit AXI at 100 MHz); `load_config(path)` reads the same keys from a JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nnvm.support.errors import UserError

_KEYS: dict[str, str] = {
    "BATCH": "batch",
    "BLOCK_IN": "block_in",
    "BLOCK_OUT": "block_out",
    "INP_WIDTH": "inp_width",
    "WGT_WIDTH": "wgt_width",
    "ACC_WIDTH": "acc_width",
    "OUT_WIDTH": "out_width",
    "UOP_BUFF_BYTES": "uop_buff_bytes",
    "INP_BUFF_BYTES": "inp_buff_bytes",
    "WGT_BUFF_BYTES": "wgt_buff_bytes",
    "ACC_BUFF_BYTES": "acc_buff_bytes",
    "OUT_BUFF_BYTES": "out_buff_bytes",
    "DMA_BYTES_PER_CYCLE": "dma_bytes_per_cycle",
    "DMA_ROW_LATENCY": "dma_row_latency",
    "SHARED_DMA": "shared_dma",
    "CMD_QUEUE_DEPTH": "cmd_queue_depth",
    "CLOCK_MHZ": "clock_mhz",
}
"""JSON key -> field. Widths are in bits, buffers in bytes, latency in cycles; SHARED_DMA 1 makes
the load, compute and store DMAs take turns on one DRAM port (0: each has its own)."""

_WIDTHS = {"INP_WIDTH": 8, "WGT_WIDTH": 8, "ACC_WIDTH": 32, "OUT_WIDTH": 8}
"""The data widths the simulator implements (int8 operands, int32 accumulators)."""


@dataclass(frozen=True)
class AccelConfig:
    """One accelerator instance. Buffers hold whole entries: an inp entry is one BATCH x BLOCK_IN
    block, wgt BLOCK_OUT x BLOCK_IN, acc and out BATCH x BLOCK_OUT, uop one 32-bit micro-op."""

    batch: int = 1
    block_in: int = 16
    block_out: int = 16
    inp_width: int = 8
    wgt_width: int = 8
    acc_width: int = 32
    out_width: int = 8
    uop_buff_bytes: int = 32 * 1024
    inp_buff_bytes: int = 32 * 1024
    wgt_buff_bytes: int = 256 * 1024
    acc_buff_bytes: int = 128 * 1024
    out_buff_bytes: int = 32 * 1024
    dma_bytes_per_cycle: int = 8
    dma_row_latency: int = 16
    shared_dma: int = 0
    cmd_queue_depth: int = 512
    clock_mhz: int = 100
    source: str = "<default>"
    """Where the configuration came from (errors name it)."""

    def __post_init__(self) -> None:
        validate(self)

    # -- entry sizes and depths ------------------------------------------------------------

    def entry_bytes(self, buffer: str) -> int:
        """Bytes of one entry of `buffer` ('uop', 'inp', 'wgt', 'acc', 'out')."""
        return {
            "uop": 4,
            "inp": self.batch * self.block_in * self.inp_width // 8,
            "wgt": self.block_out * self.block_in * self.wgt_width // 8,
            "acc": self.batch * self.block_out * self.acc_width // 8,
            "out": self.batch * self.block_out * self.out_width // 8,
        }[buffer]

    def depth(self, buffer: str) -> int:
        """Entries `buffer` holds."""
        return getattr(self, f"{buffer}_buff_bytes") // self.entry_bytes(buffer)

    def to_json(self) -> str:
        return json.dumps({k: getattr(self, f) for k, f in _KEYS.items()}, indent=2) + "\n"


def validate(cfg: AccelConfig) -> None:
    """Raise UserError naming the key and the source for a value the hardware cannot have."""
    where = cfg.source

    def bad(key: str, why: str) -> UserError:
        return UserError(f"{where}: accel config key {key}: {why}")

    for key, name in _KEYS.items():
        value = getattr(cfg, name)
        if type(value) is not int:
            raise bad(key, f"expected an integer, got {type(value).__name__} {value!r}")
        if key == "SHARED_DMA":
            if value not in (0, 1):
                raise bad(key, f"is 0 or 1, got {value}")
        elif value <= 0:
            raise bad(key, f"must be positive, got {value}")
    for key in ("BATCH", "BLOCK_IN", "BLOCK_OUT"):
        value = getattr(cfg, _KEYS[key])
        if value & (value - 1):
            raise bad(key, f"must be a power of two, got {value}")
    for key, width in _WIDTHS.items():
        if getattr(cfg, _KEYS[key]) != width:
            raise bad(
                key,
                f"the simulator implements {width}-bit values only, got {getattr(cfg, _KEYS[key])}",
            )
    for buf in ("uop", "inp", "wgt", "acc", "out"):
        key = f"{buf.upper()}_BUFF_BYTES"
        size, entry = getattr(cfg, f"{buf}_buff_bytes"), cfg.entry_bytes(buf)
        if size < entry:
            raise bad(key, f"{size} bytes is smaller than one {buf} entry ({entry} bytes)")
        if size % entry:
            raise bad(key, f"{size} bytes is not a whole number of {entry}-byte {buf} entries")
    if cfg.depth("out") != cfg.depth("acc"):
        raise bad(
            "OUT_BUFF_BYTES",
            f"the out buffer mirrors the acc buffer entry for entry: {cfg.depth('out')} out "
            f"entries ({cfg.out_buff_bytes} bytes) but {cfg.depth('acc')} acc entries "
            f"({cfg.acc_buff_bytes} bytes)",
        )


def config_from_dict(data: Any, source: str = "<dict>") -> AccelConfig:
    """An AccelConfig from JSON-style keys; missing keys keep the default."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: an accel config is a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise UserError(
            f"{source}: unknown accel config key {unknown[0]!r}; known keys: {', '.join(_KEYS)}"
        )
    kwargs = {_KEYS[k]: v for k, v in data.items()}
    return AccelConfig(**kwargs, source=source)


def load_config(path: str | Path) -> AccelConfig:
    """Read and validate a JSON configuration file."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise UserError(f"cannot read accel config {path}: {err.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{path}:{err.lineno}:{err.colno}: bad JSON: {err.msg}") from None
    return config_from_dict(data, str(path))


DEFAULT_CONFIG = AccelConfig()


def config_at(path: str) -> AccelConfig:
    """The configuration in the JSON file at `path`; '' is the default (VTA's PYNQ)."""
    return load_config(path) if path else DEFAULT_CONFIG
