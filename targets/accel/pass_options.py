"""What the accel passes share: the configuration they plan for and the virtual threads whose
buffer slots a tile must fit (the target sets both from its own options)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from nnvm.targets.accel.config import AccelConfig, config_at


@dataclass(frozen=True)
class AccelPass(ModulePass):
    config: str = ""
    """Path of an accel config JSON ('': VTA's PYNQ configuration)."""
    virtual_threads: int = 2
    """1 or 2: each buffer is split into this many slots."""

    def accel_config(self) -> AccelConfig:
        return config_at(self.config)
