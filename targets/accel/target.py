"""`target="accel"`: the VTA-like accelerator as a device target of build().

    build(q_module, params=q_params, devices=["accel"])                  VTA's PYNQ config
    build(..., devices=["accel -config=my_accel.json -virtual-threads=1"])

The device adds accel-partition to the graph pipeline (first, while nnvm.quantize's chains are
whole), so each int8 conv2d / dense it can run becomes one accel op and one kernel; it accepts
exactly those kernels (everything else, the first conv that nnvm.quantize keeps in float
included, runs on the host), lowers them with accel-lower-layers, ships each program as a kernel
blob (kernel_blob.py) and runs it on the simulator (runtime.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

from nnvm.support.errors import UserError
from nnvm.support.target import Capabilities, DeviceRuntime, Target
from nnvm.targets.accel.config import AccelConfig, config_at

SCOPES = ("global", "inp", "wgt", "acc", "out")
OPTIONS = ("config", "config-sha", "virtual-threads")
"""The target string's options (-config-sha is what a library records beside -config)."""


@dataclass(frozen=True)
class AccelTarget(Target):
    kind: ClassVar[str] = "accel"
    kernel_format: ClassVar[str] = "accel-program"
    has_cycle_model: ClassVar[bool] = True

    config: str = ""
    """Path of the accel config JSON ('' : VTA's PYNQ configuration)."""
    config_sha: str = ""
    """The config file's digest (first 16 hex digits of its SHA-256), in the description so a
    changed file never reuses kernels built for the old one."""
    virtual_threads: int = 2

    @classmethod
    def parse(cls, spec: str, options: list[str]) -> AccelTarget:
        found: dict[str, str] = {}
        for word in options:
            key, eq, value = word.lstrip("-").partition("=")
            if not word.startswith("-") or not eq or key not in OPTIONS:
                raise UserError(
                    f"unknown accel target option {word!r} in {spec!r} (known: -config=PATH, "
                    "-virtual-threads=1|2)"
                )
            found[key] = value
        vt = found.get("virtual-threads", "2")
        if vt not in ("1", "2"):
            raise UserError(f"-virtual-threads is 1 or 2, got {vt!r} in {spec!r}")
        path = found.get("config", "")
        sha = config_digest(path) if path else ""
        if "config-sha" in found and found["config-sha"] != sha:
            raise UserError(
                f"accel config {path or '<default>'} changed since the library was built "
                f"(digest {sha or 'none'}, built with {found['config-sha']})"
            )
        return cls(config=path, config_sha=sha, virtual_threads=int(vt))

    def accel_config(self) -> AccelConfig:
        return config_at(self.config)

    def configured_schedule(self, fn: Any, config: Any) -> Any:
        """A layer kernel's schedule for the tiling and virtual threads `config` picks."""
        from nnvm.dialects.te.schedule import ScheduleOp
        from nnvm.targets.accel.te_layer import (
            is_padded,
            layer_of_kernel,
            layer_schedule,
            tiling_knobs,
        )

        layer = layer_of_kernel(fn)
        if layer is None:
            return None
        tiling, vt = tiling_knobs(self.accel_config(), layer, config, self.virtual_threads)
        return ScheduleOp(layer_schedule(tiling, vt, is_padded(layer)))

    def tuning_passes(self, log_path: str) -> list[Any]:
        from nnvm.targets.accel.tuned_layers import AccelApplyTuningLog

        return [AccelApplyTuningLog(log=str(log_path), **self._options())]

    def te_kernel(self, fn: Any) -> Any:
        """The te kernel of an accepted kernel (one accel.conv2d / accel.dense)."""
        from nnvm.targets.accel.graph_ops import Conv2dOp, DenseOp, layer_of
        from nnvm.targets.accel.te_layer import layer_kernel

        if self.accepts(fn) is not None:
            return None
        op = next(o for o in fn.body.block.ops if isinstance(o, Conv2dOp | DenseOp))
        layer = layer_of(op)
        return None if isinstance(layer, str) else layer_kernel(self.accel_config(), layer)

    def simulate_kernel(self, fn: Any, check: bool) -> tuple[float, str, str]:
        from nnvm.targets.accel.simulated_kernels import simulate_layer_kernel

        return simulate_layer_kernel(self.accel_config(), fn, check)

    def default_schedule(self, fn: Any, **knobs: Any) -> Any:
        from nnvm.support.config_space import ConfigSpace

        return self.configured_schedule(fn, ConfigSpace())

    def tensor_intrinsics(self) -> dict[str, Any]:
        from nnvm.targets.accel.te_layer import gemm_intrinsic

        return {"gemm": gemm_intrinsic(self.accel_config())}

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities("accel", tensorize=True, memory_scopes=SCOPES)

    @property
    def description(self) -> str:
        text = f"accel -virtual-threads={self.virtual_threads}"
        if self.config:
            text += f" -config={self.config} -config-sha={self.config_sha}"
        return text

    def _options(self) -> dict[str, Any]:
        return {"config": self.config, "virtual_threads": self.virtual_threads}

    def graph_passes(self) -> dict[str, list[Any]]:
        from nnvm.targets.accel.partition import AccelPartition

        return {"start": [AccelPartition(**self._options())]}

    def accepts(self, fn: Any) -> str | None:
        """A kernel of one accel op (what accel-partition made) and nothing else."""
        from nnvm.targets.accel.graph_ops import Conv2dOp, DenseOp

        if fn.is_declaration:
            return "a declaration"
        ops = [op for op in fn.body.block.ops if op.name != "func.return"]
        if len(ops) == 1 and isinstance(ops[0], Conv2dOp | DenseOp):
            return None
        return "the kernel is not one accel layer (accel-partition makes those)"

    def kernel_passes(self) -> list[Any]:
        from nnvm.targets.accel.lower_layers import AccelLowerLayers

        return [AccelLowerLayers(**self._options())]

    def emit_kernel(self, module: Any, name: str) -> bytes:
        from nnvm.targets.accel.dialect import LayerOp
        from nnvm.targets.accel.kernel_blob import encode_plan
        from nnvm.targets.accel.lower_layers import plan_of

        layers = [op for op in module.walk() if isinstance(op, LayerOp)]
        if len(layers) != 1:
            raise UserError(f"accel kernel {name}: expected one accel.layer, found {len(layers)}")
        return encode_plan(plan_of(layers[0], self.accel_config()), len(layers[0].args))

    def runtime(self, lib: Any) -> DeviceRuntime:
        from nnvm.targets.accel.runtime import AccelRuntime

        return AccelRuntime(lib)


def config_digest(path: str) -> str:
    try:
        data = open(path, "rb").read()
    except OSError as err:
        raise UserError(f"cannot read accel config {path}: {err.strerror}") from None
    return hashlib.sha256(data).hexdigest()[:16]
