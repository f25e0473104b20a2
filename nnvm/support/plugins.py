"""Plugins: dialects, passes, targets and ONNX converters from installed packages (entry points
`xdsl.universe` and `nnvm.plugins`) or from modules named on the command line. A name defined
twice, or a plugin for another API version, is a UserError naming both sources."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from nnvm.support.errors import UserError

PassFactory = Callable[[], type[ModulePass]]
DialectFactory = Callable[[], Dialect]
TargetFactory = Callable[[], type]
ConverterFactory = Callable[[], Callable[..., Any]]

PLUGIN_API_VERSION = 1
"""Bumped when Plugin, Target or DeviceRuntime change incompatibly."""

PLUGIN_GROUP = "nnvm.plugins"
STAGES = ("loops", "ops")
"""The convert-to-llvm stages a plugin's LLVM conversion may join."""
UNIVERSE_GROUP = "xdsl.universe"


def lazy_pass(module: str, cls: str, package: str | None = None) -> PassFactory:
    """A factory that imports `module` (relative to `package` when it starts with a dot) and
    returns its pass class `cls` only when asked."""

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module, package), cls)

    return load


def lazy_attr(module: str, attr: str) -> Callable[[], Any]:
    """A factory for any attribute (a dialect, a target class, a converter) of a module."""

    def load() -> Any:
        return getattr(importlib.import_module(module), attr)

    return load


@dataclass
class Plugin:
    """What an nnvm plugin contributes; publish one under the `nnvm.plugins` entry-point group
    (dialects and passes may instead come from an xDSL `Universe` under `xdsl.universe`)."""

    api_version: int
    dialects: dict[str, DialectFactory] = field(default_factory=dict)
    passes: dict[str, PassFactory] = field(default_factory=dict)
    targets: dict[str, TargetFactory] = field(default_factory=dict)
    onnx_converters: dict[str, ConverterFactory] = field(default_factory=dict)
    """ONNX op type -> factory of a converter `fn(builder, node, inputs) -> list[SSAValue]`."""
    llvm_conversions: dict[str, str] = field(default_factory=dict)
    """Pass name -> the convert-to-llvm stage it joins: 'loops' (after affine -> scf, before
    scf -> cf: e.g. parallel loops to a thread runtime) or 'ops' (beside the dialect
    conversions), as MLIR dialects register ConvertToLLVM patterns."""


@dataclass
class Registry:
    """Every name a tool may use, each with the source that defined it."""

    dialects: dict[str, tuple[DialectFactory, str]] = field(default_factory=dict)
    passes: dict[str, tuple[PassFactory, str]] = field(default_factory=dict)
    targets: dict[str, tuple[TargetFactory, str]] = field(default_factory=dict)
    onnx_converters: dict[str, tuple[ConverterFactory, str]] = field(default_factory=dict)
    llvm_conversions: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add(self, contribution: Any, source: str) -> None:
        """Merge a Plugin or an xDSL Universe; clashes name both sources."""
        if isinstance(contribution, Plugin):
            bad = {k: v for k, v in contribution.llvm_conversions.items() if v not in STAGES}
            if bad:
                raise UserError(f"plugin {source}: LLVM conversion stages {bad} not in {STAGES}")
        from xdsl.universe import Universe

        if isinstance(contribution, Universe):
            parts = {"dialect": contribution.all_dialects, "pass": contribution.all_passes}
        elif isinstance(contribution, Plugin):
            if contribution.api_version != PLUGIN_API_VERSION:
                raise UserError(
                    f"plugin {source} was written for nnvm plugin API version "
                    f"{contribution.api_version}; this nnvm speaks version {PLUGIN_API_VERSION}"
                )
            parts = {
                "dialect": contribution.dialects,
                "pass": contribution.passes,
                "target": contribution.targets,
                "ONNX converter": contribution.onnx_converters,
                "LLVM conversion": contribution.llvm_conversions,
            }
        else:
            raise UserError(
                f"plugin {source} is a {type(contribution).__name__}, not an nnvm Plugin or an "
                "xDSL Universe"
            )
        tables = {
            "dialect": self.dialects,
            "pass": self.passes,
            "target": self.targets,
            "ONNX converter": self.onnx_converters,
            "LLVM conversion": self.llvm_conversions,
        }
        for what, items in parts.items():
            table = tables[what]
            for name, factory in items.items():
                if name in table and table[name][1] != source:
                    raise UserError(
                        f"{what} '{name}' is defined twice: by {table[name][1]} and by {source}"
                    )
                table[name] = (factory, source)


def _entry_point_contributions(group: str) -> list[tuple[Any, str]]:
    found = []
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        source = f"'{ep.name}' ({ep.value}, entry point {group})"
        try:
            found.append((ep.load(), source))
        except Exception as err:  # a broken plugin must not become a traceback
            raise UserError(
                f"plugin {source} failed to import: {type(err).__name__}: {err}"
            ) from None
    return found


_loaded_modules: list[tuple[Any, str]] = []


@cache
def _installed() -> Registry:
    reg = Registry()
    for contribution, source in _entry_point_contributions(UNIVERSE_GROUP):
        reg.add(contribution, source)
    for contribution, source in _entry_point_contributions(PLUGIN_GROUP):
        reg.add(contribution, source)
    if not any(src.startswith("'nnvm'") for _, src in reg.targets.values()):
        # installed without entry points (a copied tree): nnvm's own plugin, found by name
        own = importlib.import_module("nnvm.universe")
        reg.add(own.NNVM_UNIVERSE, "'nnvm' (nnvm.universe, built in)")
        reg.add(own.NNVM_PLUGIN, "'nnvm' (nnvm.universe, built in)")
    return reg


def registry() -> Registry:
    """Installed plugins plus those loaded with `load_plugin_module` (in load order)."""
    base = _installed()
    if not _loaded_modules:
        return base
    reg = Registry(
        dict(base.dialects),
        dict(base.passes),
        dict(base.targets),
        dict(base.onnx_converters),
        dict(base.llvm_conversions),
    )
    for contribution, source in _loaded_modules:
        reg.add(contribution, source)
    return reg


def load_plugin_module(spec: str) -> None:
    """Load a plugin from a module name or a .py path (mlir-opt's --load-pass-plugin): every
    module-level Plugin or Universe in it is registered."""
    from xdsl.universe import Universe

    path = Path(spec)
    try:
        if spec.endswith(".py") or path.exists():
            if not path.is_file():
                raise UserError(f"plugin {spec}: no such file")
            name = f"nnvm_plugin_{abs(hash(str(path.resolve())))}"
            loader_spec = importlib.util.spec_from_file_location(name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise UserError(f"plugin {spec}: not a Python module")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except UserError:
        raise
    except Exception as err:
        raise UserError(f"plugin {spec} failed to import: {type(err).__name__}: {err}") from None
    found = [
        (value, f"'{attr}' (module {spec})")
        for attr, value in vars(module).items()
        if isinstance(value, Plugin | Universe) and not attr.startswith("_")
    ]
    if not found:
        raise UserError(f"plugin {spec} defines no nnvm Plugin or xDSL Universe")
    probe = registry()
    for contribution, source in found:
        probe.add(contribution, source)  # fail now, before anything is registered
        _loaded_modules.append((contribution, source))
